package groupcommit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStore is an in-memory Store: EVSEs by uid (1 and 2 at location L1, 3 at L2),
// locations by id, a record of every Begin and Commit.
type fakeStore struct {
	mu        sync.Mutex
	evses     map[int64]chargenet.EVSE
	locations map[string]chargenet.Location
	gate      chan struct{} // when set, the first Begin waits for it to close
	loads     []Load
	commits   [][]Change
	touched   [][]chargenet.Location // the locations of every Commit
	events    int
	commitErr []error // returned by the next Commits, in turn
	announced int
	committed map[string]int // writes reported per kind
}

func newFakeStore() *fakeStore {
	f := &fakeStore{evses: map[int64]chargenet.EVSE{}, locations: map[string]chargenet.Location{}}
	for _, id := range []string{"L1", "L2"} {
		f.locations[id] = chargenet.Location{ID: id, Version: 1, LastUpdated: time.Unix(0, 0).UTC()}
	}
	for uid := int64(1); uid <= 3; uid++ {
		f.evses[uid] = chargenet.EVSE{UID: uid, EvseID: "E", ChargeboxID: 100 + uid, LocationID: map[bool]string{true: "L1", false: "L2"}[uid < 3],
			Status: chargenet.StatusAvailable, Version: 1,
			Connectors: []chargenet.Connector{{ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket,
				PowerType: chargenet.PowerAC3Phase, MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{}}}}
	}
	return f
}

func (f *fakeStore) Announce() { f.mu.Lock(); f.announced++; f.mu.Unlock() }

func (f *fakeStore) Committed(op string, _ time.Time, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.committed == nil {
		f.committed = map[string]int{}
	}
	f.committed[op] += writes
}

func (f *fakeStore) Begin(_ context.Context, load Load) (Tx, *Loaded, error) {
	f.mu.Lock()
	gate := f.gate
	f.gate = nil
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads = append(f.loads, load)
	l := &Loaded{Locations: map[string]*chargenet.Location{}}
	for uid := int64(1); uid <= 3; uid++ {
		e := f.evses[uid]
		if containsUID(load, e) {
			e.Connectors = append([]chargenet.Connector(nil), e.Connectors...)
			l.EVSEs = append(l.EVSEs, e)
			loc := f.locations[e.LocationID]
			l.Locations[e.LocationID] = &loc
		}
	}
	return &fakeTx{f: f}, l, nil
}

func containsUID(load Load, e chargenet.EVSE) bool {
	for _, u := range load.UIDs {
		if u == e.UID {
			return true
		}
	}
	for _, c := range load.Chargeboxes {
		if c == e.ChargeboxID {
			return true
		}
	}
	return false
}

type fakeTx struct{ f *fakeStore }

func (t *fakeTx) Commit(_ context.Context, changes []Change, locations []*chargenet.Location, events []chargenet.Event) (bool, error) {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.commitErr) > 0 {
		err := f.commitErr[0]
		f.commitErr = f.commitErr[1:]
		if err != nil {
			return false, err
		}
	}
	f.commits = append(f.commits, changes)
	for _, c := range changes {
		f.evses[c.EVSE.UID] = *c.EVSE
	}
	var touched []chargenet.Location
	for _, l := range locations {
		f.locations[l.ID] = *l
		touched = append(touched, *l)
	}
	f.touched = append(f.touched, touched)
	f.events += len(events)
	return len(events) > 0, nil
}

func (t *fakeTx) Rollback() {}

func power(v float64) chargenet.ConnectorPatch { return chargenet.ConnectorPatch{MaxElectricPower: &v} }

// submitAll submits first, holds its group at Begin, then submits ops one after the
// other, so that they wait, in this order, for the next group; it returns each
// Submit's error.
func submitAll(t *testing.T, q *Queue, f *fakeStore, first *Op, ops []*Op) []error {
	t.Helper()
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = q.Submit(context.Background(), first) }()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.gate == nil }, time.Second, time.Millisecond)
	for i, op := range ops {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = q.Submit(context.Background(), op) }()
		// Waiting senders are served in the order they came.
		require.Eventually(t, func() bool { return q.waiting.Load() == int64(i+1) }, 5*time.Second, time.Millisecond)
	}
	close(gate)
	wg.Wait()
	return errs
}

