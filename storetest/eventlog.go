package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The event log (chargenet.EventLog): every event the store records is kept, in commit
// order, until PruneEvents removes it. On PostgreSQL a read shows an event only once
// every transaction that started writing before it has ended, and that includes
// transactions of other tests on the same server: the tests below wait for what they
// wrote (logUntil) instead of expecting it in the very next read.

// logWait bounds how long a test waits for events it wrote to show in the log.
const logWait = 10 * time.Second

// readLog reads the whole log through forward keyset reads of limit events, from the
// start or after the position of after when it is not nil.
func readLog(t testing.TB, s chargenet.Store, types []string, since time.Time, limit int, after *chargenet.Event) []chargenet.Event {
	t.Helper()
	seek := chargenet.ChangeSeek[int64]{Since: since, Limit: limit}
	if after != nil {
		seek.Pos, seek.Key, seek.HasPos = after.Pos, after.Seq, true
	}
	out := []chargenet.Event{}
	for {
		page, err := s.ListEvents(t.Context(), seek, types, "")
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), limit)
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		last := page[len(page)-1]
		seek.Pos, seek.Key, seek.HasPos = last.Pos, last.Seq, true
	}
}

// logUntil reads the whole log (of types, since since) until it holds n events, and
// returns it.
func logUntil(t testing.TB, s chargenet.Store, types []string, since time.Time, n int) []chargenet.Event {
	t.Helper()
	deadline := time.Now().Add(logWait)
	for {
		got := readLog(t, s, types, since, chargenet.MaxPageSize, nil)
		if len(got) >= n || time.Now().After(deadline) {
			require.Len(t, got, n, "the log of %v since %v", types, since)
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// patchPower sets the power of connector 1 of EVSE uid at time at: one
// evse.connector.updated event at at.
func patchPower(t testing.TB, s chargenet.Store, uid int64, power float64, at time.Time) *chargenet.EVSE {
	t.Helper()
	e, err := s.UpdateConnector(t.Context(), uid, 1, chargenet.ConnectorPatch{MaxElectricPower: &power}, "", "", at)
	require.NoError(t, err)
	return e
}

// fault reports connector 1 of charge box 501 (EVSE 1001) Faulted, or Available when
// ok, at time at: one evse.status.changed event at at when its status changes.
func fault(t testing.TB, s chargenet.Store, ok bool, at time.Time) {
	t.Helper()
	n := chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: "Faulted", ErrorCode: "GroundFailure", Timestamp: at}
	if ok {
		n.Status, n.ErrorCode = "Available", "NoError"
	}
	_, err := s.ApplyStatusNotification(t.Context(), &n, "", at)
	require.NoError(t, err)
}

// checkLogOrder checks that events have increasing positions and unique seq numbers.
func checkLogOrder(t testing.TB, events []chargenet.Event) {
	t.Helper()
	seen := map[int64]bool{}
	for i, ev := range events {
		assert.False(t, seen[ev.Seq], "seq %d twice", ev.Seq)
		seen[ev.Seq] = true
		if i > 0 {
			prev := events[i-1]
			assert.True(t, prev.Pos < ev.Pos || prev.Pos == ev.Pos && prev.Seq < ev.Seq,
				"(%d, %d) after (%d, %d)", ev.Pos, ev.Seq, prev.Pos, prev.Seq)
		}
	}
}

// testEventLogEveryEvent checks that every write's events are logged although no webhook
// subscribes, in the order the writes committed, with their data, and that Event reads
// each of them.
func testEventLogEveryEvent(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now()
	patchPower(t, s, 1002, 33, start)
	fault(t, s, false, start.Add(time.Second))
	l := newLocation("LOG-1", start)
	_, _, err := s.PutLocation(ctx, &l, "", start.Add(2*time.Second))
	require.NoError(t, err)
	e := prepared(t, postedEVSE("DE*LOG*E1", "LOG-1", 900, chargenet.StatusAvailable), start.Add(3*time.Second))
	created, err := s.CreateEVSE(ctx, e, nil, "", start.Add(3*time.Second))
	require.NoError(t, err)
	mustChange(t, s, created.UID, removeEVSE(""), start.Add(4*time.Second))

	got := logUntil(t, s, nil, time.Time{}, 6)
	types := eventTypes(got)
	assert.Equal(t, chargenet.EventConnectorUpdated, types[0])
	assert.Equal(t, chargenet.EventStatusChanged, types[1])
	assert.Equal(t, chargenet.EventLocationCreated, types[2])
	assert.Equal(t, chargenet.EventEVSECreated, types[3])
	assert.ElementsMatch(t, []string{chargenet.EventStatusChanged, chargenet.EventEVSERemoved}, types[4:6],
		"the removal's events, in one transaction")
	checkLogOrder(t, got)

	var data struct {
		UID       int64 `json:"uid"`
		Connector struct {
			MaxElectricPower float64 `json:"maxElectricPower"`
		} `json:"connector"`
	}
	require.NoError(t, json.Unmarshal(got[0].Data, &data))
	assert.Equal(t, int64(1002), data.UID)
	assert.Equal(t, 33.0, data.Connector.MaxElectricPower)
	assert.True(t, got[0].Time.Equal(start), "the event's time is its change's")
	assert.Equal(t, time.UTC, got[0].Time.Location())
	for _, ev := range got {
		one, err := s.Event(ctx, ev.ID)
		require.NoError(t, err)
		assert.Equal(t, ev, *one, "Event reads what the log lists")
	}
	_, err = s.Event(ctx, "evt_01JD00000000000000NOTTHERE")
	requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "eventId")
}

// testEventLogRead checks the reads of the log: order, the type filter, since, keyset
// resumption, and that webhook.ping events are never listed nor read.
func testEventLogRead(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now().Add(-time.Hour)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Minute) }
	// 0: patch, 1: fault, 2: patch, 3: ok, 4: patch, 5: patch
	patchPower(t, s, 1003, 10, at(0))
	fault(t, s, false, at(1))
	patchPower(t, s, 1003, 11, at(2))
	fault(t, s, true, at(3))
	patchPower(t, s, 1004, 12, at(4))
	w := NewWebhook("p", start, chargenet.EventStatusChanged)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))
	ping := chargenet.NewPingEvent(w.ID, w.URL, at(5))
	require.NoError(t, s.SendTestEvent(ctx, "p", w.ID, ping, at(5)))
	patchPower(t, s, 1004, 13, at(6))

	all := logUntil(t, s, nil, time.Time{}, 6)
	checkLogOrder(t, all)
	for i, ev := range all {
		assert.NotEqual(t, chargenet.EventWebhookPing, ev.Type)
		want := chargenet.EventConnectorUpdated
		if i == 1 || i == 3 {
			want = chargenet.EventStatusChanged
		}
		assert.Equal(t, want, ev.Type, "event %d", i)
	}

	t.Run("pages resume after the last event", func(t *testing.T) {
		for _, limit := range []int{1, 2, 4, 6, 7} {
			assert.Equal(t, all, readLog(t, s, nil, time.Time{}, limit, nil), "limit %d", limit)
		}
		assert.Equal(t, all[3:], readLog(t, s, nil, time.Time{}, 2, &all[2]))
		assert.Empty(t, readLog(t, s, nil, time.Time{}, 2, &all[5]))
		page, err := s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 0}, nil, "")
		require.NoError(t, err)
		assert.Empty(t, page)
	})

	t.Run("types", func(t *testing.T) {
		got := readLog(t, s, []string{chargenet.EventStatusChanged}, time.Time{}, 1, nil)
		assert.Equal(t, []chargenet.Event{all[1], all[3]}, got)
		got = readLog(t, s, []string{chargenet.EventStatusChanged, chargenet.EventConnectorUpdated}, time.Time{}, 4, nil)
		assert.Equal(t, all, got)
		assert.Empty(t, readLog(t, s, []string{chargenet.EventLocationCreated}, time.Time{}, 4, nil))
		assert.Equal(t, []chargenet.Event{all[3]}, readLog(t, s, []string{chargenet.EventStatusChanged}, time.Time{}, 4, &all[1]),
			"resumed with a type filter")
	})

	t.Run("since", func(t *testing.T) {
		assert.Equal(t, all[2:], readLog(t, s, nil, at(2), 2, nil), "at or after since")
		assert.Equal(t, all[3:], readLog(t, s, nil, at(2).Add(time.Microsecond), 2, nil))
		assert.Equal(t, []chargenet.Event{all[3]}, readLog(t, s, []string{chargenet.EventStatusChanged}, at(2), 5, nil))
		assert.Empty(t, readLog(t, s, nil, at(7), 5, nil))
		assert.Equal(t, all[4:], readLog(t, s, nil, at(2), 2, &all[3]), "resumed with since")
	})

	t.Run("pings are never listed or read", func(t *testing.T) {
		assert.Empty(t, readLog(t, s, []string{chargenet.EventWebhookPing}, time.Time{}, 5, nil))
		_, err := s.Event(ctx, ping.ID)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "eventId")
	})
}

