package health_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubStore answers the readiness checks' calls as set.
type stubStore struct {
	ping           error
	known, applied string
	headErr        error
	stats          chargenet.OutboxStats
	statsErr       error
}

func (s *stubStore) Ping(context.Context) error { return s.ping }
func (s *stubStore) MigrationHead(context.Context) (string, string, error) {
	return s.known, s.applied, s.headErr
}
func (s *stubStore) OutboxStats(context.Context) (chargenet.OutboxStats, error) {
	return s.stats, s.statsErr
}

func TestChecker(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	healthy := func() *stubStore {
		return &stubStore{known: "0006_x.sql", applied: "0006_x.sql",
			stats: chargenet.OutboxStats{Pending: 3, Oldest: now.Add(-90 * time.Second), DisabledWebhooks: 1}}
	}
	running := func() bool { return true }
	stopped := func() bool { return false }
	tests := []struct {
		name        string
		store       func() *stubStore
		dispatching func() bool
		failing     []string
	}{
		{"all pass", healthy, running, nil},
		{"no dispatcher in this process", healthy, nil, nil},
		{"dispatcher stopped", healthy, stopped, []string{health.CheckDispatcher}},
		{"database down", func() *stubStore {
			s := healthy()
			s.ping = chargenet.ErrUnavailable
			s.headErr, s.statsErr = chargenet.ErrUnavailable, chargenet.ErrUnavailable
			return s
		}, running, []string{health.CheckDatabase, health.CheckMigrations, health.CheckBacklog}},
		{"database behind", func() *stubStore { s := healthy(); s.applied = "0005_y.sql"; return s }, running, []string{health.CheckMigrations}},
		{"database ahead", func() *stubStore { s := healthy(); s.applied = "0007_z.sql"; return s }, running, []string{health.CheckMigrations}},
		{"outbox unreadable", func() *stubStore { s := healthy(); s.statsErr = errors.New("boom"); return s }, running, []string{health.CheckBacklog}},
		{"an old backlog is reported, not failed", func() *stubStore {
			s := healthy()
			s.stats.Oldest = now.Add(-48 * time.Hour)
			return s
		}, running, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &health.Checker{Store: tt.store(), Dispatching: tt.dispatching, Now: func() time.Time { return now }}
			r := c.Run(context.Background())
			assert.Equal(t, tt.failing, r.Failing())
			assert.Equal(t, len(tt.failing) == 0, r.Ready)
			want := "ready"
			if !r.Ready {
				want = "not ready"
			}
			assert.Equal(t, want, r.Status)
			var names []string
			for _, ch := range r.Checks {
				names = append(names, ch.Name)
				assert.NotEmpty(t, ch.Detail, ch.Name)
			}
			assert.Equal(t, []string{health.CheckDatabase, health.CheckMigrations, health.CheckDispatcher, health.CheckBacklog}, names)
		})
	}

	c := &health.Checker{Store: healthy(), Now: func() time.Time { return now }}
	r := c.Run(context.Background())
	backlog := r.Checks[3]
	require.NotNil(t, backlog.Pending)
	require.NotNil(t, backlog.OldestPendingAgeSeconds)
	assert.Equal(t, int64(3), *backlog.Pending)
	assert.Equal(t, 90.0, *backlog.OldestPendingAgeSeconds)
}