// TestGroup checks that changes waiting together share one transaction, that a hot EVSE
// is written once per group, that each change sees the ones before it, and that a
// refused change is answered with its error while the others commit.
func TestGroup(t *testing.T) {
	f := newFakeStore()
	q := Start(f, Config{})
	defer q.Close()
	first := &Op{UID: 3, ConnectorID: 1, Patch: power(1), Now: time.Unix(1, 0)}
	ops := make([]*Op, 10)
	for i := range ops {
		ops[i] = &Op{UID: 1, ConnectorID: 1, Patch: power(float64(i + 10)), Now: time.Unix(2, 0)}
	}
	ops[4].Patch = power(-1) // refused
	ops = append(ops, &Op{UID: 9, ConnectorID: 1, Patch: power(5)}, &Op{UID: 2, ConnectorID: 7, Patch: power(5)})
	errs := submitAll(t, q, f, first, ops)
	for i, err := range errs {
		require.NoError(t, err, "op %d", i)
	}
	require.Len(t, f.commits, 2, "the held op, then everything that waited, in one transaction")
	second := f.commits[1]
	require.Len(t, second, 1, "EVSE 1 is written once for its nine accepted updates")
	assert.Equal(t, int64(10), second[0].EVSE.Version, "version 1 plus nine updates")
	assert.Equal(t, map[int64]int{1: FieldMaxElectricPower}, second[0].Connectors)
	versions := map[int64]bool{}
	for i, op := range ops[:10] {
		if i == 4 {
			var de *chargenet.Error
			require.ErrorAs(t, op.Err, &de)
			assert.ErrorIs(t, op.Err, chargenet.ErrInvalid)
			assert.Nil(t, op.EVSE)
			continue
		}
		require.NoError(t, op.Err)
		versions[op.EVSE.Version] = true
		assert.Equal(t, op.EVSE.Version, map[bool]int64{true: int64(i + 2), false: int64(i + 1)}[i < 4], "op %d sees the ones before it", i)
	}
	assert.Len(t, versions, 9)
	assert.ErrorIs(t, ops[10].Err, chargenet.ErrNotFound, "no EVSE 9")
	assert.ErrorIs(t, ops[11].Err, chargenet.ErrNotFound, "no connector 7")
	assert.Equal(t, 10, f.events, "one event per accepted update")
	assert.Equal(t, 2, f.announced)
	assert.Equal(t, map[string]int{"update_connector": 10}, f.committed, "the held one and the nine accepted")
	assert.Equal(t, []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9, 2}, f.loads[1].UIDs)
	stored := f.evses[1]
	assert.Equal(t, 19.0, stored.Connectors[0].MaxElectricPower, "the last update wins")
}

// TestGroupFailure checks that an error that is not a domain error fails every change
// of the group, that nothing of it is kept, and that Retry gives it another attempt.
func TestGroupFailure(t *testing.T) {
	boom := errors.New("disk full")
	f := newFakeStore()
	f.commitErr = []error{boom}
	q := Start(f, Config{})
	op := &Op{UID: 1, ConnectorID: 1, Patch: power(7)}
	require.NoError(t, q.Submit(context.Background(), op))
	assert.ErrorIs(t, op.Err, boom)
	assert.Nil(t, op.EVSE)
	assert.Equal(t, int64(1), f.evses[1].Version, "nothing committed")
	q.Close()

	retryable := errors.New("deadlock detected")
	f.commitErr = []error{retryable, retryable}
	q = Start(f, Config{Retry: func(err error) bool { return errors.Is(err, retryable) }})
	defer q.Close()
	op = &Op{UID: 1, ConnectorID: 1, Patch: power(8)}
	require.NoError(t, q.Submit(context.Background(), op))
	require.NoError(t, op.Err, "the third attempt commits")
	assert.Equal(t, int64(2), op.EVSE.Version)
	assert.Equal(t, 8.0, f.evses[1].Connectors[0].MaxElectricPower)
}

