package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The life cycle of the inventory: EVSEs created, changed by the operator and removed,
// locations put and deleted. In the demo inventory, EVSEs 1001..1040 are two at each of
// LOC-0001..LOC-0020 (1001 and 1002 at LOC-0001, charge box 501); LOC-0021..LOC-0120
// have none. 1001 is AVAILABLE with one AC connector, 1002 CHARGING with two DC ones,
// 1004 has four connectors, the fourth deleted, and 1008 is INOPERATIVE, as imported
// (no operator hold).

// subscribeAll creates a webhook subscribed to every event type a webhook can subscribe
// to (all but webhook.ping), so that every event a write records becomes a delivery
// that recorded returns.
func subscribeAll(t testing.TB, s chargenet.Store) {
	t.Helper()
	catalogue, err := chargenet.EventTypes()
	require.NoError(t, err)
	var types []string
	for _, et := range catalogue {
		if et.Type != chargenet.EventWebhookPing {
			types = append(types, et.Type)
		}
	}
	slices.Sort(types)
	w := NewWebhook("lifecycle", now(), types...)
	require.NoError(t, s.CreateWebhook(t.Context(), &w, nil))
}

// recorded claims and acknowledges every delivery due within two days and returns
// their events: with subscribeAll, the events recorded since the last call.
func recorded(t testing.TB, s chargenet.Store) []chargenet.Event {
	t.Helper()
	ds := claimAndAck(t, s, now().Add(48*time.Hour))
	out := make([]chargenet.Event, len(ds))
	for i := range ds {
		out[i] = ds[i].Event
	}
	return out
}

// assertUpdatedEvent checks that ev is an evse.updated event of e as it is, without
// previousLocationId.
func assertUpdatedEvent(t *testing.T, ev chargenet.Event, e *chargenet.EVSE) {
	t.Helper()
	var data struct {
		UID                int64           `json:"uid"`
		Version            int64           `json:"version"`
		EVSE               json.RawMessage `json:"evse"`
		PreviousLocationID *string         `json:"previousLocationId"`
	}
	require.NoError(t, json.Unmarshal(ev.Data, &data))
	assert.Equal(t, chargenet.EventEVSEUpdated, ev.Type)
	assert.Equal(t, e.UID, data.UID)
	assert.Equal(t, e.Version, data.Version)
	assert.Nil(t, data.PreviousLocationID, "the EVSE did not move")
	assert.JSONEq(t, inEvent(t, e), string(data.EVSE))
}

// inEvent returns doc as event data embeds it: without the version, which the event's
// payload carries beside it.
func inEvent(t testing.TB, v any) string {
	t.Helper()
	var doc []byte
	var err error
	switch v := v.(type) {
	case *chargenet.EVSE:
		doc, err = wire.EncodeEVSE(v)
	case *chargenet.Location:
		doc, err = wire.EncodeLocation(v)
	default:
		t.Fatalf("inEvent: %T", v)
	}
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(doc, &m))
	require.Contains(t, m, "version", "answers show the version")
	delete(m, "version")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

func eventIDs(events []chargenet.Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.ID
	}
	return out
}

func eventTypes(events []chargenet.Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.Type
	}
	return out
}

// public returns a deep copy of e without the fields the contract does not show
// (OperatorHold and the status times), which a store's reads may leave zero.
func public(e chargenet.EVSE) chargenet.EVSE {
	e = cloneEVSE(e)
	e.OperatorHold, e.StatusReportedAt = false, time.Time{}
	for i := range e.Connectors {
		e.Connectors[i].StatusReportedAt = time.Time{}
	}
	return e
}

// publicSnapshot returns snap with public EVSEs.
func publicSnapshot(snap snapshot) snapshot {
	out := snapshot{Locations: sortedLocations(&chargenet.Inventory{Locations: snap.Locations}), EVSEs: make([]chargenet.EVSE, len(snap.EVSEs))}
	for i := range snap.EVSEs {
		out.EVSEs[i] = public(snap.EVSEs[i])
	}
	return out
}

// assertSameJSON checks that two EVSEs have the same contract JSON.
func assertSameJSON(t testing.TB, want, got *chargenet.EVSE, msgAndArgs ...any) {
	t.Helper()
	a, err := wire.EncodeEVSE(want)
	require.NoError(t, err)
	b, err := wire.EncodeEVSE(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(a), string(b), msgAndArgs...)
}

// postedEVSE returns an EVSE as a client creates it: no uid or version, status as
// given (empty for the default), two AC connectors given in reverse id order.
func postedEVSE(evseID, locationID string, chargebox int64, status chargenet.EvseStatus) chargenet.EVSE {
	return chargenet.EVSE{
		EvseID: evseID, ChargeboxID: chargebox, LocationID: locationID, Status: status,
		Connectors: []chargenet.Connector{
			{ID: 2, Standard: chargenet.StandardIEC62196T1, Format: chargenet.FormatCable, PowerType: chargenet.PowerAC1Phase,
				MaxElectricPower: 7.4, MaxAmperage: 32, MaxVoltage: 230},
			{ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
				MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{"AC-STANDARD"}},
		},
	}
}

