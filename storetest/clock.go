package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testClockBackwards writes through every write path with a clock that goes back a
// minute at each write (a replica whose clock is behind another's, a clock set back):
// every EVSE, connector and location a write changes still gets a LastUpdated later
// than its previous one, a location's is never earlier than any of its EVSEs', and
// every time is in UTC to the microsecond.
func testClockBackwards(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	clock := time.Now().Add(time.Hour) // local, with nanoseconds
	tick := func() time.Time { clock = clock.Add(-time.Minute); return clock }
	reported := time.Now() // status notifications need times that grow

	steps := []struct {
		name string
		// write changes the store and returns the connectors it changed, by EVSE uid.
		write func(t *testing.T) map[int64][]int64
	}{
		{"PATCH", func(t *testing.T) map[int64][]int64 {
			_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(11.0)}, "", "", tick())
			require.NoError(t, err)
			return map[int64][]int64{1001: {1}}
		}},
		{"PATCHes of one EVSE together", func(t *testing.T) map[int64][]int64 {
			ats := make([]time.Time, 8)
			for i := range ats {
				ats[i] = tick()
			}
			atOnce(len(ats), func(i int) {
				_, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(float64(100 + i))}, "", "", ats[i])
				assert.NoError(t, err)
			})
			return map[int64][]int64{1002: {1}}
		}},
		{"status notification with an error", func(t *testing.T) map[int64][]int64 {
			reported = reported.Add(time.Second)
			_, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 3,
				Status: "Faulted", ErrorCode: "GroundFailure", Timestamp: reported}, "", tick())
			require.NoError(t, err)
			return map[int64][]int64{1002: {2}}
		}},
		{"ChangeEVSE status", func(t *testing.T) map[int64][]int64 {
			mustChange(t, s, 1001, patchStatus(chargenet.StatusInoperative), tick())
			return map[int64][]int64{1001: nil}
		}},
		{"charge box connection ends", func(t *testing.T) map[int64][]int64 {
			_, err := s.RegisterChargebox(ctx, 501, "501", chargenet.HashChargeboxPassword("password-0123456789"), tick())
			require.NoError(t, err)
			require.NoError(t, s.RecordConnections(ctx, []chargenet.ConnectionChange{
				{Kind: chargenet.Connected, Chargebox: 501, Session: "s", Protocol: chargenet.ProtocolOCPP16, At: tick()},
				{Kind: chargenet.Disconnected, Chargebox: 501, Session: "s", Reason: chargenet.ReasonClosed, At: tick()}}))
			e, err := s.EVSE(ctx, 1002)
			require.NoError(t, err)
			require.Equal(t, chargenet.StatusUnknown, e.Status, "EVSE 1002 (Faulted) turned UNKNOWN")
			return map[int64][]int64{1002: nil}
		}},
		{"ChangeEVSE add connector", func(t *testing.T) map[int64][]int64 {
			e := mustChange(t, s, 1003, addConnector(acConnector()), tick())
			return map[int64][]int64{1003: {e.Connectors[len(e.Connectors)-1].ID}}
		}},
		{"ChangeEVSE delete connector", func(t *testing.T) map[int64][]int64 {
			mustChange(t, s, 1003, deleteConnector(1), tick())
			return map[int64][]int64{1003: {1}}
		}},
		{"ChangeEVSE move", func(t *testing.T) map[int64][]int64 {
			loc := "LOC-0001"
			mustChange(t, s, 1004, patchEVSE(chargenet.EVSEPatch{LocationID: &loc}, ""), tick())
			return map[int64][]int64{1004: nil}
		}},
		{"CreateEVSE", func(t *testing.T) map[int64][]int64 {
			at := tick()
			_, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9100", "LOC-0001", 901, ""), at), nil, "", at)
			require.NoError(t, err)
			return nil
		}},
		{"Import at an existing location", func(t *testing.T) map[int64][]int64 {
			require.NoError(t, s.Import(ctx, &chargenet.Inventory{EVSEs: []chargenet.EVSE{newEVSE(5100, "LOC-0001", tick())}}))
			return nil
		}},
		{"PutLocation", func(t *testing.T) map[int64][]int64 {
			l := *location(t, s, "LOC-0001")
			l.Name = "Renamed"
			_, _, err := s.PutLocation(ctx, &l, "", tick())
			require.NoError(t, err)
			return nil
		}},
		{"remove, then DeleteLocation", func(t *testing.T) map[int64][]int64 {
			for _, uid := range []int64{1039, 1040} {
				mustChange(t, s, uid, removeEVSE(""), tick())
			}
			_, err := s.DeleteLocation(ctx, "LOC-0020", "", tick())
			require.NoError(t, err)
			return map[int64][]int64{1039: nil, 1040: nil}
		}},
	}
	before := readAllOf(t, s)
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			connectors := step.write(t)
			after := readAllOf(t, s)
			checkTimes(t, before, after, connectors)
			before = after
		})
	}
}