// testEventLogNoMiss runs writers that commit events concurrently, through every kind
// of write transaction, while a reader polls the log, each time resuming after the last
// event it saw. The reader must see every event exactly once, in the log's order.
func testEventLogNoMiss(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	const writers, perWriter = 6, 25
	var (
		wg      sync.WaitGroup
		done    atomic.Bool
		written atomic.Int64
	)
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				at := now()
				switch g % 3 {
				case 0: // a group-committed PATCH
					p := float64(10 + i%50)
					_, err := s.UpdateConnector(ctx, int64(1001+g), 1, chargenet.ConnectorPatch{MaxElectricPower: &p}, "", "", at)
					assert.NoError(t, err)
				case 1: // a location of its own transaction
					l := newLocation(fmt.Sprintf("NOMISS-%d-%d", g, i), at)
					_, _, err := s.PutLocation(ctx, &l, "", at)
					assert.NoError(t, err)
				default: // an EVSE created in its own transaction
					e := postedEVSE(fmt.Sprintf("DE*NMS*E%d%03d", g, i), fmt.Sprintf("LOC-%04d", 30+g), 900, chargenet.StatusAvailable)
					if assert.NoError(t, e.PrepareNew(at)) {
						_, err := s.CreateEVSE(ctx, &e, nil, "", at)
						assert.NoError(t, err)
					}
				}
				written.Add(1)
			}
		})
	}
	var seen []chargenet.Event
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		seek := chargenet.ChangeSeek[int64]{Limit: 7}
		var deadline time.Time // once the writers ended: how long to wait for the rest
		for len(seen) < writers*perWriter {
			page, err := s.ListEvents(ctx, seek, nil, "")
			if !assert.NoError(t, err) {
				return
			}
			seen = append(seen, page...)
			if len(page) > 0 {
				last := page[len(page)-1]
				seek.Pos, seek.Key, seek.HasPos = last.Pos, last.Seq, true
			}
			if done.Load() && len(page) == 0 {
				if deadline.IsZero() {
					deadline = time.Now().Add(logWait)
				} else if time.Now().After(deadline) {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	wg.Wait()
	done.Store(true)
	<-readerDone
	require.Equal(t, int64(writers*perWriter), written.Load())
	all := logUntil(t, s, nil, time.Time{}, writers*perWriter)
	checkLogOrder(t, all)
	assert.Equal(t, eventIDs(all), eventIDs(seen), "the polling reader saw every event once, in the log's order")
}

// testSendTestEvent checks that a test event is queued for its webhook only, in the
// latest version of webhook.ping (PingVersion), and announced, and never for another
// webhook or owner.
func testSendTestEvent(t *testing.T, open Opener) {
	hooks := new(chargenet.Hooks)
	s, _ := demoStoreWith(t, open, Options{Hooks: hooks})
	ctx := t.Context()
	start := now()
	a := NewWebhook("p", start, chargenet.EventStatusChanged)
	a.Subscriptions[0].APIVersion = "1.1"
	b := NewWebhook("p", start, chargenet.EventStatusChanged)
	for _, w := range []*chargenet.Webhook{&a, &b} {
		require.NoError(t, s.CreateWebhook(ctx, w, nil))
	}
	var announced atomic.Int64
	hooks.OnEvents(func() { announced.Add(1) })
	defer hooks.OnEvents(nil)
	ping := chargenet.NewPingEvent(a.ID, a.URL, start)
	require.NoError(t, s.SendTestEvent(ctx, "p", a.ID, ping, start))
	assert.GreaterOrEqual(t, announced.Load(), int64(1), "announced before it returns")
	ds := claimAll(t, s, start)
	require.Len(t, ds, 1, "for the one webhook only")
	d := ds[0]
	assert.Equal(t, a.ID, d.Webhook.ID)
	assert.Equal(t, chargenet.PingVersion, d.APIVersion, "the latest version of webhook.ping")
	assert.Equal(t, 1, d.Attempt)
	assert.Equal(t, ping.ID, d.Event.ID)
	assert.Equal(t, chargenet.EventWebhookPing, d.Event.Type)
	sent, err := wire.EventData(&ping)
	require.NoError(t, err)
	assert.JSONEq(t, `{"webhookId":"`+a.ID+`","url":"`+a.URL+`"}`, string(sent))
	assert.JSONEq(t, string(sent), string(d.Event.Data))
	require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &d, Attempt: &chargenet.DeliveryAttempt{
		Attempt: 1, AttemptedAt: start, Outcome: chargenet.OutcomeSucceeded, HTTPStatus: 204}}))
	attempts, err := s.ListDeliveryAttempts(ctx, "p", a.ID, chargenet.Seek[int64]{Limit: 10})
	require.NoError(t, err)
	require.Len(t, attempts, 1, "its attempt is in the webhook's deliveries")
	assert.Equal(t, ping.ID, attempts[0].EventID)
	assert.Equal(t, chargenet.EventWebhookPing, attempts[0].EventType)

	again := chargenet.NewPingEvent(a.ID, a.URL, start)
	requireError(t, s.SendTestEvent(ctx, "q", a.ID, again, start), chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
	requireError(t, s.SendTestEvent(ctx, "p", "wh_unknown", again, start), chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
	assert.Empty(t, claimAll(t, s, start.Add(time.Hour)), "a refused test queues nothing")
	require.NoError(t, s.SendTestEvent(ctx, "p", a.ID, again, start), "the refusals stored nothing under its id")
}

// testReplayEvents checks that a replay queues the logged events of the webhook's
// subscribed types again, with their ids, in its subscription's versions, within since
// and until, also those still pending for it.
func testReplayEvents(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now().Add(-time.Hour)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Minute) }
	// Before the webhook exists: 0 patch, 1 fault, 2 location, 3 patch, 4 ok.
	patchPower(t, s, 1001, 20, at(0))
	fault(t, s, false, at(1))
	l := newLocation("REPLAY-1", at(2))
	_, _, err := s.PutLocation(ctx, &l, "", at(2))
	require.NoError(t, err)
	patchPower(t, s, 1001, 21, at(3))
	fault(t, s, true, at(4))
	logged := logUntil(t, s, nil, time.Time{}, 5)

	w := NewWebhook("p", start, chargenet.EventConnectorUpdated, chargenet.EventStatusChanged)
	w.Subscriptions[1].APIVersion = "1.1"
	other := NewWebhook("p", start, chargenet.EventConnectorUpdated)
	for _, hook := range []*chargenet.Webhook{&w, &other} {
		require.NoError(t, s.CreateWebhook(ctx, hook, nil))
	}
	replayAt := now()
	replay := func(r chargenet.Replay) int {
		t.Helper()
		n, err := s.ReplayEvents(ctx, "p", w.ID, r, replayAt)
		require.NoError(t, err)
		return n
	}

	n := replay(chargenet.Replay{Since: at(0)})
	assert.Equal(t, 4, n, "every subscribed event; not the location's")
	ds := claimAll(t, s, replayAt)
	require.Len(t, ds, 4, "as many as it counted, for this webhook only")
	want := []chargenet.Event{logged[0], logged[1], logged[3], logged[4]}
	for i, d := range ds {
		assert.Equal(t, w.ID, d.Webhook.ID)
		assert.Equal(t, want[i].ID, d.Event.ID, "the original id, in log order")
		assert.Equal(t, want[i].Type, d.Event.Type)
		assert.JSONEq(t, string(want[i].Data), string(d.Event.Data))
		assert.True(t, want[i].Time.Equal(d.Event.Time), "the original time")
		version := "1.0"
		if d.Event.Type == chargenet.EventStatusChanged {
			version = "1.1"
		}
		assert.Equal(t, version, d.APIVersion, "the subscription's version of %s", d.Event.Type)
	}
	assert.Equal(t, 4, replay(chargenet.Replay{Since: at(0)}), "queued again while the first four are pending: "+
		"their delivery may still fail for good")
	again := claimAll(t, s, replayAt)
	assert.Equal(t, eventIDs(deliveryEvents(ds)), eventIDs(deliveryEvents(again)), "the same events, with the same ids")
	for _, d := range slices.Concat(ds, again) {
		require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &d, Attempt: &chargenet.DeliveryAttempt{
			Attempt: 1, AttemptedAt: replayAt, Outcome: chargenet.OutcomeSucceeded, HTTPStatus: 200}}))
	}
	t.Run("types and until", func(t *testing.T) {
		assert.Equal(t, 2, replay(chargenet.Replay{Since: at(0), Types: []string{chargenet.EventStatusChanged}}))
		assert.Equal(t, 1, replay(chargenet.Replay{Since: at(0), Until: at(1)}), "until is exclusive")
		ds := claimAndAck(t, s, replayAt)
		assert.ElementsMatch(t, []string{logged[1].ID, logged[4].ID, logged[0].ID}, eventIDs(deliveryEvents(ds)))
		assert.Equal(t, 1, replay(chargenet.Replay{Since: at(3), Until: at(4)}))
		assert.Zero(t, replay(chargenet.Replay{Since: at(5)}))
		assert.Zero(t, replay(chargenet.Replay{Since: at(0), Types: []string{chargenet.EventLocationCreated}}), "not subscribed")
		ds = claimAndAck(t, s, replayAt)
		require.Len(t, ds, 1)
		assert.Equal(t, logged[3].ID, ds[0].Event.ID)
	})

	t.Run("errors", func(t *testing.T) {
		_, err := s.ReplayEvents(ctx, "q", w.ID, chargenet.Replay{Since: at(0)}, replayAt)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		_, err = s.ReplayEvents(ctx, "p", "wh_unknown", chargenet.Replay{Since: at(0)}, replayAt)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		assert.Empty(t, claimAll(t, s, replayAt.Add(time.Hour)), "nothing queued")
	})
}