// prepared returns e as (*chargenet.EVSE).PrepareNew at at leaves it.
func prepared(t testing.TB, e chargenet.EVSE, at time.Time) *chargenet.EVSE {
	t.Helper()
	require.NoError(t, e.PrepareNew(at))
	return &e
}

// acConnector is a valid connector to add to an EVSE.
func acConnector() chargenet.Connector {
	return chargenet.Connector{Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
		MaxElectricPower: 11, MaxAmperage: 16, MaxVoltage: 400, TariffIDs: []string{"AC-SLOW"}}
}

// evseChange is one of the domain's changes of an EVSE, as a ChangeEVSE caller makes it.
type evseChange func(e *chargenet.EVSE, at time.Time) ([]chargenet.Event, error)

func patchEVSE(p chargenet.EVSEPatch, ifMatch string) evseChange {
	return func(e *chargenet.EVSE, at time.Time) ([]chargenet.Event, error) { return e.ApplyPatch(p, ifMatch, at) }
}

func patchStatus(st chargenet.EvseStatus) evseChange {
	return patchEVSE(chargenet.EVSEPatch{Status: &st}, "")
}

func removeEVSE(ifMatch string) evseChange {
	return func(e *chargenet.EVSE, at time.Time) ([]chargenet.Event, error) { return e.Remove(ifMatch, at) }
}

func addConnector(c chargenet.Connector) evseChange {
	return func(e *chargenet.EVSE, at time.Time) ([]chargenet.Event, error) { return e.AddConnector(c, "", at) }
}

func deleteConnector(id int64) evseChange {
	return func(e *chargenet.EVSE, at time.Time) ([]chargenet.Event, error) { return e.DeleteConnector(id, "", at) }
}

// change applies c to EVSE uid through ChangeEVSE at at, and returns the EVSE, the
// events c returned and the error.
func change(t testing.TB, s chargenet.Store, uid int64, c evseChange, at time.Time) (*chargenet.EVSE, []chargenet.Event, error) {
	t.Helper()
	var events []chargenet.Event
	e, err := s.ChangeEVSE(t.Context(), uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		var err error
		events, err = c(e, at)
		return events, err
	}, nil, "",

		at)

	return e, events, err
}

// mustChange is change for a set-up that must succeed.
func mustChange(t testing.TB, s chargenet.Store, uid int64, c evseChange, at time.Time) *chargenet.EVSE {
	t.Helper()
	e, _, err := change(t, s, uid, c, at)
	require.NoError(t, err)
	return e
}

// afterChange returns before with EVSE e as changed at at: its location is touched
// (chargenet.Location.Touch), and when it moved from location from to e.LocationID,
// both locations list it or no longer, and both are touched.
func afterChange(before snapshot, e chargenet.EVSE, from string, at time.Time) snapshot {
	out := snapshot{Locations: sortedLocations(&chargenet.Inventory{Locations: before.Locations}), EVSEs: make([]chargenet.EVSE, 0, len(before.EVSEs)+1)}
	found := false
	for _, b := range before.EVSEs {
		if b.UID == e.UID {
			b, found = e, true
		}
		out.EVSEs = append(out.EVSEs, cloneEVSE(b))
	}
	if !found {
		out.EVSEs = append(out.EVSEs, cloneEVSE(e))
		slices.SortFunc(out.EVSEs, func(a, b chargenet.EVSE) int { return compare(a.UID, b.UID) })
	}
	for i := range out.Locations {
		l := &out.Locations[i]
		switch {
		case l.ID == e.LocationID && from == e.LocationID:
			l.Touch(at)
		case l.ID == from:
			l.EvseUIDs = slices.DeleteFunc(l.EvseUIDs, func(u int64) bool { return u == e.UID })
			l.Touch(at)
		case l.ID == e.LocationID:
			l.EvseUIDs = append(l.EvseUIDs, e.UID)
			slices.Sort(l.EvseUIDs)
			l.Touch(at)
		}
	}
	return out
}

// checkDocs checks that the document of EVSE uid and those of the locations ids that
// are not deleted are the JSON of what the store reads.
func checkDocs(t testing.TB, s chargenet.Store, uid int64, ids ...string) {
	t.Helper()
	ctx := t.Context()
	e, err := s.EVSE(ctx, uid)
	require.NoError(t, err)
	want, err := wire.EncodeEVSE(e)
	require.NoError(t, err)
	doc, version, err := s.EVSEDoc(ctx, uid)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(doc), "the document of EVSE %d", uid)
	assert.Equal(t, e.Version, version, "the document's version of EVSE %d", uid)
	checkLocationDocs(t, s, ids...)
}

// checkLocationDocs checks that the documents of the locations ids that are not deleted
// are the JSON of what the store reads.
func checkLocationDocs(t testing.TB, s chargenet.Store, ids ...string) {
	t.Helper()
	ctx := t.Context()
	for _, id := range ids {
		if id == "" {
			continue
		}
		l := location(t, s, id)
		if l.DeletedAt != nil {
			continue
		}
		want, err := wire.EncodeLocation(l)
		require.NoError(t, err)
		// Backward from just after id: id itself is the first.
		docs, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Key: id + "\x00", HasKey: true, Backward: true, Limit: 1})
		require.NoError(t, err)
		require.Len(t, docs, 1)
		assert.Equal(t, id, docs[0].ID)
		assert.JSONEq(t, string(want), string(docs[0].JSON), "the document of location %s", id)
	}
}

