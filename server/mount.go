package server

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"
)

// ocpiPrefix is where Config.OCPI is mounted.
const ocpiPrefix = "/ocpi"

// Mount is an interface with routes, middleware and error answers of its own that the
// server serves under a path prefix beside the contract's operations: OCPI (package
// ocpi) under /ocpi. The server's common middleware runs around every request under
// the prefix (metrics and spans, request ids, the request log, recovery,
// Cache-Control); paths under it that no route serves get the server's 404, which the
// mount answers too.
type Mount interface {
	// Register adds the mount's routes to g, the group of the prefix, each with
	// bodyLimit (the server's) before anything that reads the body. It returns the
	// routes, each named (Route.Name) by its operation, under which metrics and spans
	// count it. An error means the mount cannot be served.
	Register(g *echo.Group, bodyLimit echo.MiddlewareFunc) ([]*echo.Route, error)
	// WriteError answers err, which a route, the server's middleware or its router
	// returned for a request under the prefix, in the mount's own body.
	WriteError(c echo.Context, err error)
}

// mount serves m under prefix on e: its routes, each observed under its name by o (nil:
// not observed), and its answers to the errors of every request under prefix.
func mount(e *echo.Echo, prefix string, m Mount, bodyLimit echo.MiddlewareFunc, o *observer) error {
	routes, err := m.Register(e.Group(prefix), bodyLimit)
	if err != nil {
		return fmt.Errorf("mounting %s: %w", prefix, err)
	}
	if o != nil {
		o.add(routes)
	}
	rest := e.HTTPErrorHandler
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if p := c.Request().URL.Path; c.Response().Committed || p != prefix && !strings.HasPrefix(p, prefix+"/") {
			rest(err, c)
			return
		}
		m.WriteError(c, err)
	}
	return nil
}
