package storetest

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chargeboxStore returns a store holding the demo inventory, with a webhook subscribed
// to every type (see recorded), as the charge box service.
func chargeboxStore(t *testing.T, open Opener) (chargenet.Store, chargenet.ChargeboxService) {
	t.Helper()
	s, _ := demoStore(t, open)
	subscribeAll(t, s)
	return s, s
}

// at is a time every store keeps exactly (microseconds, UTC).
func at(t time.Time) time.Time { return chargenet.Stamp(t) }

func testChargeboxes(t *testing.T, open Opener) {
	t.Run("Register", func(t *testing.T) { testRegisterChargebox(t, open) })
	t.Run("Connections", func(t *testing.T) { testChargeboxConnections(t, open) })
	t.Run("ReplaceEndsConnection", func(t *testing.T) { testReplaceEndsConnection(t, open) })
	t.Run("Expire", func(t *testing.T) { testExpireConnections(t, open) })
	t.Run("Availability", func(t *testing.T) { testChargeboxAvailability(t, open) })
	t.Run("ConcurrentWithStatus", func(t *testing.T) { testDisconnectBesideStatus(t, open) })
}

func testRegisterChargebox(t *testing.T, open Opener) {
	_, cs := chargeboxStore(t, open)
	ctx, now := t.Context(), at(time.Now())
	epoch := func() int64 {
		n, err := cs.ChargeboxEpoch(ctx)
		require.NoError(t, err)
		return n
	}
	e0 := epoch()
	created, err := cs.RegisterChargebox(ctx, 501, "CB-501", chargenet.HashChargeboxPassword("first-password-0123"), now)
	require.NoError(t, err)
	assert.True(t, created)
	e1 := epoch()
	assert.NotEqual(t, e0, e1, "registering changes the epoch")

	c, err := cs.Chargebox(ctx, 501)
	require.NoError(t, err)
	assert.Equal(t, "CB-501", c.Identity)
	assert.True(t, c.CheckPassword("first-password-0123"))
	assert.Equal(t, now, c.CreatedAt)
	assert.Equal(t, []int64{1001, 1002}, c.EVSEUIDs)
	assert.Equal(t, []chargenet.AvailabilityRequest{}, c.Availability)
	assert.False(t, c.Connected())
	assert.Nil(t, c.Boot)
	assert.Nil(t, c.LastSeenAt)

	created, err = cs.RegisterChargebox(ctx, 501, "CB-501", chargenet.HashChargeboxPassword("second-password-0123"), now.Add(time.Second))
	require.NoError(t, err)
	assert.False(t, created, "a second registration replaces the first")
	assert.NotEqual(t, e1, epoch())
	byID, err := cs.ChargeboxByIdentity(ctx, "CB-501")
	require.NoError(t, err)
	assert.Equal(t, int64(501), byID.ID)
	assert.True(t, byID.CheckPassword("second-password-0123"))
	assert.False(t, byID.CheckPassword("first-password-0123"))
	assert.Equal(t, now, byID.CreatedAt, "replacing keeps the creation time")

	_, err = cs.RegisterChargebox(ctx, 502, "CB-501", chargenet.HashChargeboxPassword("x-password-0123456"), now)
	requireError(t, err, chargenet.ErrConflict, chargenet.CodeConflict, "identity")
	_, err = cs.RegisterChargebox(ctx, 999, "999", chargenet.HashChargeboxPassword("no-evses-yet-01234"), now)
	require.NoError(t, err, "a box may be registered before it has EVSEs")
	c, err = cs.Chargebox(ctx, 999)
	require.NoError(t, err)
	assert.Equal(t, []int64{}, c.EVSEUIDs)

	page, err := cs.ListChargeboxes(ctx, chargenet.Seek[int64]{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 2)
	assert.Equal(t, int64(501), page[0].ID)
	assert.Equal(t, []int64{1001, 1002}, page[0].EVSEUIDs)
	assert.Equal(t, int64(999), page[1].ID)
	page, err = cs.ListChargeboxes(ctx, chargenet.Seek[int64]{Key: 501, HasKey: true, Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, int64(999), page[0].ID)
	page, err = cs.ListChargeboxes(ctx, chargenet.Seek[int64]{Key: 999, HasKey: true, Backward: true, Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, int64(501), page[0].ID)

	e2 := epoch()
	require.NoError(t, cs.RevokeChargebox(ctx, 501, now))
	assert.NotEqual(t, e2, epoch())
	_, err = cs.Chargebox(ctx, 501)
	requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId")
	_, err = cs.ChargeboxByIdentity(ctx, "CB-501")
	requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "identity")
	requireError(t, cs.RevokeChargebox(ctx, 501, now), chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId")
	_, err = cs.RegisterChargebox(ctx, 502, "CB-501", chargenet.HashChargeboxPassword("x-password-0123456"), now)
	require.NoError(t, err, "a revoked box's identity is free again")
}

// connectionEvents returns the chargebox.* events and the evse.status.changed events of
// a connection recorded since the last call (see recorded), sorted, as "type box
// protocol reason" and "type source status uid". It checks that the log holds none of
// the chargebox.* events, and that each has the box's actor (chargenet.ChargeboxActor)
// in its data, and as the logged event's Actor.
func connectionEvents(t *testing.T, s chargenet.Store) []string {
	t.Helper()
	var out []string
	for _, ev := range recorded(t, s) {
		var d struct {
			UID         int64  `json:"uid"`
			ChargeboxID int64  `json:"chargeboxId"`
			Status      string `json:"status"`
			Source      string `json:"source"`
			Reason      string `json:"reason"`
			Protocol    string `json:"protocol"`
			Actor       string `json:"actor"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		switch {
		case ev.Type == chargenet.EventStatusChanged && d.Source == chargenet.SourceConnection:
			out = append(out, ev.Type+" "+d.Source+" "+d.Status+" "+itoa(d.UID))
			logged, err := s.Event(t.Context(), ev.ID)
			require.NoError(t, err)
			assert.Equal(t, chargenet.ChargeboxActor(itoa(d.ChargeboxID)), logged.Actor, "the logged event's actor")
		case ev.Type == chargenet.EventChargeboxConnected || ev.Type == chargenet.EventChargeboxDisconnected:
			out = append(out, ev.Type+" "+itoa(d.ChargeboxID)+" "+d.Protocol+" "+d.Reason)
			_, err := s.Event(t.Context(), ev.ID)
			requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "eventId")
		default:
			continue
		}
		assert.Equal(t, chargenet.ChargeboxActor(itoa(d.ChargeboxID)), d.Actor, "%s: the box's actor", ev.Type)
	}
	slices.Sort(out)
	return out
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func testChargeboxConnections(t *testing.T, open Opener) {
	s, cs := chargeboxStore(t, open)
	ctx, now := t.Context(), at(time.Now())
	_, err := cs.RegisterChargebox(ctx, 501, "501", chargenet.HashChargeboxPassword("password-0123456789"), now)
	require.NoError(t, err)
	// EVSE 1002 is held INOPERATIVE by the operator; 1001 is AVAILABLE.
	inoperative := chargenet.StatusInoperative
	_, err = s.ChangeEVSE(ctx, 1002, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		return e.ApplyPatch(chargenet.EVSEPatch{Status: &inoperative}, "", now)
	}, nil, "ops", now)
	require.NoError(t, err)
	before, err := s.EVSE(ctx, 1001)
	require.NoError(t, err)
	require.Equal(t, chargenet.StatusAvailable, before.Status)

	t1 := now.Add(time.Second)
	boot := &chargenet.BootInfo{Vendor: "ACME", Model: "Wallbox 22", SerialNumber: "SN-1", At: t1}
	require.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: 501, Session: "s1", Protocol: chargenet.ProtocolOCPP16, At: t1},
		{Kind: chargenet.Booted, Chargebox: 501, Session: "s1", Boot: boot, At: t1},
		{Kind: chargenet.Connected, Chargebox: 777, Session: "x", Protocol: chargenet.ProtocolOCPP16, At: t1}, // not registered
	}))
	c, err := cs.Chargebox(ctx, 501)
	require.NoError(t, err)
	assert.True(t, c.Connected())
	assert.Equal(t, "s1", c.Session)
	assert.Equal(t, chargenet.ProtocolOCPP16, c.Protocol)
	require.NotNil(t, c.ConnectedAt)
	assert.Equal(t, t1, *c.ConnectedAt)
	require.NotNil(t, c.LastSeenAt)
	assert.Equal(t, t1, *c.LastSeenAt)
	require.NotNil(t, c.Boot)
	assert.Equal(t, *boot, *c.Boot)

	t2 := now.Add(2 * time.Second)
	require.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Seen, Chargebox: 501, Session: "s1", At: t2},
		{Kind: chargenet.Seen, Chargebox: 501, Session: "s1", At: t1},                   // older: ignored
		{Kind: chargenet.Seen, Chargebox: 501, Session: "other", At: t2.Add(time.Hour)}, // not its session
		{Kind: chargenet.Booted, Chargebox: 501, Session: "other", Boot: &chargenet.BootInfo{Vendor: "X", Model: "Y", At: t2}},
		{Kind: chargenet.Disconnected, Chargebox: 501, Session: "other", Reason: chargenet.ReasonClosed, At: t2},
	}))
	c, err = cs.Chargebox(ctx, 501)
	require.NoError(t, err)
	assert.True(t, c.Connected(), "another session's end is not this one's")
	assert.Equal(t, t2, *c.LastSeenAt)
	assert.Equal(t, "ACME", c.Boot.Vendor)

	t3 := now.Add(3 * time.Second)
	require.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Disconnected, Chargebox: 501, Session: "s1", Reason: chargenet.ReasonClosed, At: t3},
		{Kind: chargenet.Disconnected, Chargebox: 501, Session: "s1", Reason: chargenet.ReasonClosed, At: t3}, // recorded already
	}))
	c, err = cs.Chargebox(ctx, 501)
	require.NoError(t, err)
	assert.False(t, c.Connected())
	assert.Nil(t, c.ConnectedAt)
	assert.Equal(t, t2, *c.LastSeenAt, "last seen stays")
	after, err := s.EVSE(ctx, 1001)
	require.NoError(t, err)
	assert.Equal(t, chargenet.StatusUnknown, after.Status)
	assert.Equal(t, before.Version+1, after.Version)
	assert.Equal(t, t3, after.LastUpdated)
	held, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, chargenet.StatusInoperative, held.Status, "the operator's INOPERATIVE stays")
	assert.Equal(t, []string{
		"chargebox.connected 501 ocpp1.6 ",
		"chargebox.disconnected 501 ocpp1.6 closed",
		"evse.status.changed connection UNKNOWN 1001",
	}, connectionEvents(t, s))
	logged := logUntil(t, s, nil, time.Time{}, 2)
	assert.Equal(t, []string{chargenet.EventStatusChanged, chargenet.EventStatusChanged}, []string{logged[0].Type, logged[1].Type},
		"the log holds the operator's change and the connection's, and no chargebox.* event")

	// The box's notification after it reconnects restores the status.
	t4 := now.Add(4 * time.Second)
	require.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: 501, Session: "s2", Protocol: chargenet.ProtocolOCPP201, At: t4}}))
	res, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 501, Protocol: chargenet.ProtocolOCPP201,
		EVSE: 1, ConnectorID: 1, Status: "Available", ErrorCode: "NoError", Timestamp: t4}, "chargebox:501", t4)
	require.NoError(t, err)
	assert.True(t, res.Applied)
	restored, err := s.EVSE(ctx, 1001)
	require.NoError(t, err)
	assert.Equal(t, chargenet.StatusAvailable, restored.Status)
	since := recorded(t, s)
	require.Len(t, since, 2, "chargebox.connected and the restoring evse.status.changed")
	for _, ev := range since {
		var d struct{ Actor string }
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		assert.Equal(t, "chargebox:501", d.Actor, "%s: the box's actor", ev.Type)
	}
	c, err = cs.Chargebox(ctx, 501)
	require.NoError(t, err)
	assert.Equal(t, chargenet.ProtocolOCPP201, c.Protocol)
}

func testReplaceEndsConnection(t *testing.T, open Opener) {
	s, cs := chargeboxStore(t, open)
	ctx, now := t.Context(), at(time.Now())
	_, err := cs.RegisterChargebox(ctx, 503, "503", chargenet.HashChargeboxPassword("password-0123456789"), now)
	require.NoError(t, err)
	require.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: 503, Session: "s1", Protocol: chargenet.ProtocolOCPP16, At: now}}))
	later := now.Add(time.Second)
	_, err = cs.RegisterChargebox(ctx, 503, "503", chargenet.HashChargeboxPassword("password-new-0123456"), later)
	require.NoError(t, err)
	c, err := cs.Chargebox(ctx, 503)
	require.NoError(t, err)
	assert.False(t, c.Connected(), "a new password ends the recorded connection")
	got := connectionEvents(t, s)
	assert.Contains(t, got, "chargebox.disconnected 503 ocpp1.6 revoked")
	for _, uid := range c.EVSEUIDs {
		e, err := s.EVSE(ctx, uid)
		require.NoError(t, err)
		if _, held := e.Held(); !held {
			assert.Equal(t, chargenet.StatusUnknown, e.Status, "EVSE %d", uid)
		}
	}
	// Revoking a connected box ends its connection too.
	again := later.Add(time.Second)
	require.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: 503, Session: "s2", Protocol: chargenet.ProtocolOCPP16, At: again}}))
	require.NoError(t, cs.RevokeChargebox(ctx, 503, again.Add(time.Second)))
	assert.Equal(t, []string{"chargebox.connected 503 ocpp1.6 ", "chargebox.disconnected 503 ocpp1.6 revoked"}, connectionEvents(t, s))
}

func testExpireConnections(t *testing.T, open Opener) {
	s, cs := chargeboxStore(t, open)
	ctx, now := t.Context(), at(time.Now())
	for _, id := range []int64{501, 502, 504} {
		_, err := cs.RegisterChargebox(ctx, id, itoa(id), chargenet.HashChargeboxPassword("password-0123456789"), now)
		require.NoError(t, err)
	}
	require.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: 501, Session: "a", Protocol: chargenet.ProtocolOCPP16, At: now.Add(-10 * time.Minute)},
		{Kind: chargenet.Connected, Chargebox: 502, Session: "b", Protocol: chargenet.ProtocolOCPP16, At: now.Add(-10 * time.Minute)},
		{Kind: chargenet.Seen, Chargebox: 502, Session: "b", At: now},
		{Kind: chargenet.Connected, Chargebox: 504, Session: "c", Protocol: chargenet.ProtocolOCPP16, At: now.Add(-10 * time.Minute)},
	}))
	ids, err := cs.ExpireConnections(ctx, now.Add(-5*time.Minute), now, 1)
	require.NoError(t, err)
	assert.Equal(t, []int64{501}, ids, "at most limit, in id order")
	ids, err = cs.ExpireConnections(ctx, now.Add(-5*time.Minute), now, 10)
	require.NoError(t, err)
	assert.Equal(t, []int64{504}, ids, "502 was seen since")
	ids, err = cs.ExpireConnections(ctx, now.Add(-5*time.Minute), now, 10)
	require.NoError(t, err)
	assert.Empty(t, ids)
	for id, connected := range map[int64]bool{501: false, 502: true, 504: false} {
		c, err := cs.Chargebox(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, connected, c.Connected(), "box %d", id)
	}
	got := connectionEvents(t, s)
	assert.Contains(t, got, "chargebox.disconnected 501 ocpp1.6 offline")
	assert.Contains(t, got, "chargebox.disconnected 504 ocpp1.6 offline")
	assert.NotContains(t, got, "chargebox.disconnected 502 ocpp1.6 offline")
}

func testChargeboxAvailability(t *testing.T, open Opener) {
	s, cs := chargeboxStore(t, open)
	ctx, now := t.Context(), at(time.Now())
	_, err := cs.OweAvailability(ctx, 501, now)
	requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId")
	_, err = cs.RegisterChargebox(ctx, 501, "501", chargenet.HashChargeboxPassword("password-0123456789"), now)
	require.NoError(t, err)
	owed, err := cs.OweAvailability(ctx, 501, now)
	require.NoError(t, err)
	assert.Empty(t, owed, "boxes start operative")

	set := func(uid int64, st chargenet.EvseStatus, when time.Time) {
		_, err := s.ChangeEVSE(ctx, uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.ApplyPatch(chargenet.EVSEPatch{Status: &st}, "", when)
		}, nil, "ops", when)
		require.NoError(t, err)
	}
	t1 := now.Add(time.Second)
	set(1002, chargenet.StatusInoperative, t1)
	owed, err = cs.OweAvailability(ctx, 501, t1)
	require.NoError(t, err)
	want := chargenet.AvailabilityRequest{EVSEUID: 1002, ChargeboxID: 501, State: chargenet.Inoperative, RequestedAt: t1, Answer: chargenet.AnswerPending}
	assert.Equal(t, []chargenet.AvailabilityRequest{want}, owed)
	again, err := cs.OweAvailability(ctx, 501, t1.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, owed, again, "still owed, as first asked")
	pending, err := cs.PendingAvailability(ctx)
	require.NoError(t, err)
	assert.Equal(t, owed, pending)

	require.NoError(t, cs.AnswerAvailability(ctx, 1002, t1.Add(-time.Second), chargenet.AnswerRejected, t1), "an older request's answer changes nothing")
	t2 := now.Add(2 * time.Second)
	require.NoError(t, cs.AnswerAvailability(ctx, 1002, t1, chargenet.AnswerAccepted, t2))
	require.NoError(t, cs.AnswerAvailability(ctx, 1002, t1, chargenet.AnswerRejected, t2), "a second answer changes nothing")
	c, err := cs.Chargebox(ctx, 501)
	require.NoError(t, err)
	want.Answer, want.AnsweredAt = chargenet.AnswerAccepted, &t2
	assert.Equal(t, []chargenet.AvailabilityRequest{want}, c.Availability)
	owed, err = cs.OweAvailability(ctx, 501, t2)
	require.NoError(t, err)
	assert.Empty(t, owed)
	pending, err = cs.PendingAvailability(ctx)
	require.NoError(t, err)
	assert.Empty(t, pending)

	t3 := now.Add(3 * time.Second)
	set(1002, chargenet.StatusAvailable, t3)
	owed, err = cs.OweAvailability(ctx, 501, t3)
	require.NoError(t, err)
	assert.Equal(t, []chargenet.AvailabilityRequest{{EVSEUID: 1002, ChargeboxID: 501, State: chargenet.Operative, RequestedAt: t3,
		Answer: chargenet.AnswerPending}}, owed)
	require.NoError(t, cs.RevokeChargebox(ctx, 501, t3))
	pending, err = cs.PendingAvailability(ctx)
	require.NoError(t, err)
	assert.Empty(t, pending, "a revoked box owes nothing")
}

// testDisconnectBesideStatus ends connections while status notifications of the same
// boxes commit, and checks that every EVSE ends as the last change committed left it.
func testDisconnectBesideStatus(t *testing.T, open Opener) {
	s, cs := chargeboxStore(t, open)
	ctx, now := t.Context(), at(time.Now())
	boxes := []int64{501, 502, 503, 504}
	for _, id := range boxes {
		_, err := cs.RegisterChargebox(ctx, id, itoa(id), chargenet.HashChargeboxPassword("password-0123456789"), now)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for round := range 10 {
		for _, id := range boxes {
			wg.Add(2)
			session := itoa(int64(round))
			go func() {
				defer wg.Done()
				assert.NoError(t, cs.RecordConnections(ctx, []chargenet.ConnectionChange{
					{Kind: chargenet.Connected, Chargebox: id, Session: session, Protocol: chargenet.ProtocolOCPP16, At: at(time.Now())},
					{Kind: chargenet.Disconnected, Chargebox: id, Session: session, Reason: chargenet.ReasonClosed, At: at(time.Now())},
				}))
			}()
			go func() {
				defer wg.Done()
				_, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: id, ConnectorID: 0,
					Status: "Available", ErrorCode: "NoError", Timestamp: at(time.Now())}, chargenet.ChargeboxActor(itoa(id)), at(time.Now()))
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
	}
	// Every change made an event with the EVSE's new version: no two changes computed
	// the same version (one lost), and the versions run without a gap to the EVSE's. A
	// reader of the log sees an event once no earlier transaction can still commit
	// (docs/internals.md), which another test's transaction on the same PostgreSQL
	// cluster can hold back for a moment: the log is read until it holds the last
	// versions, or logWait has passed.
	var versions map[int64][]int64
	current := map[int64]int64{}
	for deadline := time.Now().Add(logWait); ; time.Sleep(20 * time.Millisecond) {
		events := readLog(t, s, []string{chargenet.EventStatusChanged}, now, chargenet.MaxPageSize, nil)
		versions = map[int64][]int64{}
		for _, ev := range events {
			var d struct{ UID, Version int64 }
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			versions[d.UID] = append(versions[d.UID], d.Version)
		}
		caughtUp := len(versions) > 0
		for uid, vs := range versions {
			slices.Sort(vs)
			if _, ok := current[uid]; !ok {
				e, err := s.EVSE(ctx, uid)
				require.NoError(t, err)
				current[uid] = e.Version
			}
			caughtUp = caughtUp && vs[len(vs)-1] == current[uid]
		}
		if caughtUp || time.Now().After(deadline) {
			break
		}
	}
	require.NotEmpty(t, versions)
	for uid, vs := range versions {
		assert.Equal(t, current[uid], vs[len(vs)-1], "EVSE %d: its last change is logged", uid)
		for i := 1; i < len(vs); i++ {
			assert.Equal(t, vs[i-1]+1, vs[i], "EVSE %d: versions %v", uid, vs)
		}
	}
}