// location reads a location that must exist.
func location(t testing.TB, s chargenet.Store, id string) *chargenet.Location {
	t.Helper()
	l, err := s.Location(t.Context(), id)
	require.NoError(t, err)
	return l
}

func testCreateEVSE(t *testing.T, open Opener) {
	hooks := new(chargenet.Hooks)
	s, _ := demoStoreWith(t, open, Options{Hooks: hooks})
	ctx := t.Context()
	subscribeAll(t, s)
	var announced atomic.Int64
	hooks.OnEvents(func() { announced.Add(1) })

	tests := []struct {
		name   string
		posted chargenet.EVSE
		uid    int64
		uids   []int64 // of its location afterwards
	}{
		{"PLANNED by default, at a location without EVSEs", postedEVSE("DE*TST*E9001", "LOC-0021", 900, ""), 1041, []int64{1041}},
		{"INOPERATIVE, beside imported EVSEs", postedEVSE("DE*TST*E9002", "LOC-0001", 901, chargenet.StatusInoperative), 1042, []int64{1001, 1002, 1042}},
		{"AVAILABLE, beside a created EVSE", postedEVSE("DE*TST*E9003", "LOC-0021", 900, chargenet.StatusAvailable), 1043, []int64{1041, 1043}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := takeSnapshot(t, s)
			at := now()
			e := prepared(t, tt.posted, at)
			want := cloneEVSE(*e)
			want.UID = tt.uid
			got, err := s.CreateEVSE(ctx, e, nil, "", at)
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, public(want), public(*got), "the EVSE as stored: the next uid, the rest as prepared")
			assert.Equal(t, int64(1), got.Version)
			assert.Equal(t, at, got.LastUpdated)
			assert.Equal(t, tt.posted.Status == chargenet.StatusInoperative, got.OperatorHold, "the operator's hold as prepared")

			reread, err := s.EVSE(ctx, tt.uid)
			require.NoError(t, err)
			assert.Equal(t, public(*got), public(*reread), "EVSE reads what CreateEVSE returned")
			assertSameJSON(t, got, reread)

			loc := location(t, s, tt.posted.LocationID)
			assert.Equal(t, tt.uids, loc.EvseUIDs, "the location lists the new EVSE")
			assert.Equal(t, at, loc.LastUpdated, "the location's LastUpdated is the create's time")
			assert.Equal(t, publicSnapshot(afterChange(before, *got, "", at)), publicSnapshot(takeSnapshot(t, s)),
				"the new EVSE and its location's change, nothing else")
			checkDocs(t, s, tt.uid, tt.posted.LocationID)

			events := recorded(t, s)
			require.Len(t, events, 1)
			assert.Equal(t, chargenet.EventEVSECreated, events[0].Type)
			assert.True(t, at.Equal(events[0].Time), "event time %v is the create's %v", events[0].Time, at)
			var data struct {
				UID     int64           `json:"uid"`
				Version int64           `json:"version"`
				EVSE    json.RawMessage `json:"evse"`
			}
			require.NoError(t, json.Unmarshal(events[0].Data, &data))
			assert.Equal(t, tt.uid, data.UID)
			assert.Equal(t, int64(1), data.Version)
			assert.JSONEq(t, inEvent(t, got), string(data.EVSE), "the event carries the EVSE as stored")
			assert.Equal(t, int64(i+1), announced.Load(), "each create with a subscriber is announced")
		})
	}

	// A deleted location and a REMOVED EVSE (the highest uid) for the cases below.
	gone := newLocation("GONE", now())
	_, _, err := s.PutLocation(ctx, &gone, "", now())
	require.NoError(t, err)
	_, err = s.DeleteLocation(ctx, "GONE", "", now())
	require.NoError(t, err)
	mustChange(t, s, 1043, removeEVSE(""), now())
	recorded(t, s)

	t.Run("refused", func(t *testing.T) {
		errTests := []struct {
			name               string
			posted             chargenet.EVSE
			kind               error
			code, param, inMsg string
		}{
			{"no such location", postedEVSE("DE*TST*E9101", "LOC-9999", 900, ""),
				chargenet.ErrInvalid, chargenet.CodeInvalidBody, "locationId", "LOC-9999"},
			{"deleted location", postedEVSE("DE*TST*E9102", "GONE", 900, ""),
				chargenet.ErrConflict, chargenet.CodeLocationDeleted, "locationId", "GONE"},
			{"evseId of an imported EVSE", postedEVSE("DE*CNT*E1001*1", "LOC-0021", 900, ""),
				chargenet.ErrConflict, chargenet.CodeConflict, "evseId", "DE*CNT*E1001*1"},
			{"evseId of a created EVSE", postedEVSE("DE*TST*E9001", "LOC-0030", 900, ""),
				chargenet.ErrConflict, chargenet.CodeConflict, "evseId", "DE*TST*E9001"},
			{"evseId of a REMOVED EVSE", postedEVSE("DE*TST*E9003", "LOC-0030", 900, ""),
				chargenet.ErrConflict, chargenet.CodeConflict, "evseId", "DE*TST*E9003"},
		}
		for _, tt := range errTests {
			t.Run(tt.name, func(t *testing.T) {
				before := takeSnapshot(t, s)
				got, err := s.CreateEVSE(ctx, prepared(t, tt.posted, now()), nil, "", now())
				assert.Nil(t, got)
				msg := requireError(t, err, tt.kind, tt.code, tt.param)
				assert.Contains(t, msg, tt.inMsg)
				assert.Equal(t, before, takeSnapshot(t, s), "nothing changed")
				assert.Empty(t, recorded(t, s), "no event")
			})
		}
	})

	t.Run("the uid after a REMOVED one", func(t *testing.T) {
		got, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9004", "LOC-0021", 900, ""), now()), nil, "", now())
		require.NoError(t, err)
		assert.Equal(t, int64(1044), got.UID, "REMOVED EVSE 1043 keeps its uid")
		assert.Equal(t, []int64{1041, 1043, 1044}, location(t, s, "LOC-0021").EvseUIDs, "REMOVED EVSEs stay listed")
		recorded(t, s)
	})

	t.Run("concurrent creates get distinct uids", func(t *testing.T) {
		const n = 8
		evses := make([]*chargenet.EVSE, n) // each at a location of its own: nothing else orders them
		for i := range evses {
			evses[i] = prepared(t, postedEVSE(fmt.Sprintf("DE*TST*EC%d", i), fmt.Sprintf("LOC-%04d", 22+i), 950, ""), now())
		}
		results := make([]*chargenet.EVSE, n)
		errs := make([]error, n)
		atOnce(n, func(i int) { results[i], errs[i] = s.CreateEVSE(ctx, evses[i], nil, "", time.Now()) })
		var uids []int64
		for i := range results {
			require.NoError(t, errs[i], "create %d", i)
			assert.Equal(t, evses[i].EvseID, results[i].EvseID)
			uids = append(uids, results[i].UID)
			reread, err := s.EVSE(ctx, results[i].UID)
			require.NoError(t, err)
			assert.Equal(t, public(*results[i]), public(*reread))
			assert.Equal(t, []int64{results[i].UID}, location(t, s, evses[i].LocationID).EvseUIDs)
		}
		slices.Sort(uids)
		want := make([]int64, n)
		for i := range want {
			want[i] = 1045 + int64(i)
		}
		assert.Equal(t, want, uids, "the next n uids, each once")
		assert.Len(t, recorded(t, s), n, "one evse.created each")
	})
}

