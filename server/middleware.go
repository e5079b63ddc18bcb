package server

import (
	"context"
	"encoding/base32"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"
)

// HeaderRequestID carries the request id on every response. It is written in canonical
// form (textproto.CanonicalMIMEHeaderKey), so that the response header can be set and
// read by it as a map key.
const HeaderRequestID = "X-Request-Id"

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// requestIDMiddleware gives every request an id: the client's X-Request-Id when it is a
// short token, otherwise a new random one. It is echoed in the response header.
func requestIDMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(HeaderRequestID)
		if !validRequestID(id) {
			var b [16]byte
			for i := 0; i < 16; i += 8 {
				v := rand.Uint64()
				for j := 0; j < 8; j++ {
					b[i+j] = byte(v >> (8 * j))
				}
			}
			id = idEncoding.EncodeToString(b[:])
		}
		c.Response().Header()[HeaderRequestID] = []string{id} // Set, the name being canonical already
		return next(c)
	}
}

func validRequestID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

// requestID returns the request's id, as requestIDMiddleware set it on the response:
// Header.Get, without canonicalizing HeaderRequestID, which is canonical already.
func requestID(c echo.Context) string {
	if v := c.Response().Header()[HeaderRequestID]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// recoverMiddleware turns a panic into a 500 with the contract's body; the log keeps
// the panic value and stack.
func recoverMiddleware(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					if r == http.ErrAbortHandler {
						panic(r)
					}
					log.ErrorContext(c.Request().Context(), "panic", "request_id", requestID(c),
						"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return next(c)
		}
	}
}

// logMiddleware writes one structured line per request, with the name of the API key
// that made it as actor (once the key was accepted; never the key itself), and the
// trace id when the request is traced.
func logMiddleware(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err) // write the error response now, so the status below is final
			}
			// The record goes straight to the handler: Logger.LogAttrs would also
			// capture the caller's program counter, which no request line shows.
			ctx, h := c.Request().Context(), log.Handler()
			if !h.Enabled(ctx, slog.LevelInfo) {
				return nil
			}
			res, now := c.Response(), time.Now()
			r := slog.NewRecord(now, slog.LevelInfo, "request", 0)
			r.AddAttrs(
				slog.String("request_id", requestID(c)),
				slog.String("method", c.Request().Method),
				slog.String("path", c.Request().URL.Path),
				slog.Int("status", res.Status),
				slog.Int64("bytes", res.Size),
				slog.Float64("latency_ms", float64(now.Sub(start).Microseconds())/1000),
			)
			if who := owner(ctx); who != "" {
				r.AddAttrs(slog.String("actor", who))
			}
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
				r.AddAttrs(slog.String("trace_id", sc.TraceID().String()))
			}
			_ = h.Handle(ctx, r) // a log line that cannot be written does not fail the request
			return nil
		}
	}
}

type ctxKey int

// echoContextKey holds the request's Echo context on the context that authentication
// gets (see authenticationFunc), which sets what it learned of the key on it.
const echoContextKey ctxKey = iota

// validation runs v's check of the request against the contract before next, with the
// Echo context on the context authentication gets.
func validation(v *httpcheck.Validator) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if err := v.Check(context.WithValue(req.Context(), echoContextKey, c), req); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// bodyLimitMiddleware answers 413 for a body over limit bytes, whether announced by
// Content-Length or found while reading.
func bodyLimitMiddleware(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.ContentLength > limit {
				return newError(http.StatusRequestEntityTooLarge, chargenet.CodePayloadTooLarge, "",
					"request body exceeds the limit of %d bytes", limit)
			}
			if req.Body != nil && req.Body != http.NoBody {
				req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
			}
			return next(c)
		}
	}
}

// applied is the gen.EchoRouter that adds each route to e with mw (and the route's own
// middleware) applied to its handler once, when it is added. Echo applies the
// middleware of a group or a route again for every request, a closure each.
type applied struct {
	e  *echo.Echo
	mw []echo.MiddlewareFunc
}

// apply returns h inside mw, the first outermost.
func apply(h echo.HandlerFunc, mw []echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

func (a applied) add(method, path string, h echo.HandlerFunc, m []echo.MiddlewareFunc) *echo.Route {
	return a.e.Add(method, path, apply(apply(h, m), a.mw))
}

// CONNECT adds a route of method CONNECT.
func (a applied) CONNECT(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodConnect, path, h, m)
}

// DELETE adds a route of method DELETE.
func (a applied) DELETE(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodDelete, path, h, m)
}

// GET adds a route of method GET.
func (a applied) GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodGet, path, h, m)
}

// HEAD adds a route of method HEAD.
func (a applied) HEAD(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodHead, path, h, m)
}

// OPTIONS adds a route of method OPTIONS.
func (a applied) OPTIONS(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodOptions, path, h, m)
}

// PATCH adds a route of method PATCH.
func (a applied) PATCH(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodPatch, path, h, m)
}

// POST adds a route of method POST.
func (a applied) POST(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodPost, path, h, m)
}

// PUT adds a route of method PUT.
func (a applied) PUT(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodPut, path, h, m)
}

// TRACE adds a route of method TRACE.
func (a applied) TRACE(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return a.add(http.MethodTrace, path, h, m)
}
