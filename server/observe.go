package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/health"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// routeKey is an Echo route: the method and the registered path (c.Path()).
type routeKey struct{ method, path string }

// observedOp is what observer.middleware records for one operation.
type observedOp struct {
	name    string // the operationId, or "unknown"
	metrics *metrics.Operation
}

// observer records every request's metrics and span. Its operation table is built once
// from the contract: each request finds its operation by the route Echo matched,
// without asking the contract again.
type observer struct {
	ops     map[routeKey]*observedOp
	unknown *observedOp
	metrics *metrics.Metrics // nil: no metrics
	tracer  trace.Tracer     // nil: no spans
	prop    propagation.TextMapPropagator
}

// newObserver builds the operation table of the contract for m (nil: no metrics) and
// tracer (nil: no spans). The contract is read from openapi.Spec, as written: the copy
// the generated code embeds has its operationIds capitalised.
func newObserver(m *metrics.Metrics, tracer trace.Tracer) (*observer, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		return nil, fmt.Errorf("reading the contract's operations: %w", err)
	}
	o := &observer{ops: map[routeKey]*observedOp{}, metrics: m, tracer: tracer, prop: propagation.TraceContext{},
		unknown: &observedOp{name: metrics.OperationUnknown, metrics: m.Operation(metrics.OperationUnknown)}}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			o.ops[routeKey{method, httpcheck.EchoPath(path)}] = &observedOp{name: op.OperationID, metrics: m.Operation(op.OperationID)}
		}
	}
	return o, nil
}

// add observes the routes of a mount (see Mount), each under its name. It is called
// before the server serves.
func (o *observer) add(routes []*echo.Route) {
	for _, r := range routes {
		o.ops[routeKey{r.Method, r.Path}] = &observedOp{name: r.Name, metrics: o.metrics.Operation(r.Name)}
	}
}

// middleware counts the request under its operation, times it and, when tracing is on,
// runs it in a server span named by its operationId that continues the caller's
// traceparent. It runs outside the log middleware, so the status it sees is the one
// sent.
func (o *observer) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		op := o.ops[routeKey{req.Method, c.Path()}]
		if op == nil {
			op = o.unknown
		}
		start := time.Now()
		op.metrics.Begin()
		var span trace.Span
		if o.tracer != nil {
			name := op.name
			if op == o.unknown {
				name = req.Method + " " + c.Path() // a route template or "/*": bounded
			}
			ctx := o.prop.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
			ctx, span = o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", req.Method),
					attribute.String("http.route", c.Path()), attribute.String("url.path", req.URL.Path)))
			c.SetRequest(req.WithContext(ctx))
		}
		err := next(c)
		status := c.Response().Status
		op.metrics.Done(status, time.Since(start))
		if span != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}
		return err
	}
}

// countRefusals counts the requests that the middleware after it (body limit,
// validation, authentication, rate limit) refuses with one of its own errors, by the
// error's code.
func countRefusals(m *metrics.Metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := next(c)
			if err == nil {
				return nil
			}
			var he *Error
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &he):
				m.Refused(he.Code)
			case errors.As(err, &mbe):
				m.Refused(codeOfStatus[http.StatusRequestEntityTooLarge])
			}
			return err
		}
	}
}

// readyz answers /readyz with the report: 200 when ready, otherwise 503 with the
// contract's error fields beside the checks.
func readyz(c echo.Context, r health.Report) error {
	if r.Ready {
		return c.JSON(http.StatusOK, r)
	}
	return c.JSON(http.StatusServiceUnavailable, struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"requestId,omitempty"`
		health.Report
	}{chargenet.CodeUnavailable, "not ready: failing " + strings.Join(r.Failing(), ", "), requestID(c), r})
}