func testChangeEVSE(t *testing.T, open Opener) {
	tests := []struct {
		name   string
		uid    int64
		change evseChange
		events []string // types of the events recorded
		hold   bool     // the operator's hold afterwards
		check  func(t *testing.T, e *chargenet.EVSE, at time.Time)
	}{
		{
			name: "status AVAILABLE to INOPERATIVE", uid: 1001, change: patchStatus(chargenet.StatusInoperative),
			events: []string{chargenet.EventStatusChanged}, hold: true,
			check: func(t *testing.T, e *chargenet.EVSE, _ time.Time) {
				assert.Equal(t, chargenet.StatusInoperative, e.Status)
			},
		},
		{
			name: "status INOPERATIVE to AVAILABLE", uid: 1008, change: patchStatus(chargenet.StatusAvailable),
			events: []string{chargenet.EventStatusChanged},
			check: func(t *testing.T, e *chargenet.EVSE, _ time.Time) {
				assert.Equal(t, chargenet.StatusAvailable, e.Status)
			},
		},
		{
			name: "status with the current If-Match", uid: 1002,
			change: patchEVSE(chargenet.EVSEPatch{Status: ptr(chargenet.StatusInoperative)}, `"1"`),
			events: []string{chargenet.EventStatusChanged}, hold: true,
			check: func(t *testing.T, e *chargenet.EVSE, _ time.Time) {
				assert.Equal(t, chargenet.StatusInoperative, e.Status)
			},
		},
		{
			name: "status REMOVED", uid: 1004, change: patchStatus(chargenet.StatusRemoved),
			events: []string{chargenet.EventStatusChanged, chargenet.EventEVSERemoved},
			check:  func(t *testing.T, e *chargenet.EVSE, _ time.Time) { assert.Equal(t, chargenet.StatusRemoved, e.Status) },
		},
		{
			name: "charge box", uid: 1001, change: patchEVSE(chargenet.EVSEPatch{ChargeboxID: ptr(int64(777))}, ""),
			events: []string{chargenet.EventEVSEUpdated},
			check:  func(t *testing.T, e *chargenet.EVSE, _ time.Time) { assert.Equal(t, int64(777), e.ChargeboxID) },
		},
		{
			name: "move to a location without EVSEs", uid: 1001, change: patchEVSE(chargenet.EVSEPatch{LocationID: ptr("LOC-0030")}, ""),
			events: []string{chargenet.EventEVSEUpdated},
			check:  func(t *testing.T, e *chargenet.EVSE, _ time.Time) { assert.Equal(t, "LOC-0030", e.LocationID) },
		},
		{
			name: "move beside other EVSEs, with a status", uid: 1003,
			change: patchEVSE(chargenet.EVSEPatch{LocationID: ptr("LOC-0001"), Status: ptr(chargenet.StatusInoperative)}, ""),
			events: []string{chargenet.EventStatusChanged, chargenet.EventEVSEUpdated}, hold: true,
			check: func(t *testing.T, e *chargenet.EVSE, _ time.Time) {
				assert.Equal(t, "LOC-0001", e.LocationID)
				assert.Equal(t, chargenet.StatusInoperative, e.Status)
			},
		},
		{
			name: "remove", uid: 1002, change: removeEVSE(""),
			events: []string{chargenet.EventStatusChanged, chargenet.EventEVSERemoved},
			check:  func(t *testing.T, e *chargenet.EVSE, _ time.Time) { assert.Equal(t, chargenet.StatusRemoved, e.Status) },
		},
		{
			name: "remove an INOPERATIVE one with If-Match", uid: 1008, change: removeEVSE(`"1"`),
			events: []string{chargenet.EventStatusChanged, chargenet.EventEVSERemoved},
			check:  func(t *testing.T, e *chargenet.EVSE, _ time.Time) { assert.Equal(t, chargenet.StatusRemoved, e.Status) },
		},
		{
			name: "add a connector", uid: 1001, change: addConnector(acConnector()),
			events: []string{chargenet.EventConnectorCreated},
			check: func(t *testing.T, e *chargenet.EVSE, at time.Time) {
				require.Len(t, e.Connectors, 2)
				want := acConnector()
				want.ID, want.LastUpdated = 2, at
				assert.Equal(t, want, e.Connectors[1])
				assert.True(t, e.Connectors[0].LastUpdated.Before(at), "the other connector's stays")
			},
		},
		{
			name: "add a connector after a deleted one", uid: 1004, change: addConnector(acConnector()),
			events: []string{chargenet.EventConnectorCreated},
			check: func(t *testing.T, e *chargenet.EVSE, _ time.Time) {
				require.Len(t, e.Connectors, 5)
				assert.Equal(t, int64(5), e.Connectors[4].ID)
			},
		},
		{
			name: "delete a connector", uid: 1002, change: deleteConnector(2),
			events: []string{chargenet.EventConnectorDeleted},
			check: func(t *testing.T, e *chargenet.EVSE, at time.Time) {
				require.NotNil(t, e.Connector(2).DeletedAt)
				assert.Equal(t, at, *e.Connector(2).DeletedAt)
				assert.Equal(t, at, e.Connector(2).LastUpdated)
				assert.Nil(t, e.Connector(1).DeletedAt)
				assert.True(t, e.Connector(1).LastUpdated.Before(at), "the other connector's stays")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, inv := demoStore(t, open)
			ctx := t.Context()
			subscribeAll(t, s)
			before := takeSnapshot(t, s)
			at := now()
			from := findEVSE(inv, tt.uid)
			want := cloneEVSE(from)
			_, err := tt.change(&want, at)
			require.NoError(t, err)

			got, returned, err := change(t, s, tt.uid, tt.change, at)
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, public(want), public(*got), "the EVSE as committed")
			assert.Equal(t, int64(2), got.Version)
			assert.Equal(t, at, got.LastUpdated)
			assert.Equal(t, tt.hold, got.OperatorHold, "the operator's hold")
			tt.check(t, got, at)

			reread, err := s.EVSE(ctx, tt.uid)
			require.NoError(t, err)
			assert.Equal(t, public(*got), public(*reread), "EVSE reads what ChangeEVSE returned")
			assertSameJSON(t, got, reread)
			assert.Equal(t, publicSnapshot(afterChange(before, *got, from.LocationID, at)), publicSnapshot(takeSnapshot(t, s)),
				"the change, its location touched (both, and their uids, when it moved), nothing else")
			checkDocs(t, s, tt.uid, from.LocationID, got.LocationID)

			events := recorded(t, s)
			assert.ElementsMatch(t, tt.events, eventTypes(events))
			assert.ElementsMatch(t, eventIDs(returned), eventIDs(events), "exactly the events the change returned")
			for _, ev := range events {
				var data struct {
					UID                int64           `json:"uid"`
					Version            int64           `json:"version"`
					EVSE               json.RawMessage `json:"evse"`
					PreviousLocationID string          `json:"previousLocationId"`
				}
				require.NoError(t, json.Unmarshal(ev.Data, &data))
				assert.Equal(t, tt.uid, data.UID, ev.Type)
				assert.Equal(t, int64(2), data.Version, ev.Type)
				if ev.Type == chargenet.EventEVSEUpdated {
					assert.JSONEq(t, inEvent(t, got), string(data.EVSE), "evse.updated carries the EVSE as committed")
					wantPrevious := ""
					if from.LocationID != got.LocationID {
						wantPrevious = from.LocationID
					}
					assert.Equal(t, wantPrevious, data.PreviousLocationID, "previousLocationId only when the EVSE moved")
				}
			}
		})
	}
}