// TestStatusInGroup checks a status notification applied in a group after a PATCH of an
// EVSE of its charge box: one write of the EVSE, both kinds of fields listed.
func TestStatusInGroup(t *testing.T) {
	f := newFakeStore()
	q := Start(f, Config{})
	defer q.Close()
	first := &Op{UID: 3, ConnectorID: 1, Patch: power(1)}
	patch := &Op{UID: 1, ConnectorID: 1, Patch: power(50), Now: time.Unix(10, 0)}
	note := &Op{Note: &chargenet.StatusNotification{ChargeboxID: 101, ConnectorID: 1, Status: "Faulted", ErrorCode: "GroundFailure",
		Timestamp: time.Unix(20, 0)}, Now: time.Unix(30, 0)}
	for i, err := range submitAll(t, q, f, first, []*Op{patch, note}) {
		require.NoError(t, err, "op %d", i)
	}
	require.NoError(t, patch.Err)
	require.NoError(t, note.Err)
	require.Len(t, f.commits, 2)
	require.Len(t, f.commits[1], 1)
	ch := f.commits[1][0]
	assert.True(t, ch.Status)
	assert.Equal(t, map[int64]int{1: FieldMaxElectricPower | FieldStatus}, ch.Connectors)
	assert.Equal(t, int64(3), ch.EVSE.Version, "the PATCH, then the notification")
	assert.Equal(t, chargenet.StatusOutOfOrder, ch.EVSE.Status)
	assert.Equal(t, 50.0, ch.EVSE.Connectors[0].MaxElectricPower)
	assert.Equal(t, int64(2), patch.EVSE.Version, "the PATCH's answer is the EVSE as it left it")
	assert.Equal(t, chargenet.StatusAvailable, patch.EVSE.Status)
	assert.Equal(t, []chargenet.StatusChange{{UID: 1, Status: chargenet.StatusOutOfOrder, Previous: chargenet.StatusAvailable, Version: 3}},
		note.Result.EVSEs)
}

// TestStatusWritesReachedConnectors checks that a notification lists for writing only the
// connectors it set, not the EVSE's others.
func TestStatusWritesReachedConnectors(t *testing.T) {
	f := newFakeStore()
	e := f.evses[1]
	second := e.Connectors[0]
	second.ID = 2
	e.Connectors = append(e.Connectors, second)
	f.evses[1] = e
	q := Start(f, Config{})
	defer q.Close()
	note := &Op{Note: &chargenet.StatusNotification{ChargeboxID: 101, ConnectorID: 2, Status: "Charging", ErrorCode: "NoError",
		Timestamp: time.Unix(20, 0)}, Now: time.Unix(30, 0)}
	require.NoError(t, q.Submit(context.Background(), note))
	require.NoError(t, note.Err)
	require.Len(t, f.commits, 1)
	require.Len(t, f.commits[0], 1)
	assert.Equal(t, map[int64]int{2: FieldStatus}, f.commits[0][0].Connectors)
	assert.True(t, f.commits[0][0].Status)
}