func deliveryEvents(ds []chargenet.Delivery) []chargenet.Event {
	out := make([]chargenet.Event, len(ds))
	for i := range ds {
		out[i] = ds[i].Event
	}
	return out
}

// testPruneEvents checks retention: old events and attempts go, pending deliveries of
// old events (of a disabled webhook, which never claims them) are given up and
// recorded as expired, delivered events stay until the window ends, each kind is
// removed at most limit at a time, and positions never go back after everything was
// pruned.
func testPruneEvents(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	current := now()
	old := current.Add(-3 * time.Hour)
	window := current.Add(-time.Hour)
	on := NewWebhook("p", old, chargenet.EventConnectorUpdated)
	off := NewWebhook("p", old, chargenet.EventConnectorUpdated)
	off.Enabled = false
	for _, w := range []*chargenet.Webhook{&on, &off} {
		require.NoError(t, s.CreateWebhook(ctx, w, nil))
	}
	for i := range 3 {
		patchPower(t, s, 1005, float64(30+i), old.Add(time.Duration(i)*time.Second))
	}
	fault(t, s, false, old) // no subscriber
	delivered := claimAndAck(t, s, old.Add(time.Minute))
	require.Len(t, delivered, 3, "the enabled webhook's; the disabled one's wait")
	patchPower(t, s, 1005, 40, current)
	patchPower(t, s, 1005, 41, current)
	recent := claimAndAck(t, s, current)
	require.Len(t, recent, 2)
	all := logUntil(t, s, nil, time.Time{}, 6)

	p, err := s.PruneEvents(ctx, window, 100)
	require.NoError(t, err)
	assert.Equal(t, chargenet.Pruned{Events: 4, Attempts: 3, Expired: 3}, p)
	assert.Equal(t, eventIDs(all[4:]), eventIDs(readLog(t, s, nil, time.Time{}, 10, nil)),
		"delivered events within the window stay")
	for _, ev := range all[:4] {
		_, err := s.Event(ctx, ev.ID)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "eventId")
	}
	attempts, err := s.ListDeliveryAttempts(ctx, "p", on.ID, chargenet.Seek[int64]{Limit: 10})
	require.NoError(t, err)
	require.Len(t, attempts, 2, "the attempts before the window are gone")
	for _, a := range attempts {
		assert.False(t, a.AttemptedAt.Before(window))
	}
	expired, err := s.ListDeliveryAttempts(ctx, "p", off.ID, chargenet.Seek[int64]{Limit: 10})
	require.NoError(t, err)
	require.Len(t, expired, 3, "each given-up delivery is recorded")
	for i, a := range expired {
		assert.Equal(t, chargenet.OutcomeExpired, a.Outcome)
		assert.Equal(t, all[i].ID, a.EventID)
		assert.Equal(t, chargenet.EventConnectorUpdated, a.EventType)
		assert.Equal(t, 1, a.Attempt)
		assert.Nil(t, a.NextAttemptAt)
		assert.NotEmpty(t, a.Error)
	}
	_, err = s.UpdateWebhook(ctx, "p", off.ID, chargenet.WebhookPatch{Enabled: ptr(true)}, current)
	require.NoError(t, err)
	ds := claimAndAck(t, s, current)
	assert.Equal(t, eventIDs(all[4:]), eventIDs(deliveryEvents(ds)), "re-enabled: only its deliveries within the window remain")

	p, err = s.PruneEvents(ctx, window, 100)
	require.NoError(t, err)
	assert.Zero(t, p, "nothing more to prune")

	t.Run("batches", func(t *testing.T) {
		// Three old events, each pending for b after a failed attempt: three of each kind.
		// The log is emptied first: a store may keep an old event while an event before it
		// in the log is within the window (see chargenet.EventLog).
		require.NoError(t, s.DeleteWebhook(ctx, "p", on.ID))
		require.NoError(t, s.DeleteWebhook(ctx, "p", off.ID))
		p, err := s.PruneEvents(ctx, current.Add(time.Second), 100)
		require.NoError(t, err)
		require.Equal(t, 2, p.Events, "the two recent events, delivered")
		b := NewWebhook("p", old, chargenet.EventConnectorUpdated)
		require.NoError(t, s.CreateWebhook(ctx, &b, nil))
		for i := range 3 {
			patchPower(t, s, 1006, float64(50+i), old.Add(time.Duration(i)*time.Millisecond))
		}
		ds := claimAll(t, s, old.Add(time.Second))
		require.Len(t, ds, 3)
		retry := old.Add(time.Minute)
		for i := range ds {
			require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &ds[i], Attempt: &chargenet.DeliveryAttempt{
				Attempt: 1, AttemptedAt: old, Outcome: chargenet.OutcomeFailed, HTTPStatus: 400, NextAttemptAt: &retry}}))
		}
		got := []chargenet.Pruned{}
		for range 3 {
			p, err := s.PruneEvents(ctx, window, 2)
			require.NoError(t, err)
			got = append(got, p)
		}
		assert.Equal(t, []chargenet.Pruned{{Events: 2, Attempts: 2, Expired: 2}, {Events: 1, Attempts: 1, Expired: 1}, {}}, got)
		attempts, err := s.ListDeliveryAttempts(ctx, "p", b.ID, chargenet.Seek[int64]{Limit: 10})
		require.NoError(t, err)
		require.Len(t, attempts, 3, "the expired ones, made now")
		for _, a := range attempts {
			assert.Equal(t, chargenet.OutcomeExpired, a.Outcome)
			assert.Equal(t, 2, a.Attempt, "after the failed first")
		}
	})

	t.Run("positions never go back", func(t *testing.T) {
		patchPower(t, s, 1006, 58, current)
		patchPower(t, s, 1006, 59, current)
		last := logUntil(t, s, nil, time.Time{}, 2)[1]
		_, err := s.PruneEvents(ctx, current.Add(time.Hour), 100)
		require.NoError(t, err)
		assert.Empty(t, readLog(t, s, nil, time.Time{}, 10, nil), "everything pruned")
		patchPower(t, s, 1006, 60, current)
		next := logUntil(t, s, nil, time.Time{}, 1)[0]
		assert.Greater(t, next.Seq, last.Seq)
		assert.True(t, next.Pos > last.Pos || next.Pos == last.Pos && next.Seq > last.Seq, "after the last position a reader saw")
		assert.Equal(t, []chargenet.Event{next}, readLog(t, s, nil, time.Time{}, 10, &last))
	})
}