// testChangeEVSEUnchanged runs changes that leave the Version as it was: ChangeEVSE
// returns the EVSE as read and writes nothing.
func testChangeEVSEUnchanged(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	subscribeAll(t, s)
	mustChange(t, s, 1040, removeEVSE(""), now())
	recorded(t, s)
	tests := []struct {
		name   string
		uid    int64
		change evseChange
	}{
		{"same status", 1001, patchStatus(chargenet.StatusAvailable)},
		{"same location and charge box", 1001, patchEVSE(chargenet.EVSEPatch{LocationID: ptr("LOC-0001"), ChargeboxID: ptr(int64(501))}, "")},
		{"remove a REMOVED EVSE", 1040, removeEVSE("")},
		{"delete a deleted connector", 1004, deleteConnector(4)},
		{"a change that leaves the Version", 1003, func(e *chargenet.EVSE, _ time.Time) ([]chargenet.Event, error) {
			e.ChargeboxID, e.Status = 777, chargenet.StatusBlocked
			return nil, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := takeSnapshot(t, s)
			stored, err := s.EVSE(t.Context(), tt.uid)
			require.NoError(t, err)
			got, _, err := change(t, s, tt.uid, tt.change, now().Add(time.Minute))
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, public(*stored), public(*got), "the EVSE as read")
			assert.Equal(t, before, takeSnapshot(t, s), "nothing written")
			assert.Empty(t, recorded(t, s), "no event")
		})
	}
}

