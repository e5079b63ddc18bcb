package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoMount is a Mount with two routes under /ocpi: POST /ocpi/echo answers its body,
// GET /ocpi/panic panics. It answers every error as 418 "mounted: <error>".
type echoMount struct{}

func (echoMount) Register(g *echo.Group, bodyLimit echo.MiddlewareFunc) ([]*echo.Route, error) {
	echoBody := g.POST("/echo", func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, string(b))
	}, bodyLimit)
	echoBody.Name = "mounted.echo"
	boom := g.GET("/panic", func(echo.Context) error { panic("boom") })
	boom.Name = "mounted.panic"
	return []*echo.Route{echoBody, boom}, nil
}

func (echoMount) WriteError(c echo.Context, err error) {
	_ = c.String(http.StatusTeapot, "mounted: "+err.Error())
}

// TestMount checks what the server does for a mount: its routes behind the common
// middleware and counted under their names, the body limit it hands over, and every
// error of a request under the prefix (the route's, a panic, a path no route serves)
// answered by the mount, none outside it.
func TestMount(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlitetest.NewFile(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	m := metrics.New()
	e, err := server.New(server.Config{Store: store, Keys: server.NewKeys(store, []string{devKey}),
		Cursors: chargenet.NewCursorCodec([]byte(testSecret)), Metrics: m, BodyLimit: 16, OCPI: echoMount{}})
	require.NoError(t, err)

	for _, c := range []struct {
		name, method, target, body string
		status                     int
		answer                     string // the body, or its start ending in "..."
		operation                  string
	}{
		{"a route", http.MethodPost, "/ocpi/echo", "hello", http.StatusOK, "hello", "mounted.echo"},
		{"over the body limit", http.MethodPost, "/ocpi/echo", strings.Repeat("x", 17), http.StatusTeapot,
			"mounted: request body exceeds the limit of 16 bytes", "mounted.echo"},
		{"a panic", http.MethodGet, "/ocpi/panic", "", http.StatusTeapot, "mounted: panic: boom", "mounted.panic"},
		{"no route under the prefix", http.MethodGet, "/ocpi/nothing", "", http.StatusTeapot,
			"mounted: no operation at GET /ocpi/nothing", metrics.OperationUnknown},
		{"the prefix itself", http.MethodGet, "/ocpi", "", http.StatusTeapot, "mounted: no operation at GET /ocpi",
			metrics.OperationUnknown},
		{"outside the prefix", http.MethodGet, "/ocpix", "", http.StatusNotFound, `{"code":"not_found",...`, metrics.OperationUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			series := []string{"operation", c.operation, "code", strconv.Itoa(c.status)}
			before := count(t, m, "chargenet_http_requests_total", series...)
			req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			assert.Equal(t, c.status, rec.Code)
			if start, ok := strings.CutSuffix(c.answer, "..."); ok {
				assert.True(t, strings.HasPrefix(rec.Body.String(), start), "%s", rec.Body.String())
			} else {
				assert.Equal(t, c.answer, rec.Body.String())
			}
			assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"), "the common middleware ran")
			assert.NotEmpty(t, rec.Header().Get(server.HeaderRequestID))
			assert.Equal(t, before+1, count(t, m, "chargenet_http_requests_total", series...))
		})
	}
}
