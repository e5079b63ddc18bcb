// Command ceiling is the benchmark's upper bound: a bare Echo server that answers the
// API's routes with bytes captured from the real service, doing no authentication,
// validation or storage. A PATCH reads and discards its body and answers the captured
// EVSE.
//
//	ceiling ADDR DIR
//
// DIR holds the captured bodies: event_types.json, locations.json (first page),
// locations_deep.json (the page for any cursor) and evse.json.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/labstack/echo/v4"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ceiling ADDR DIR")
		os.Exit(2)
	}
	body := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(os.Args[2], name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "ceiling:", err)
			os.Exit(1)
		}
		return b
	}
	eventTypes, first, deep, evse := body("event_types.json"), body("locations.json"), body("locations_deep.json"), body("evse.json")
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/emsp/v1/webhooks/event_types", func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, eventTypes)
	})
	e.GET("/v1/locations", func(c echo.Context) error {
		if c.QueryParam("cursor") != "" {
			return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, deep)
		}
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, first)
	})
	e.GET("/v2/evses/:uid", func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, evse)
	})
	e.PATCH("/v2/evses/:uid/connectors/:id", func(c echo.Context) error {
		if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
			return err
		}
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, evse)
	})
	if err := e.Start(os.Args[1]); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
}