// testChangeEVSERefused runs changes that fail: the error comes back and nothing
// changes.
func testChangeEVSERefused(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	subscribeAll(t, s)
	_, err := s.DeleteLocation(ctx, "LOC-0120", "", now())
	require.NoError(t, err)
	mustChange(t, s, 1040, removeEVSE(""), now())
	recorded(t, s)
	dc := chargenet.Connector{Standard: chargenet.StandardChademo, Format: chargenet.FormatCable, PowerType: chargenet.PowerAC3Phase,
		MaxElectricPower: 50, MaxAmperage: 125, MaxVoltage: 500}
	tests := []struct {
		name               string
		uid                int64
		change             evseChange
		kind               error
		code, param, inMsg string
	}{
		{"no such EVSE", 9999, patchStatus(chargenet.StatusAvailable),
			chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "9999"},
		{"empty patch", 1001, patchEVSE(chargenet.EVSEPatch{}, ""),
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "", "at least one field"},
		{"not a status", 1001, patchStatus("PARKED"),
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "status", "PARKED"},
		{"a transition the table refuses", 1001, patchStatus(chargenet.StatusCharging),
			chargenet.ErrConflict, chargenet.CodeInvalidTransition, "status", "CHARGING"},
		{"back to PLANNED", 1008, patchStatus(chargenet.StatusPlanned),
			chargenet.ErrConflict, chargenet.CodeInvalidTransition, "status", "PLANNED"},
		{"stale If-Match", 1001, patchEVSE(chargenet.EVSEPatch{Status: ptr(chargenet.StatusInoperative)}, `"7"`),
			chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match", `"7"`},
		{"move to no location", 1001, patchEVSE(chargenet.EVSEPatch{LocationID: ptr("LOC-9999")}, ""),
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "locationId", "LOC-9999"},
		{"move to a deleted location", 1001, patchEVSE(chargenet.EVSEPatch{LocationID: ptr("LOC-0120"), Status: ptr(chargenet.StatusInoperative)}, ""),
			chargenet.ErrConflict, chargenet.CodeLocationDeleted, "locationId", "LOC-0120"},
		{"status of a REMOVED EVSE", 1040, patchStatus(chargenet.StatusAvailable),
			chargenet.ErrConflict, chargenet.CodeEVSERemoved, "uid", "REMOVED"},
		{"connector for a REMOVED EVSE", 1040, addConnector(acConnector()),
			chargenet.ErrConflict, chargenet.CodeEVSERemoved, "uid", "REMOVED"},
		{"connector that breaks a rule", 1001, addConnector(dc),
			chargenet.ErrInvalid, chargenet.CodeInvalidConnector, "standard", "CHADEMO"},
		{"no such connector", 1001, deleteConnector(9),
			chargenet.ErrNotFound, chargenet.CodeNotFound, "connectorId", "9"},
		{"remove with a stale If-Match", 1002, removeEVSE(`"9"`),
			chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match", `"9"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := takeSnapshot(t, s)
			at := now()
			got, _, err := change(t, s, tt.uid, tt.change, at)
			assert.Nil(t, got)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.kind)
			var de *chargenet.Error
			require.ErrorAs(t, err, &de, "want a *chargenet.Error, got %T: %v", err, err)
			assert.Equal(t, tt.code, de.Code, "Code of %q", de.Message)
			assert.Equal(t, tt.param, de.Param, "Param of %q", de.Message)
			assert.Contains(t, de.Message, tt.inMsg)
			if stored, rerr := s.EVSE(t.Context(), tt.uid); rerr == nil {
				// The store's checks run after change's: an error change made comes
				// back unchanged.
				if _, want := tt.change(stored, at); want != nil {
					assert.Equal(t, want, err, "change's error, unchanged")
				}
			}
			assert.Equal(t, before, takeSnapshot(t, s), "nothing changed")
			assert.Empty(t, recorded(t, s), "no event")
		})
	}

	t.Run("UpdateConnector refuses a REMOVED EVSE", func(t *testing.T) {
		before := takeSnapshot(t, s)
		got, err := s.UpdateConnector(ctx, 1040, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, "", "", now())
		assert.Nil(t, got)
		assert.ErrorIs(t, err, chargenet.ErrConflict)
		var de *chargenet.Error
		require.ErrorAs(t, err, &de)
		assert.Equal(t, chargenet.CodeEVSERemoved, de.Code)
		assert.Equal(t, before, takeSnapshot(t, s), "nothing changed")
		assert.Empty(t, recorded(t, s), "no event")
	})

	t.Run("change is not called for a missing EVSE", func(t *testing.T) {
		called := false
		_, err := s.ChangeEVSE(ctx, 9999, func(*chargenet.EVSE) ([]chargenet.Event, error) {
			called = true
			return nil, nil
		}, nil, "",

			now())

		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "uid")
		assert.False(t, called)
	})

	t.Run("an error of change comes back unchanged, its edits unwritten", func(t *testing.T) {
		before := takeSnapshot(t, s)
		refused := errors.New("refused by the caller")
		got, err := s.ChangeEVSE(ctx, 1001, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			ev, err := e.ApplyPatch(chargenet.EVSEPatch{Status: ptr(chargenet.StatusInoperative)}, "", now())
			require.NoError(t, err)
			return ev, refused
		}, nil, "",

			now())

		assert.Nil(t, got)
		assert.ErrorIs(t, err, refused)
		assert.Equal(t, before, takeSnapshot(t, s), "nothing changed")
		assert.Empty(t, recorded(t, s), "no event")
	})
}

