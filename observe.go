package chargenet

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Hooks are the functions a store calls about what it commits, so that the parts of the
// process that act on it need not wait for their next poll: the webhook dispatcher
// (OnEvents), the metrics (OnCommit) and the OCPP listener (OnChargeboxSignal). A store
// is given its Hooks when it is opened (sqlite.WithHooks, postgres.Options.Hooks), and
// each function is set once what it calls exists, before or after Open; until then the
// store calls nothing for it. The zero value calls nothing. Safe for concurrent use.
type Hooks struct {
	events     atomic.Pointer[func()]
	commit     atomic.Pointer[func(op string, d time.Duration, writes int)]
	signal     atomic.Pointer[func(id int64)]
	eventsSet  firstSet
	signalsSet firstSet
}

// OnEvents sets the function the store calls after every commit that queued at least
// one webhook delivery or OCPI push (a change with a subscriber), so that a dispatcher
// in the same process delivers at once; a store shared by several processes
// (PostgreSQL) also calls it for what the others queued. A change without a subscriber
// announces nothing. nil removes the function.
func (h *Hooks) OnEvents(f func()) {
	if f == nil {
		h.events.Store(nil)
		return
	}
	h.events.Store(&f)
	h.eventsSet.fire()
}

// Announce calls the function set with OnEvents, if any.
func (h *Hooks) Announce() {
	if f := h.events.Load(); f != nil {
		(*f)()
	}
}

// EventsWanted returns a channel closed once OnEvents has been given a function: a
// store shared by several processes then starts listening to what the others queue.
func (h *Hooks) EventsWanted() <-chan struct{} { return h.eventsSet.c() }

// OnCommit sets the function the store calls after each write transaction it commits,
// with the kind of transaction (for example "update_connector"), how long it took from
// its start to the end of the commit, and how many writes of callers it carried (more
// than one when several callers' updates were committed together, a group commit). nil
// removes the function.
func (h *Hooks) OnCommit(f func(op string, d time.Duration, writes int)) {
	if f == nil {
		h.commit.Store(nil)
		return
	}
	h.commit.Store(&f)
}

// Committed reports to the function set with OnCommit, if any, a commit of op that
// started at start and carried writes writes. Without a function it costs one atomic
// load.
func (h *Hooks) Committed(op string, start time.Time, writes int) {
	if f := h.commit.Load(); f != nil {
		(*f)(op, time.Since(start), writes)
	}
}

// OnChargeboxSignal sets the function a store shared by several servers (PostgreSQL)
// calls with a box's id whenever another server registered, revoked or connected it, or
// recorded availability it owes, so that the server holding its connection acts at once
// (ChargeboxSignals); with 0 when something may have been missed (check every box). A
// store of one process (SQLite) never calls it. nil removes the function.
func (h *Hooks) OnChargeboxSignal(f func(id int64)) {
	if f == nil {
		h.signal.Store(nil)
		return
	}
	h.signal.Store(&f)
	h.signalsSet.fire()
}

// Signal calls the function set with OnChargeboxSignal, if any, with id.
func (h *Hooks) Signal(id int64) {
	if f := h.signal.Load(); f != nil {
		(*f)(id)
	}
}

// SignalsWanted returns a channel closed once OnChargeboxSignal has been given a
// function: a store shared by several servers then starts listening for signals.
func (h *Hooks) SignalsWanted() <-chan struct{} { return h.signalsSet.c() }

// firstSet is a channel closed the first time fire is called. The zero value is ready.
type firstSet struct {
	made, fired sync.Once
	ch          chan struct{}
}

func (w *firstSet) c() chan struct{} {
	w.made.Do(func() { w.ch = make(chan struct{}) })
	return w.ch
}

func (w *firstSet) fire() {
	ch := w.c()
	w.fired.Do(func() { close(ch) })
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

// PoolStats is a snapshot of a database connection pool.
type PoolStats struct {
	Max, Total, Idle, Acquired, Constructing int32
	// AcquireCount counts the connections taken from the pool; EmptyAcquireCount
	// those that had to wait because none was idle; AcquireDuration is the time spent
	// waiting in total.
	AcquireCount, EmptyAcquireCount int64
	AcquireDuration                 time.Duration
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
