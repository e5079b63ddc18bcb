package outbox

import (
	"context"

	"github.com/chargenet/chargenet"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// headerTraceParent is the W3C Trace Context header a delivery carries.
const headerTraceParent = "traceparent"

// startSpan starts the client span of an attempt of dl, a child of the change that
// caused its event when the event was traced, a new trace otherwise.
func (d *Dispatcher) startSpan(ctx context.Context, dl *chargenet.Delivery) (context.Context, trace.Span) {
	if dl.Event.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{headerTraceParent: dl.Event.TraceParent})
	}
	return d.cfg.Tracer.Start(ctx, "webhook.attempt", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("chargenet.webhook.id", dl.Webhook.ID),
			attribute.String("chargenet.event.id", dl.Event.ID), attribute.String("chargenet.event.type", dl.Event.Type),
			attribute.Int("chargenet.webhook.attempt", dl.Attempt)))
}

// endSpan records the attempt's outcome on its span and ends it.
func endSpan(span trace.Span, a *chargenet.DeliveryAttempt) {
	span.SetAttributes(attribute.String("chargenet.webhook.outcome", a.Outcome))
	if a.HTTPStatus != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", a.HTTPStatus))
	}
	if a.Outcome != chargenet.OutcomeSucceeded {
		span.SetStatus(codes.Error, a.Error)
	}
	span.End()
}