// testChangeEVSEConcurrent adds connectors to one EVSE at once: each gets its own id
// and version, and every one is kept.
func testChangeEVSEConcurrent(t *testing.T, open Opener) {
	const writers = 12
	s, _ := demoStore(t, open)
	ctx := t.Context()
	subscribeAll(t, s)
	results := make([]*chargenet.EVSE, writers)
	errs := make([]error, writers)
	atOnce(writers, func(i int) {
		c := acConnector()
		c.MaxElectricPower = float64(i + 1)
		results[i], errs[i] = s.ChangeEVSE(ctx, 1001, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.AddConnector(c, "", time.Now())
		}, nil, "",

			time.Now())

	})
	versions := map[int64]bool{}
	for i, r := range results {
		require.NoError(t, errs[i], "writer %d", i)
		versions[r.Version] = true
		last := r.Connectors[len(r.Connectors)-1]
		assert.Equal(t, r.Version, last.ID, "the connector added at version v is connector v (1001 had one)")
		assert.Equal(t, float64(i+1), last.MaxElectricPower, "writer %d's connector", i)
	}
	assert.Len(t, versions, writers, "each change its own version")
	final, err := s.EVSE(ctx, 1001)
	require.NoError(t, err)
	assert.Equal(t, int64(1+writers), final.Version)
	require.Len(t, final.Connectors, 1+writers, "every connector kept")
	for i, c := range final.Connectors {
		assert.Equal(t, int64(i+1), c.ID)
	}
	assert.Len(t, recorded(t, s), writers, "one evse.connector.created each")
}