// testEventActor checks that every method that changes the network sets its actor on
// the events it records, that the log keeps it, and that ListEvents filters on it.
func testEventActor(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now()
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	power := 40.0
	_, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: &power}, "", "emsp-write", at(0))
	require.NoError(t, err)
	n := chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: "Faulted", ErrorCode: "GroundFailure", Timestamp: at(1)}
	_, err = s.ApplyStatusNotification(ctx, &n, "chargebox:CB-501", at(1))
	require.NoError(t, err)
	l := newLocation("ACT-1", at(2))
	_, _, err = s.PutLocation(ctx, &l, "emsp-write", at(2))
	require.NoError(t, err)
	created, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*ACT*E1", "ACT-1", 900, chargenet.StatusAvailable), at(3)), nil, "ops", at(3))
	require.NoError(t, err)
	_, err = s.ChangeEVSE(ctx, created.UID, func(e *chargenet.EVSE) ([]chargenet.Event, error) { return e.Remove("", at(4)) }, nil, "ops", at(4))
	require.NoError(t, err)
	_, err = s.DeleteLocation(ctx, "ACT-1", "emsp-write", at(5))
	require.NoError(t, err)
	patchPower(t, s, 1003, 41, at(6)) // no actor

	all := logUntil(t, s, nil, time.Time{}, 8)
	actors := make([]string, len(all))
	for i, ev := range all {
		actors[i] = ev.Actor
	}
	assert.Equal(t, []string{"emsp-write", "chargebox:CB-501", "emsp-write", "ops", "ops", "ops", "emsp-write", ""}, actors)
	for _, ev := range all[:7] {
		var data struct{ Actor string }
		require.NoError(t, json.Unmarshal(ev.Data, &data))
		assert.Equal(t, ev.Actor, data.Actor, "%s: the data carries the actor", ev.Type)
	}
	assert.NotContains(t, string(all[7].Data), `"actor"`, "no actor: none in the data")

	for _, who := range []string{"emsp-write", "ops", "chargebox:CB-501", "nobody"} {
		got, err := s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 100}, nil, who)
		require.NoError(t, err)
		var want []string
		for _, ev := range all {
			if ev.Actor == who {
				want = append(want, ev.ID)
			}
		}
		assert.Equal(t, want, nilIfEmpty(eventIDs(got)), "the events of %s, in log order", who)
	}
	got, err := s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 100}, []string{chargenet.EventLocationDeleted}, "emsp-write")
	require.NoError(t, err)
	require.Len(t, got, 1, "type and actor together")
	assert.Equal(t, all[6].ID, got[0].ID)
	got, err = s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 1, Pos: all[0].Pos, Key: all[0].Seq, HasPos: true}, nil, "emsp-write")
	require.NoError(t, err)
	require.Len(t, got, 1, "resumed after a position")
	assert.Equal(t, all[2].ID, got[0].ID)
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