// TestGroupTouchesLocations checks that a group touches the location of every EVSE
// whose version it changed once, with the newest LastUpdated of those EVSEs, also when
// the clock runs backwards, and leaves the others alone.
func TestGroupTouchesLocations(t *testing.T) {
	f := newFakeStore()
	f.locations["L1"] = chargenet.Location{ID: "L1", Version: 4, LastUpdated: time.Unix(100, 0).UTC()}
	q := Start(f, Config{})
	defer q.Close()
	first := &Op{UID: 3, ConnectorID: 1, Patch: power(1), Now: time.Unix(50, 0)}
	ops := []*Op{
		{UID: 1, ConnectorID: 1, Patch: power(10), Now: time.Unix(200, 0)},
		{UID: 2, ConnectorID: 1, Patch: power(11), Now: time.Unix(300, 0)},
		{UID: 1, ConnectorID: 1, Patch: power(12), Now: time.Unix(90, 0)},  // a clock behind
		{UID: 3, ConnectorID: 1, Patch: power(-1), Now: time.Unix(400, 0)}, // refused: L2 stays
	}
	for i, err := range submitAll(t, q, f, first, ops) {
		require.NoError(t, err, "op %d", i)
	}
	require.Len(t, f.touched, 2)
	assert.Equal(t, []chargenet.Location{{ID: "L2", Version: 2, LastUpdated: time.Unix(50, 0).UTC()}}, f.touched[0],
		"the first group changed EVSE 3")
	e1, e2 := f.evses[1], f.evses[2]
	assert.Equal(t, time.Unix(200, 0).Add(time.Microsecond).UTC(), e1.LastUpdated, "EVSE 1 grows on a clock behind")
	assert.Equal(t, []chargenet.Location{{ID: "L1", Version: 5, LastUpdated: time.Unix(300, 0).UTC()}}, f.touched[1],
		"L1 once for three changes, at the newest of EVSE 1 and 2; L2 not for a refused change")
	assert.False(t, f.locations["L1"].LastUpdated.Before(e1.LastUpdated))
	assert.False(t, f.locations["L1"].LastUpdated.Before(e2.LastUpdated))

	note := &Op{Note: &chargenet.StatusNotification{ChargeboxID: 103, ConnectorID: 1, Status: "Available", ErrorCode: "NoError",
		Timestamp: time.Unix(20, 0)}, Now: time.Unix(30, 0)}
	require.NoError(t, q.Submit(context.Background(), note))
	require.NoError(t, note.Err)
	assert.Equal(t, int64(2), f.evses[3].Version, "the status time moved, nothing a partner sees")
	require.Len(t, f.touched, 3)
	assert.Empty(t, f.touched[2], "no location touched without a new EVSE version")
}

// TestSubmitEnds checks Submit's answers when the caller gives up or the queue is closed.
func TestSubmitEnds(t *testing.T) {
	f := newFakeStore()
	q := Start(f, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	op := &Op{UID: 1, ConnectorID: 1, Patch: power(3)}
	err := q.Submit(ctx, op)
	if err == nil { // taken before the context was seen: the group skips it
		err = op.Err
	}
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(1), f.evses[1].Version)
	q.Close()
	assert.ErrorIs(t, q.Submit(context.Background(), &Op{UID: 1}), ErrClosed)
}

// fakeClock is a Queue's clock in a test: time moves only when the test says, and a
// wait runs out only when the test fires it.
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	timers  []chan time.Time
	started int // waits begun
	reads   int // calls of now
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); c.reads++; return c.t }

func (c *fakeClock) nows() int { c.mu.Lock(); defer c.mu.Unlock(); return c.reads }

// peek returns the time without counting a call of now.
func (c *fakeClock) peek() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) after(time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, ch)
	c.started++
	return ch
}

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func (c *fakeClock) waits() int { c.mu.Lock(); defer c.mu.Unlock(); return c.started }

// fire runs out every wait begun.
func (c *fakeClock) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.timers {
		ch <- c.t
	}
	c.timers = nil
}

// groupSizes returns the number of changes of each group the store was asked to load.
func (f *fakeStore) groupSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	sizes := make([]int, len(f.loads))
	for i, l := range f.loads {
		sizes[i] = len(l.UIDs) + len(l.Chargeboxes)
	}
	return sizes
}