// testStatusHeld checks status notifications against the operator's hold: PLANNED,
// REMOVED and an operator's INOPERATIVE keep their status (a connector error is still
// recorded, except on REMOVED), while a charge box's own INOPERATIVE moves on.
func testStatusHeld(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	subscribeAll(t, s)
	base := now()
	tick := 0
	notify := func(box int64, conn int, ocpp string, code chargenet.ErrorCode) *chargenet.StatusResult {
		t.Helper()
		tick++
		at := base.Add(time.Duration(tick) * time.Second)
		res, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: box, ConnectorID: conn, Status: ocpp,
			ErrorCode: code, Timestamp: at}, "",
			at)

		require.NoError(t, err)
		return res
	}
	read := func(uid int64) *chargenet.EVSE {
		t.Helper()
		e, err := s.EVSE(ctx, uid)
		require.NoError(t, err)
		return e
	}
	// hold reads the operator's hold as ChangeEVSE gives it to a change.
	hold := func(uid int64) bool {
		t.Helper()
		var held bool
		_, err := s.ChangeEVSE(ctx, uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			held = e.OperatorHold
			return nil, nil
		}, nil, "",

			now())

		require.NoError(t, err)
		return held
	}
	// held checks a notification the operator's hold on EVSE uid refused.
	held := func(t *testing.T, res *chargenet.StatusResult, before *chargenet.EVSE, version int64) {
		t.Helper()
		reason, isHeld := before.Held()
		require.True(t, isHeld, "EVSE %d is held", before.UID)
		assert.False(t, res.Applied)
		assert.Equal(t, reason, res.Reason)
		assert.Equal(t, []chargenet.StatusChange{{UID: before.UID, Status: before.Status, Previous: before.Status, Version: version, Reason: reason}}, res.EVSEs)
		after := read(before.UID)
		assert.Equal(t, before.Status, after.Status, "the status is held")
		assert.Equal(t, version, after.Version)
	}

	t.Run("operator's INOPERATIVE", func(t *testing.T) {
		e := mustChange(t, s, 1001, patchStatus(chargenet.StatusInoperative), now())
		require.True(t, e.OperatorHold)
		assert.True(t, hold(1001), "ChangeEVSE reads the hold")
		recorded(t, s)
		res := notify(501, 1, "Faulted", "GroundFailure")
		held(t, res, e, e.Version+1)
		assert.Equal(t, &chargenet.ConnectorError{Code: "GroundFailure"}, read(1001).Connectors[0].Error, "the connector error is recorded")
		res = notify(501, 1, "Available", "NoError")
		held(t, res, e, e.Version+2)
		assert.Nil(t, read(1001).Connectors[0].Error)
		updated := recorded(t, s)
		assert.Equal(t, []string{chargenet.EventEVSEUpdated, chargenet.EventEVSEUpdated}, eventTypes(updated),
			"no status change: an evse.updated for each connector error set and cleared")

		// Released by the operator, it follows the charge box again.
		released := mustChange(t, s, 1001, patchStatus(chargenet.StatusAvailable), now())
		assert.False(t, released.OperatorHold)
		assert.False(t, hold(1001))
		recorded(t, s)
		res = notify(501, 1, "Faulted", "GroundFailure")
		assert.True(t, res.Applied)
		assert.Equal(t, chargenet.StatusOutOfOrder, read(1001).Status)
		events := recorded(t, s)
		require.Len(t, events, 1)
		assert.Equal(t, chargenet.EventStatusChanged, events[0].Type)
	})

	t.Run("charge box's INOPERATIVE", func(t *testing.T) {
		assert.False(t, hold(1008), "imported INOPERATIVE: no hold")
		res := notify(504, 4, "Available", "NoError") // 1007 has OCPP connectors 1-3, 1008 4-7
		assert.True(t, res.Applied)
		assert.Equal(t, chargenet.StatusAvailable, read(1008).Status)

		res = notify(501, 2, "Unavailable", "NoError") // 1002's first connector
		assert.True(t, res.Applied)
		assert.Equal(t, chargenet.StatusInoperative, read(1002).Status)
		assert.False(t, hold(1002), "set by the charge box: no hold")
		res = notify(501, 2, "Available", "NoError")
		assert.True(t, res.Applied)
		assert.Equal(t, chargenet.StatusAvailable, read(1002).Status)
		assert.Len(t, recorded(t, s), 3)
	})

	t.Run("PLANNED", func(t *testing.T) {
		e, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9201", "LOC-0021", 900, ""), now()), nil, "", now())
		require.NoError(t, err)
		require.Equal(t, chargenet.StatusPlanned, e.Status)
		recorded(t, s)
		res := notify(900, 2, "Faulted", "HighTemperature")
		held(t, res, e, 2)
		after := read(e.UID)
		assert.Equal(t, &chargenet.ConnectorError{Code: "HighTemperature"}, after.Connector(2).Error, "the connector error is recorded")
		events := recorded(t, s)
		require.Equal(t, []string{chargenet.EventEVSEUpdated}, eventTypes(events), "the error alone: evse.updated")
		assertUpdatedEvent(t, events[0], after)
		// The event log holds it too (every event is stored, subscribed or not), once the
		// transactions open when it committed have ended (PostgreSQL's horizon).
		logged := logUntil(t, s, []string{chargenet.EventEVSEUpdated}, events[0].Time, 1)
		assert.Equal(t, events[0].ID, logged[0].ID)
	})

	t.Run("created INOPERATIVE", func(t *testing.T) {
		e, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9202", "LOC-0021", 901, chargenet.StatusInoperative), now()), nil, "", now())
		require.NoError(t, err)
		assert.True(t, hold(e.UID))
		recorded(t, s)
		res := notify(901, 0, "Available", "NoError")
		assert.False(t, res.Applied)
		assert.Equal(t, chargenet.StatusInoperative, read(e.UID).Status)
		assert.Empty(t, recorded(t, s))
	})

	t.Run("REMOVED", func(t *testing.T) {
		e, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9203", "LOC-0021", 902, chargenet.StatusAvailable), now()), nil, "", now())
		require.NoError(t, err)
		e = mustChange(t, s, e.UID, removeEVSE(""), now())
		recorded(t, s)
		before := takeSnapshot(t, s)
		res := notify(902, 1, "Faulted", "GroundFailure")
		reason, _ := e.Held()
		assert.Equal(t, &chargenet.StatusResult{Applied: false, Reason: reason, EVSEs: []chargenet.StatusChange{}}, res)
		assert.Equal(t, before, takeSnapshot(t, s), "nothing changes")
		assert.Empty(t, recorded(t, s))
	})
}
