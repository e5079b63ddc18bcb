// Package groupcommit is the group commit that both stores share for connector PATCHes
// and charge-box status notifications: changes waiting at the same time, up to
// Config.MaxGroup, are applied in one transaction and pay one sync to disk instead of one
// each.
//
// A group reads each EVSE it touches once, applies its changes in memory in the order
// taken (each sees the ones before it), writes each changed EVSE and touched location
// once, and records the events in the same transaction. A change refused by a domain rule
// (a *chargenet.Error) gets its error while the rest of its group commits; any other
// error fails the whole group. SetWait lets a steady stream of lone changes wait briefly
// for more (see docs/internals.md, "Commit wait").
package groupcommit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chargenet/chargenet"
)

// ErrClosed is the cause returned for a change submitted after Close.
var ErrClosed = errors.New("the store is closed")

// Fields of a connector a group changed, as bits of Change.Connectors.
const (
	FieldStandard         = 1 << iota // ConnectorPatch.Standard
	FieldFormat                       // ConnectorPatch.Format
	FieldMaxElectricPower             // ConnectorPatch.MaxElectricPower
	FieldMaxAmperage                  // ConnectorPatch.MaxAmperage
	FieldMaxVoltage                   // ConnectorPatch.MaxVoltage
	FieldStatus                       // Error and StatusReportedAt (a status notification)
)

// PatchFields returns the fields p sets, as Field bits.
func PatchFields(p chargenet.ConnectorPatch) int {
	f := 0
	for i, set := range [...]bool{p.Standard != nil, p.Format != nil, p.MaxElectricPower != nil, p.MaxAmperage != nil, p.MaxVoltage != nil} {
		if set {
			f |= 1 << i
		}
	}
	return f
}

// Op is one change: a connector update (Note nil) or a status notification (Note set).
type Op struct {
	// Connector update: apply Patch to connector ConnectorID of EVSE UID, If-Match IfMatch.
	UID, ConnectorID int64
	Patch            chargenet.ConnectorPatch
	IfMatch          string

	// Status notification.
	Note *chargenet.StatusNotification

	// Actor is who made the change (see chargenet.Event.Actor), set on its events.
	Actor string

	// Now is the time of the change, as the store keeps times (its precision).
	Now time.Time

	// Answers, set when Submit returns nil.
	EVSE   *chargenet.EVSE         // the EVSE as committed (an update)
	Result *chargenet.StatusResult // what the notification changed
	Err    error                   // a *chargenet.Error from the rules, or the error that failed the group

	ctx  context.Context
	done chan struct{}
}

// Load says what a group needs read.
type Load struct {
	// UIDs of the EVSEs updated and Chargeboxes notified: the group needs the EVSEs with
	// these UIDs and every EVSE of these charge boxes.
	UIDs, Chargeboxes []int64
}

// Loaded is what Store.Begin read.
type Loaded struct {
	// EVSEs are the EVSEs Load asked for, in ascending UID, with their connectors in
	// ascending ID and the status times (StatusReportedAt) of both.
	EVSEs []chargenet.EVSE
	// Locations are the locations of those EVSEs, by ID, read after the EVSEs (locked
	// after them where the database has row locks), with at least their Version and
	// LastUpdated.
	Locations map[string]*chargenet.Location
}

// Change is one EVSE a group changed, as the group left it.
type Change struct {
	EVSE *chargenet.EVSE
	// Connectors maps the ID of each connector the group changed to its changed fields
	// (Field bits).
	Connectors map[int64]int
	// Status reports whether a notification changed the EVSE's status or status time;
	// otherwise only its version and last update changed.
	Status bool
}

// Store is what a store provides to a group.
type Store interface {
	// Begin starts the group's transaction and reads what load asks for, holding from
	// here the locks that make the group's reads stay true until its commit.
	Begin(ctx context.Context, load Load) (Tx, *Loaded, error)
	// Announce is called after a commit that queued a webhook delivery.
	Announce()
	// Committed is called after each commit with the kind of change ("update_connector",
	// "status_notification"), when the group's transaction began, and how many changes of
	// that kind it committed (chargenet.Hooks.Committed).
	Committed(op string, start time.Time, writes int)
}