// TestGather checks when a writer waits for company: never after a quiet spell, once
// (a probe) for a client that sends one change after the other, and then not again
// for five hundred waits; a stream that fills the group keeps it waiting, and so does a wait
// that runs out while changes still join in its second half; four waits in a row that run
// out after changes joined only early, or none, turn waiting off. Closing answers the
// changes a wait holds.
func TestGather(t *testing.T) {
	f := newFakeStore()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	q := start(f, Config{Company: 3}, clock.now, clock.after)
	const wait = 20 * time.Millisecond
	q.SetWait(wait)
	// submit submits op; done is closed once it is answered.
	submit := func(op *Op) (done chan struct{}) {
		done = make(chan struct{})
		go func() { defer close(done); assert.NoError(t, q.Submit(context.Background(), op)) }()
		return done
	}
	answered := func(done chan struct{}, what string) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			require.FailNow(t, what+": not answered: it waits for company it should not wait for")
		}
	}
	op := func() *Op { return &Op{UID: 1, ConnectorID: 1, Patch: power(1), Now: clock.peek()} }

	answered(submit(op()), "the first change")
	assert.Equal(t, 0, clock.waits(), "the first change came after a quiet spell")

	done := submit(op()) // one after the other: a probe waits
	require.Eventually(t, func() bool { return clock.waits() == 1 }, 5*time.Second, time.Millisecond)
	clock.advance(wait)
	clock.fire()
	answered(done, "the probe")
	sizes := []int{1, 1}
	// One change after the other, each within the wait of the one before: no probe until
	// a probe interval after the last one ran out.
	for ended := clock.peek(); clock.peek().Sub(ended) < probeInterval(wait); clock.advance(wait / 2) {
		answered(submit(op()), "a change after the probe ran out")
		require.Equal(t, 1, clock.waits(), "no second probe %s after the first ran out", clock.peek().Sub(ended))
		sizes = append(sizes, 1)
	}
	done = submit(op())
	require.Eventually(t, func() bool { return clock.waits() == 2 }, 5*time.Second, time.Millisecond)
	clock.fire()
	answered(done, "the second probe")
	clock.advance(probeInterval(wait))
	answered(submit(op()), "a change after a quiet spell")
	assert.Equal(t, 2, clock.waits(), "a change after a quiet spell is never held")

	// A stream: the probe fills the group, and the next group waits too.
	first := submit(op())
	require.Eventually(t, func() bool { return clock.waits() == 3 }, 5*time.Second, time.Millisecond)
	second, third := submit(op()), submit(op())
	answered(first, "a full group")
	answered(second, "a full group")
	answered(third, "a full group")
	// join submits a change while a wait is on and returns once the writer took it.
	join := func() chan struct{} {
		n := clock.nows()
		done := submit(op())
		require.Eventually(t, func() bool { return clock.nows() > n }, 5*time.Second, time.Millisecond)
		return done
	}
	// A slower stream: a change joins in the second half, the wait runs out, and the
	// next group waits again.
	first = submit(op())
	require.Eventually(t, func() bool { return clock.waits() == 4 }, 5*time.Second, time.Millisecond)
	clock.advance(wait * 3 / 4)
	second = join()
	clock.advance(wait / 4)
	clock.fire()
	answered(first, "a wait that ran out")
	answered(second, "a wait that ran out")
	sizes = append(sizes, 1, 1, 3, 2)
	// Clients that wait for their answers: the other joins at once, then nothing. Four
	// such waits in a row turn waiting off; a wait worth it between them starts the
	// count again.
	waits := clock.waits()
	early := func(full bool) {
		t.Helper()
		waits++
		first := submit(op())
		require.Eventually(t, func() bool { return clock.waits() == waits }, 5*time.Second, time.Millisecond, "wait %d", waits)
		second := join()
		if full {
			answered(submit(op()), "a full group")
			sizes = append(sizes, 3)
		} else {
			clock.advance(wait)
			clock.fire()
			sizes = append(sizes, 2)
		}
		answered(first, "a wait that ran out")
		answered(second, "a wait that ran out")
	}
	for _, full := range []bool{false, false, false, true, false, false, false, false} {
		early(full)
	}
	answered(submit(op()), "a change after four waits that ran out early")
	assert.Equal(t, waits, clock.waits(), "four waits in a row whose changes joined only early turn waiting off")
	assert.Equal(t, append(sizes, 1), f.groupSizes())

	// Closing while a wait holds a change answers it.
	clock.advance(probeInterval(wait))
	answered(submit(op()), "a change after a quiet spell")
	held := &Op{UID: 1, ConnectorID: 1, Patch: power(9)}
	done = submit(held)
	require.Eventually(t, func() bool { return clock.waits() == waits+1 }, 5*time.Second, time.Millisecond)
	q.Close()
	answered(done, "a change held when the queue closed")
	require.NoError(t, held.Err)
	assert.Equal(t, 9.0, f.evses[1].Connectors[0].MaxElectricPower, "committed")
}
