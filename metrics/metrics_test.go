package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/metrics"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStore reports on itself as set.
type fakeStore struct {
	stats    chargenet.OutboxStats
	statsErr error
	pool     chargenet.PoolStats
}

func (s *fakeStore) OutboxStats(context.Context) (chargenet.OutboxStats, error) {
	return s.stats, s.statsErr
}
func (s *fakeStore) ReadCacheStats() (uint64, uint64) { return 7, 3 }
func (s *fakeStore) PoolStats() chargenet.PoolStats   { return s.pool }

func TestObserveStore(t *testing.T) {
	s := &fakeStore{
		stats: chargenet.OutboxStats{Pending: 4, Oldest: time.Now().Add(-time.Minute), DisabledWebhooks: 2},
		pool:  chargenet.PoolStats{Max: 10, Acquired: 9, Idle: 1, AcquireCount: 100, EmptyAcquireCount: 5, AcquireDuration: 1500 * time.Millisecond},
	}
	m := metrics.New()
	m.ObserveStore(s, time.Second)
	m.ObserveReadCache(s.ReadCacheStats)
	m.ObservePool(s.PoolStats)
	hooks := new(chargenet.Hooks)
	hooks.OnCommit(m.Commit)
	hooks.Committed("update_connector", time.Now().Add(-time.Millisecond), 5)
	hooks.Committed("update_connector", time.Now(), 1)

	expected := `
# HELP chargenet_db_pool_connections Connections of the PostgreSQL pool, by state (acquired, idle, constructing).
# TYPE chargenet_db_pool_connections gauge
chargenet_db_pool_connections{state="acquired"} 9
chargenet_db_pool_connections{state="constructing"} 0
chargenet_db_pool_connections{state="idle"} 1
# HELP chargenet_db_pool_empty_acquires_total Connections taken from the PostgreSQL pool that had to wait because none was idle.
# TYPE chargenet_db_pool_empty_acquires_total counter
chargenet_db_pool_empty_acquires_total 5
# HELP chargenet_db_pool_acquire_wait_seconds_total Time spent waiting for a connection from the PostgreSQL pool.
# TYPE chargenet_db_pool_acquire_wait_seconds_total counter
chargenet_db_pool_acquire_wait_seconds_total 1.5
# HELP chargenet_store_read_cache_hits_total Reads answered from the SQLite read cache.
# TYPE chargenet_store_read_cache_hits_total counter
chargenet_store_read_cache_hits_total 7
# HELP chargenet_webhook_pending_deliveries Webhook deliveries waiting in the outbox for enabled webhooks (due or scheduled for a retry).
# TYPE chargenet_webhook_pending_deliveries gauge
chargenet_webhook_pending_deliveries 4
# HELP chargenet_webhook_disabled_subscriptions Webhooks that are disabled, by their owner or after a receiver answered 410 Gone.
# TYPE chargenet_webhook_disabled_subscriptions gauge
chargenet_webhook_disabled_subscriptions 2
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(expected),
		"chargenet_db_pool_connections", "chargenet_db_pool_empty_acquires_total", "chargenet_db_pool_acquire_wait_seconds_total",
		"chargenet_store_read_cache_hits_total", "chargenet_webhook_pending_deliveries", "chargenet_webhook_disabled_subscriptions"))

	families, err := m.Registry().Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			switch {
			case s.GetGauge() != nil:
				values[f.GetName()] = s.GetGauge().GetValue()
			case s.GetHistogram() != nil:
				values[f.GetName()+"_count"] = float64(s.GetHistogram().GetSampleCount())
				values[f.GetName()+"_sum"] = s.GetHistogram().GetSampleSum()
			}
		}
	}
	assert.InDelta(t, 60, values["chargenet_webhook_oldest_pending_age_seconds"], 5, "the oldest delivery is a minute old")
	assert.Equal(t, 2.0, values["chargenet_store_commit_writes_count"])
	assert.Equal(t, 6.0, values["chargenet_store_commit_writes_sum"], "group commit sizes 5 and 1")
	assert.Equal(t, 1.0, values["chargenet_webhook_outbox_stats_up"])

	s.statsErr = errors.New("database down")
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP chargenet_webhook_outbox_stats_up 1 when the outbox could be read for this scrape, 0 when the store failed.
# TYPE chargenet_webhook_outbox_stats_up gauge
chargenet_webhook_outbox_stats_up 0
`), "chargenet_webhook_outbox_stats_up", "chargenet_webhook_pending_deliveries"), "a failed read reports 0 and no stale gauges")

	problems, err := testutil.GatherAndLint(m.Registry())
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestNilMetrics: every method of a nil *Metrics does nothing.
func TestNilMetrics(t *testing.T) {
	var m *metrics.Metrics
	assert.NotPanics(t, func() {
		m.Refused(chargenet.CodeRateLimited)
		m.Commit("x", time.Second, 1)
		m.WebhookAttempt(chargenet.OutcomeSucceeded, 1, time.Second)
		m.OCPIPush(chargenet.OutcomeSucceeded, time.Second)
		m.StatusNotification(metrics.NotificationApplied)
		m.ObserveStore(&fakeStore{}, time.Second)
		m.ObserveReadCache(nil)
		m.ObservePool(nil)
		m.ObserveReadiness(nil, time.Second)
		op := m.Operation("x")
		op.Begin()
		op.Done(200, time.Second)
	})
}

