package chargenet

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// CommitReporter reports each write transaction a store commits: after the commit it
// calls the function set with OnCommit with the kind of transaction (for example
// "update_connector"), how long it took from its start to the end of the commit, and how
// many writes of callers it carried (more than one when several callers' updates were
// committed together, a group commit).
type CommitReporter interface {
	OnCommit(f func(op string, d time.Duration, writes int))
}

// CommitWaiter sets how long a store's group commit waits for more changes: with a wait set,
// PATCHes and status notifications that arrive as a steady stream, each alone, wait up
// to d for more so that several share one commit, and commit as soon as CommitWaitTarget of
// them are together (a client sending one change after another is not held; see
// internal/groupcommit). 0 never waits.
type CommitWaiter interface {
	SetCommitWait(d time.Duration)
	CommitWaitTarget() int
}

// CommitHook implements CommitReporter for a store that embeds it: the store calls
// Committed after each commit. The zero value reports to nobody and costs one atomic
// load. Safe for concurrent use.
type CommitHook struct {
	f atomic.Pointer[func(op string, d time.Duration, writes int)]
}

// OnCommit sets the function Committed calls; nil removes it.
func (h *CommitHook) OnCommit(f func(op string, d time.Duration, writes int)) {
	if f == nil {
		h.f.Store(nil)
		return
	}
	h.f.Store(&f)
}

// Committed reports a commit of op that started at start and carried writes writes.
func (h *CommitHook) Committed(op string, start time.Time, writes int) {
	if f := h.f.Load(); f != nil {
		(*f)(op, time.Since(start), writes)
	}
}

// OutboxStats describes the webhook deliveries and the OCPI pushes waiting in a
// store's outbox.
type OutboxStats struct {
	// Pending counts the deliveries not yet made or given up to enabled webhooks of API
	// keys.
	Pending int64
	// Oldest is when the change behind the oldest of them was committed; zero when
	// Pending is 0.
	Oldest time.Time
	// PendingPushes and OldestPush are the same for the pushes to partners' Locations
	// receivers.
	PendingPushes int64
	OldestPush    time.Time
	// DisabledWebhooks counts the webhooks that are disabled (by their owner or
	// because a receiver answered 410 Gone).
	DisabledWebhooks int64
}

// Inspector reports on a store's own state, for readiness checks and metrics.
type Inspector interface {
	// OutboxStats counts the pending webhook deliveries and OCPI pushes, and the disabled webhooks.
	// Errors are wrapped driver errors (ErrUnavailable when the database is down).
	OutboxStats(ctx context.Context) (OutboxStats, error)
	// MigrationHead returns the name of the last migration this program knows
	// (embedded) and of the last one applied to the database; the database is at head
	// when they are equal. Errors are wrapped driver errors.
	MigrationHead(ctx context.Context) (known, applied string, err error)
}

// ReadCacheStats is implemented by stores with a read cache: how many reads it
// answered (hits) and how many went to the database (misses) since the store opened.
type ReadCacheStats interface {
	ReadCacheStats() (hits, misses uint64)
}

// PoolStats is a snapshot of a database connection pool.
type PoolStats struct {
	Max, Total, Idle, Acquired, Constructing int32
	// AcquireCount counts the connections taken from the pool; EmptyAcquireCount
	// those that had to wait because none was idle; AcquireDuration is the time spent
	// waiting in total.
	AcquireCount, EmptyAcquireCount int64
	AcquireDuration                 time.Duration
}

// PoolReporter is implemented by stores over a connection pool.
type PoolReporter interface {
	PoolStats() PoolStats
}

// TraceParent returns the W3C traceparent header value of the span in ctx
// ("00-TRACEID-SPANID-FLAGS"), or "" when ctx carries no valid span (tracing off).
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