// readAllOf reads every EVSE and location, deleted locations included.
func readAllOf(t testing.TB, s chargenet.Store) snapshot {
	t.Helper()
	return snapshot{EVSEs: readAll(t, s.ListEVSEs, func(e *chargenet.EVSE) int64 { return e.UID }),
		Locations: readAllChanges(t, s)}
}

// readAllChanges reads the whole location change list, deleted locations included.
func readAllChanges(t testing.TB, s chargenet.Store) []chargenet.Location {
	t.Helper()
	r := newChangeReader(s, time.Time{}, chargenet.MaxPageSize)
	settled(t, s)
	r.mustPoll(t)
	return r.locs
}

// checkTimes checks what a write changed from before to after: every EVSE and location
// with a new Version has a later LastUpdated; the connectors the write changed have
// their EVSE's; every location's LastUpdated is no earlier than its EVSEs'; every time
// is in UTC to the microsecond.
func checkTimes(t *testing.T, before, after snapshot, connectors map[int64][]int64) {
	t.Helper()
	stamp := func(what string, at time.Time) {
		t.Helper()
		assert.Equal(t, time.UTC, at.Location(), "%s in UTC", what)
		assert.Equal(t, at.Truncate(time.Microsecond), at, "%s to the microsecond", what)
	}
	evses := map[int64]chargenet.EVSE{}
	for _, e := range before.EVSEs {
		evses[e.UID] = e
	}
	newest := map[string]chargenet.EVSE{}
	changed := 0
	for _, e := range after.EVSEs {
		stamp(fmt.Sprintf("EVSE %d", e.UID), e.LastUpdated)
		for _, c := range e.Connectors {
			stamp(fmt.Sprintf("connector %d/%d", e.UID, c.ID), c.LastUpdated)
			if c.DeletedAt != nil {
				stamp(fmt.Sprintf("connector %d/%d deleted", e.UID, c.ID), *c.DeletedAt)
			}
			assert.False(t, c.LastUpdated.After(e.LastUpdated), "connector %d/%d: no later than its EVSE", e.UID, c.ID)
		}
		if n, ok := newest[e.LocationID]; e.LocationID != "" && (!ok || e.LastUpdated.After(n.LastUpdated)) {
			newest[e.LocationID] = e
		}
		old, ok := evses[e.UID]
		if !ok || old.Version == e.Version {
			continue
		}
		changed++
		assert.True(t, e.LastUpdated.After(old.LastUpdated), "EVSE %d version %d: %s after %s", e.UID, e.Version,
			e.LastUpdated, old.LastUpdated)
		for _, id := range connectors[e.UID] {
			assert.Equal(t, e.LastUpdated, e.Connector(id).LastUpdated, "connector %d/%d: its EVSE's", e.UID, id)
		}
	}
	if len(connectors) > 0 {
		assert.Positive(t, changed, "the write changed an EVSE")
	}
	locations := map[string]chargenet.Location{}
	for _, l := range before.Locations {
		locations[l.ID] = l
	}
	touched := 0
	for _, l := range after.Locations {
		stamp("location "+l.ID, l.LastUpdated)
		if l.DeletedAt != nil {
			stamp("location "+l.ID+" deleted", *l.DeletedAt)
		}
		if n, ok := newest[l.ID]; ok {
			assert.False(t, l.LastUpdated.Before(n.LastUpdated), "location %s (%s): no earlier than EVSE %d (%s)", l.ID,
				l.LastUpdated, n.UID, n.LastUpdated)
		}
		if old, ok := locations[l.ID]; ok && old.Version != l.Version {
			touched++
			assert.True(t, l.LastUpdated.After(old.LastUpdated), "location %s version %d: %s after %s", l.ID, l.Version,
				l.LastUpdated, old.LastUpdated)
		}
	}
	assert.Positive(t, touched, "the write touched a location")
}