// Tx is a group's transaction.
type Tx interface {
	// Commit writes every change (the EVSE's status, status time, version and last
	// update; of each connector listed, the fields listed and its last update), the
	// version and last update of each location touched (taken from Loaded.Locations and
	// touched, in ascending ID), records events in the log (each queued for the webhooks
	// subscribed to its type) and commits. It reports whether a delivery was queued. On
	// error nothing is committed.
	Commit(ctx context.Context, changes []Change, locations []*chargenet.Location, events []chargenet.Event) (queued bool, err error)
	// Rollback ends the transaction without writing anything.
	Rollback()
}

// Config tunes a Queue.
type Config struct {
	// MaxGroup bounds the changes of one transaction. Default 64.
	MaxGroup int
	// Writers is the number of groups applied at once. Default 1.
	Writers int
	// Timeout bounds one group's transaction (the changes' own contexts only decide
	// whether a change starts: a caller that gives up must not fail the others).
	Timeout time.Duration
	// Retry reports whether a group that failed with err is tried again as a whole
	// (a deadlock or serialization failure): at most twice. Nil: never.
	Retry func(err error) bool
	// WaitTarget is how many changes end a writer's wait for more (see SetWait).
	// Default 8.
	WaitTarget int
}

// maxMissed is how many waits in a row that were not worth it (see Queue.gather) turn
// waiting off: one alone may be a stream's changes arriving bunched on a busy machine.
const maxMissed = 4

// probeInterval is how long a writer whose waiting is off lets pass after its last wait
// before it tries again: at least a second, and five hundred waits, so that probing costs
// a client sending one change after another at most 0.2 % of its time (and a probe that
// clients waiting for their answers happen to pass, by a change slowed past half the
// wait, costs as little).
func probeInterval(wait time.Duration) time.Duration { return max(time.Second, 500*wait) }

