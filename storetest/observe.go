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
// status notification (chargenet.Hooks.OnCommit), the outbox's backlog and disabled
// webhooks, its migration head (chargenet.Inspector), and the traceparent an event keeps
// from the context of the change that caused it.
func testObserve(t *testing.T, open Opener) {
	hooks := new(chargenet.Hooks)
	s, _ := demoStoreWith(t, open, Options{Hooks: hooks})
	ctx := t.Context()
	insp := s

	known, applied, err := insp.MigrationHead(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, known)
	assert.Equal(t, known, applied, "a store opened by this program is at its head")

	stats, err := insp.OutboxStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, chargenet.OutboxStats{}, stats, "nothing pending, nothing disabled")

	var mu sync.Mutex
	commits := map[string]int{}
	hooks.OnCommit(func(op string, d time.Duration, writes int) {
		mu.Lock()
		defer mu.Unlock()
		assert.Positive(t, d)
		commits[op] += writes
	})
	t.Cleanup(func() { hooks.OnCommit(nil) })

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
	_, err = s.UpdateConnector(traced, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(31.0)}, "", "", first)
	require.NoError(t, err)
	_, err = s.UpdateConnector(context.WithoutCancel(ctx), 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(32.0)}, "", "", now())
	require.NoError(t, err)
	_, err = s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(-1.0)}, "", "", now())
	require.Error(t, err, "a refused update")
	_, err = s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: "Faulted",
		ErrorCode: "GroundFailure", Timestamp: now()}, "",
		now())

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

// testCommitWait checks a store's commit wait (Options.CommitWait and
// CommitWaitTarget): after a quiet spell a PATCH commits at once; a PATCH that follows
// it within the wait waits for more, and the CommitWaitTarget-1 that come next share
// its commit.
func testCommitWait(t *testing.T, open Opener) {
	const (
		wait   = 10 * time.Second // far longer than the changes take to join: target ends it
		target = 6
	)
	hooks := new(chargenet.Hooks)
	s, _ := demoStoreWith(t, open, Options{Hooks: hooks, CommitWait: wait, CommitWaitTarget: target})
	ctx := t.Context()
	var mu sync.Mutex
	var writes []int
	hooks.OnCommit(func(op string, _ time.Duration, n int) {
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, n)
	})
	t.Cleanup(func() { hooks.OnCommit(nil) })
	patch := func(power float64) error {
		_, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(power)}, "", "", now())
		return err
	}
	before, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	require.NoError(t, patch(100), "after a quiet spell")
	var wg sync.WaitGroup
	errs := make([]error, target)
	wg.Add(1)
	start := time.Now()
	go func() { defer wg.Done(); errs[0] = patch(101) }()
	time.Sleep(50 * time.Millisecond) // taken alone, it waits
	for i := 1; i < target; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = patch(float64(101 + i)) }()
	}
	wg.Wait()
	assert.Less(t, time.Since(start), wait/2, "reaching the target ended the wait, not its end")
	for i, err := range errs {
		require.NoError(t, err, "PATCH %d", i)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{1, target}, writes, "one commit alone, then one of the whole target")
	after, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, before.Version+int64(target)+1, after.Version, "every PATCH applied")
}