// TestOCPIPushes: the pending OCPI pushes and their age sit beside the webhook
// deliveries, counted apart from them; every push attempt counts by outcome, and a
// push the partner took records its lag from the commit.
func TestOCPIPushes(t *testing.T) {
	s := &fakeStore{stats: chargenet.OutboxStats{Pending: 1, Oldest: time.Now().Add(-time.Second),
		PendingPushes: 3, OldestPush: time.Now().Add(-2 * time.Minute)}}
	m := metrics.New()
	m.ObserveStore(s, time.Second)
	m.OCPIPush(chargenet.OutcomeSucceeded, 300*time.Millisecond)
	m.OCPIPush(chargenet.OutcomeSucceeded, -time.Second) // a clock step: counted as 0
	m.OCPIPush(chargenet.OutcomeFailed, time.Hour)

	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP chargenet_ocpi_pending_pushes OCPI pushes waiting in the outbox for partners' Locations receivers (due or scheduled for a retry).
# TYPE chargenet_ocpi_pending_pushes gauge
chargenet_ocpi_pending_pushes 3
# HELP chargenet_webhook_pending_deliveries Webhook deliveries waiting in the outbox for enabled webhooks (due or scheduled for a retry).
# TYPE chargenet_webhook_pending_deliveries gauge
chargenet_webhook_pending_deliveries 1
# HELP chargenet_ocpi_push_attempts_total OCPI push attempts to partners' Locations receivers, by outcome (succeeded, failed).
# TYPE chargenet_ocpi_push_attempts_total counter
chargenet_ocpi_push_attempts_total{outcome="failed"} 1
chargenet_ocpi_push_attempts_total{outcome="succeeded"} 2
`), "chargenet_ocpi_pending_pushes", "chargenet_webhook_pending_deliveries", "chargenet_ocpi_push_attempts_total"))

	families, err := m.Registry().Gather()
	require.NoError(t, err)
	var age float64
	var lagCount uint64
	var lagSum float64
	for _, f := range families {
		switch f.GetName() {
		case "chargenet_ocpi_oldest_pending_push_age_seconds":
			age = f.GetMetric()[0].GetGauge().GetValue()
		case "chargenet_ocpi_push_lag_seconds":
			h := f.GetMetric()[0].GetHistogram()
			lagCount, lagSum = h.GetSampleCount(), h.GetSampleSum()
		}
	}
	assert.InDelta(t, 120, age, 5, "the oldest push is two minutes old")
	assert.Equal(t, uint64(2), lagCount, "only pushes the partner took have a lag")
	assert.InDelta(t, 0.3, lagSum, 1e-9)

	problems, err := testutil.GatherAndLint(m.Registry())
	require.NoError(t, err)
	assert.Empty(t, problems)
}