// Queue collects changes and applies them in groups. Create it with Start.
type Queue struct {
	store   Store
	cfg     Config
	ops     chan *Op
	quit    chan struct{}
	writers sync.WaitGroup
	once    sync.Once
	waiting atomic.Int64 // Submit calls waiting for a writer to take their op
	wait    atomic.Int64 // SetWait's duration

	// now and after are the clock (time.Now and time.After but in tests).
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

// Start starts the writers of a queue applying changes to store.
func Start(store Store, cfg Config) *Queue {
	return start(store, cfg, time.Now, time.After)
}

// start is Start with the clock given (tests pass a fake one).
func start(store Store, cfg Config, now func() time.Time, after func(time.Duration) <-chan time.Time) *Queue {
	if cfg.MaxGroup <= 0 {
		cfg.MaxGroup = 64
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.WaitTarget <= 0 {
		cfg.WaitTarget = 8
	}
	cfg.WaitTarget = min(cfg.WaitTarget, cfg.MaxGroup)
	q := &Queue{store: store, cfg: cfg, ops: make(chan *Op), quit: make(chan struct{}), now: now, after: after}
	for range cfg.Writers {
		q.writers.Add(1)
		go q.loop()
	}
	return q
}

// WaitTarget returns how many changes end a wait for more (Config.WaitTarget).
func (q *Queue) WaitTarget() int { return q.cfg.WaitTarget }

// SetWait sets how long a writer holding fewer than Config.WaitTarget changes of a stream
// waits for more before it commits (see the package documentation); 0, the default,
// never waits. It takes effect from the next group.
func (q *Queue) SetWait(d time.Duration) { q.wait.Store(int64(max(d, 0))) }

// Close stops the writers once the group each is applying is answered; changes
// submitted afterwards fail with ErrClosed. It waits for the writers to return.
func (q *Queue) Close() {
	q.once.Do(func() { close(q.quit) })
	q.writers.Wait()
}

// Submit queues op and waits for its group to answer it: then it returns nil and the
// answer is in op (EVSE or Result, or Err). It returns ctx's error if ctx ends before a
// writer takes op, and ErrClosed after Close. Once taken, op is always answered.
func (q *Queue) Submit(ctx context.Context, op *Op) error {
	op.ctx, op.done = ctx, make(chan struct{})
	q.waiting.Add(1)
	select {
	case q.ops <- op:
		q.waiting.Add(-1)
	case <-q.quit:
		q.waiting.Add(-1)
		return ErrClosed
	case <-ctx.Done():
		q.waiting.Add(-1)
		return ctx.Err()
	}
	<-op.done
	return nil
}

func (q *Queue) loop() {
	defer q.writers.Done()
	group := make([]*Op, 0, q.cfg.MaxGroup)
	var (
		prev      time.Time   // when the previous group stopped taking changes
		missed    = maxMissed // waits in a row not worth it, up to maxMissed: then waiting is off
		lastProbe time.Time   // when the last wait ended while waiting was off
	)
	for {
		select {
		case <-q.quit:
			return
		case op := <-q.ops:
			group = append(group[:0], op)
		}
	more:
		for len(group) < q.cfg.MaxGroup {
			select {
			case op := <-q.ops:
				group = append(group, op)
			default:
				break more
			}
		}
		now := q.now()
		if wait := time.Duration(q.wait.Load()); wait > 0 && len(group) < q.cfg.WaitTarget &&
			now.Sub(prev) < wait && (missed < maxMissed || now.Sub(lastProbe) >= probeInterval(wait)) {
			worth := q.gather(&group, wait)
			now = q.now()
			switch {
			case worth:
				missed = 0
			case missed < maxMissed:
				missed++
			}
			if missed == maxMissed {
				lastProbe = now
			}
		}
		prev = now
		q.apply(group)
		for _, op := range group {
			close(op.done)
		}
	}
}

// gather adds the changes that arrive within wait to group until it holds
// Config.WaitTarget, and reports whether waiting is worth going on with: the group filled
// up, or the wait ran out but changes were still arriving in its second half (a stream
// slower than WaitTarget per wait). Changes that joined only early, or none, are clients
// that wait for their answers, all of them now in the group: false, as when the queue
// is closing.
func (q *Queue) gather(group *[]*Op, wait time.Duration) bool {
	start := q.now()
	var last time.Time // when the last change joined
	timer := q.after(wait)
	for len(*group) < q.cfg.WaitTarget {
		select {
		case op := <-q.ops:
			*group = append(*group, op)
			last = q.now()
		case <-timer:
			return last.Sub(start) >= wait/2
		case <-q.quit:
			return false
		}
	}
	return true
}

// apply applies group in one transaction and sets every op's answer.
func (q *Queue) apply(group []*Op) {
	live := group[:0:0]
	for _, op := range group {
		op.EVSE, op.Result, op.Err = nil, nil, nil
		if err := op.ctx.Err(); err != nil {
			op.Err = err
			continue
		}
		live = append(live, op)
	}
	if len(live) == 0 {
		return
	}
	for attempt := 0; ; attempt++ {
		err := q.try(live)
		if err == nil {
			return
		}
		if attempt < 2 && q.cfg.Retry != nil && q.cfg.Retry(err) {
			continue
		}
		for _, op := range live {
			op.EVSE, op.Result, op.Err = nil, nil, err
		}
		return
	}
}

// try runs one attempt of a group: it sets the answers of the ops and returns nil, or
// returns the error that failed the group.
func (q *Queue) try(ops []*Op) error {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.Timeout)
	defer cancel()
	var load Load
	for _, op := range ops {
		if op.Note != nil {
			load.Chargeboxes = append(load.Chargeboxes, op.Note.ChargeboxID)
		} else {
			load.UIDs = append(load.UIDs, op.UID)
		}
	}
	start := time.Now()
	tx, loaded, err := q.store.Begin(ctx, load)
	if err != nil {
		return err
	}
	g := newGroup(loaded)
	for _, op := range ops {
		op.EVSE, op.Result, op.Err = nil, nil, nil
		err := g.apply(op)
		var de *chargenet.Error
		switch {
		case err == nil:
		case errors.As(err, &de):
			op.Err = err // refused: changes nothing
		default:
			tx.Rollback()
			return err
		}
	}
	if len(g.order) == 0 && len(g.events) == 0 {
		tx.Rollback()
		return nil
	}
	changes := make([]Change, len(g.order))
	for i, ch := range g.order {
		changes[i] = Change{EVSE: ch.e, Connectors: ch.fields, Status: ch.status}
	}
	queued, err := tx.Commit(ctx, changes, g.touchLocations(loaded.Locations), g.events)
	if err != nil {
		return err
	}
	updates, notes := 0, 0
	for _, op := range ops {
		switch {
		case op.Err != nil:
		case op.Note != nil:
			notes++
		default:
			updates++
		}
	}
	if updates > 0 {
		q.store.Committed("update_connector", start, updates)
	}
	if notes > 0 {
		q.store.Committed("status_notification", start, notes)
	}
	if queued {
		q.store.Announce()
	}
	return nil
}

// group is the in-memory state of one group: every EVSE it loaded, each charge box's
// EVSEs side by side in one slice (as chargenet.ApplyStatusNotification takes them;
// complete for the charge boxes the group notifies).
type group struct {
	byUID       map[int64]*chargenet.EVSE
	byChargebox map[int64][]chargenet.EVSE
	loaded      map[int64]int64 // the Version of each EVSE as loaded
	changes     map[int64]*changed
	order       []*changed // in the order of their first change
	events      []chargenet.Event
}

type changed struct {
	e      *chargenet.EVSE
	fields map[int64]int
	status bool
}

func newGroup(l *Loaded) *group {
	g := &group{byUID: make(map[int64]*chargenet.EVSE, len(l.EVSEs)),
		byChargebox: make(map[int64][]chargenet.EVSE), loaded: make(map[int64]int64, len(l.EVSEs)),
		changes: make(map[int64]*changed)}
	counts := make(map[int64]int)
	for i := range l.EVSEs {
		counts[l.EVSEs[i].ChargeboxID]++
		g.loaded[l.EVSEs[i].UID] = l.EVSEs[i].Version
	}
	for i := range l.EVSEs {
		cb := l.EVSEs[i].ChargeboxID
		if g.byChargebox[cb] == nil {
			g.byChargebox[cb] = make([]chargenet.EVSE, 0, counts[cb]) // never grows: pointers stay valid
		}
		g.byChargebox[cb] = append(g.byChargebox[cb], l.EVSEs[i])
	}
	for cb := range g.byChargebox {
		for i := range g.byChargebox[cb] {
			e := &g.byChargebox[cb][i]
			g.byUID[e.UID] = e
		}
	}
	return g
}

// touchLocations touches the locations of the EVSEs whose version the group changed
// (chargenet.ChangedLocations) and returns them in ascending ID. A location missing from
// locations is skipped.
func (g *group) touchLocations(locations map[string]*chargenet.Location) []*chargenet.Location {
	moved := make([]*chargenet.EVSE, 0, len(g.order))
	for _, ch := range g.order {
		if ch.e.Version != g.loaded[ch.e.UID] {
			moved = append(moved, ch.e)
		}
	}
	ids, newest := chargenet.ChangedLocations(moved)
	out := make([]*chargenet.Location, 0, len(ids))
	for _, id := range ids {
		if l := locations[id]; l != nil {
			l.Touch(newest[id])
			out = append(out, l)
		}
	}
	return out
}

// change returns the record of the group's changes to e, creating it.
func (g *group) change(e *chargenet.EVSE) *changed {
	ch := g.changes[e.UID]
	if ch == nil {
		ch = &changed{e: e, fields: make(map[int64]int)}
		g.changes[e.UID] = ch
		g.order = append(g.order, ch)
	}
	return ch
}

func (g *group) apply(op *Op) error {
	if op.Note != nil {
		return g.applyNote(op)
	}
	e := g.byUID[op.UID]
	if e == nil {
		return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "EVSE with uid %d not found", op.UID)
	}
	// UpdateConnector leaves e unchanged when it refuses.
	if _, err := e.UpdateConnector(op.ConnectorID, op.Patch, op.IfMatch); err != nil {
		return err
	}
	e.TouchConnector(op.ConnectorID, op.Now)
	g.change(e).fields[op.ConnectorID] |= PatchFields(op.Patch)
	out := e.Clone()
	ev, err := chargenet.NewConnectorUpdatedEvent(out, op.ConnectorID, op.Now)
	if err != nil {
		return err
	}
	ev.TraceParent = chargenet.TraceParent(op.ctx) // the group's context is not the request's
	ev.Actor = op.Actor
	g.events = append(g.events, ev)
	op.EVSE = out
	return nil
}

func (g *group) applyNote(op *Op) error {
	evses := g.byChargebox[op.Note.ChargeboxID]
	plan, err := chargenet.ApplyStatusNotification(evses, op.Note, op.Now)
	if err != nil {
		return err
	}
	for _, e := range plan.Changed {
		ch := g.change(g.byUID[e.UID])
		ch.status = true
		for _, id := range plan.Reached[e.UID] {
			ch.fields[id] |= FieldStatus
		}
	}
	for _, ev := range plan.Events {
		ev.TraceParent = chargenet.TraceParent(op.ctx)
		ev.Actor = op.Actor
		g.events = append(g.events, ev)
	}
	res := plan.Result
	op.Result = &res
	return nil
}
