package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

// testObserve checks what a store reports on itself: every commit of an update and of a
// status notification (chargenet.CommitReporter), the outbox's backlog and disabled
// webhooks, its migration head (chargenet.Inspector), and the traceparent an event keeps
// from the context of the change that caused it.
func testObserve(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	insp, ok := s.(chargenet.Inspector)
	require.True(t, ok, "%T reports on itself", s)
	cr, ok := s.(chargenet.CommitReporter)
	require.True(t, ok, "%T reports its commits", s)

	known, applied, err := insp.MigrationHead(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, known)
	assert.Equal(t, known, applied, "a store opened by this program is at its head")

	stats, err := insp.OutboxStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, chargenet.OutboxStats{}, stats, "nothing pending, nothing disabled")

	var mu sync.Mutex
	commits := map[string]int{}
	cr.OnCommit(func(op string, d time.Duration, writes int) {
		mu.Lock()
		defer mu.Unlock()
		assert.Positive(t, d)
		commits[op] += writes
	})
	t.Cleanup(func() { cr.OnCommit(nil) })

	w := NewWebhook("p", now(), chargenet.EventConnectorUpdated)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))
	off := NewWebhook("p", now(), chargenet.EventStatusChanged)
	off.Enabled = false
	require.NoError(t, s.CreateWebhook(ctx, &off, nil))

	traceID := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	spanID := trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	traced := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID,
		TraceFlags: trace.FlagsSampled}))
	first := now()
	_, err = s.UpdateConnector(traced, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(31.0)}, "", first)
	require.NoError(t, err)
	_, err = s.UpdateConnector(context.WithoutCancel(ctx), 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(32.0)}, "", now())
	require.NoError(t, err)
	_, err = s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(-1.0)}, "", now())
	require.Error(t, err, "a refused update")
	_, err = s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: "Faulted",
		ErrorCode: "GroundFailure", Timestamp: now()}, now())
	require.NoError(t, err)

	stats, err = insp.OutboxStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), stats.Pending, "two updates queued for the enabled webhook; the disabled one's are not counted")
	assert.True(t, stats.Oldest.Equal(first.Truncate(time.Microsecond)), "oldest %v is the first update's time %v", stats.Oldest, first)
	assert.Equal(t, int64(1), stats.DisabledWebhooks)

	ds := claimAll(t, s, now())
	require.Len(t, ds, 2)
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ds[0].Event.TraceParent,
		"the traced change's event keeps its traceparent")
	assert.Empty(t, ds[1].Event.TraceParent, "an untraced change has none")

	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, commits["update_connector"], 2, "the committed updates were reported")
	assert.LessOrEqual(t, commits["update_connector"], 3, "at most the refused one beside them")
	assert.Equal(t, 1, commits["status_notification"])
}
