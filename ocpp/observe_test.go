package ocpp_test

import (
	"context"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/ocpp"
	"github.com/chargenet/chargenet/tracing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestStatusNotificationObserved wires the application path as chargenet serve does with
// metrics and tracing on: a box's status notification is counted as the HTTP
// ingestion's are, and traced as an HTTP request is: a span of its own, its store call
// below it, its event in the same trace.
func TestStatusNotificationObserved(t *testing.T) {
	m := metrics.New()
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	e := start(t, func(c *ocpp.Config) {
		in, err := intake.New(intake.Config{Store: tracing.Store(c.Store.(chargenet.Store), tracer, "sqlite"), Metrics: m, Tracer: tracer})
		require.NoError(t, err)
		c.Intake = in
	})
	b := e.mustDial("501", "ocpp1.6")
	b.callOK("1", "StatusNotification", `{"connectorId":1,"errorCode":"GroundFailure","status":"Faulted"}`)
	b.callOK("2", "StatusNotification", `{"connectorId":1,"errorCode":"NoError","status":"Available","timestamp":"2020-01-01T00:00:00Z"}`)
	_, code := b.callError(`[2,"3","StatusNotification",{"connectorId":9,"errorCode":"NoError","status":"Available"}]`)
	require.Equal(t, "PropertyConstraintViolation", code)
	for result, want := range map[string]float64{metrics.NotificationApplied: 1, metrics.NotificationStale: 1,
		metrics.NotificationUnknownChargebox: 1, metrics.NotificationInvalid: 0, metrics.NotificationFailed: 0} {
		assert.Equal(t, want, counted(t, m, result), result)
	}

	var messages, stores []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "StatusNotification":
			messages = append(messages, s)
		case "store.ApplyStatusNotification":
			stores = append(stores, s)
		}
	}
	require.Len(t, messages, 3, "one span per notification")
	require.Len(t, stores, 3, "one store span per notification")
	for i, s := range messages {
		assert.Equal(t, trace.SpanKindServer, s.SpanKind())
		assert.False(t, s.Parent().IsValid(), "a trace of its own")
		assert.Equal(t, "chargebox:501", attribute(s, "chargenet.actor"))
		assert.Equal(t, s.SpanContext().SpanID(), stores[i].Parent().SpanID(), "the store call is the message's child")
		assert.Equal(t, s.SpanContext().TraceID(), stores[i].SpanContext().TraceID())
	}
	var events []chargenet.Event
	eventually(t, func() bool { // the log shows an event shortly after its commit
		var err error
		events, err = e.store.ListEvents(context.Background(), chargenet.ChangeSeek[int64]{Limit: chargenet.MaxPageSize},
			[]string{chargenet.EventStatusChanged}, "chargebox:501")
		require.NoError(t, err)
		return len(events) > 0
	}, "the applied notification's event is in the log")
	require.Len(t, events, 1)
	assert.Contains(t, events[0].TraceParent, messages[0].SpanContext().TraceID().String(), "the event is in the message's trace")
}

// attribute returns the string attribute key of span s.
func attribute(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.AsString()
		}
	}
	return ""
}

// counted returns the count of status notifications with result.
func counted(t *testing.T, m *metrics.Metrics, result string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "chargenet_status_notifications_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
