package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changeReader follows both change lists as a partner does: each poll resumes after the
// last (position, key) it saw.
type changeReader struct {
	s        chargenet.Store
	since    time.Time
	limit    int
	evseAt   chargenet.ChangeSeek[int64]
	locAt    chargenet.ChangeSeek[string]
	evses    []chargenet.EVSE     // every item read, in order
	locs     []chargenet.Location // every item read, in order
	lastEVSE map[int64]chargenet.EVSE
	lastLoc  map[string]chargenet.Location
}

func newChangeReader(s chargenet.Store, since time.Time, limit int) *changeReader {
	return &changeReader{s: s, since: since, limit: limit,
		lastEVSE: map[int64]chargenet.EVSE{}, lastLoc: map[string]chargenet.Location{}}
}

// poll reads both lists to their current end and returns what it read.
func (r *changeReader) poll(ctx context.Context) ([]chargenet.EVSE, []chargenet.Location, error) {
	var evses []chargenet.EVSE
	for {
		seek := r.evseAt
		seek.Since, seek.Limit = r.since, r.limit
		page, err := r.s.ListEVSEChanges(ctx, seek)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range page {
			if r.evseAt.HasPos && (e.ChangePos < r.evseAt.Pos || e.ChangePos == r.evseAt.Pos && e.UID <= r.evseAt.Key) {
				return nil, nil, fmt.Errorf("EVSE %d at (%d, %d) is not after (%d, %d)", e.UID, e.ChangePos, e.UID, r.evseAt.Pos, r.evseAt.Key)
			}
			r.evseAt = chargenet.ChangeSeek[int64]{Pos: e.ChangePos, Key: e.UID, HasPos: true}
			r.lastEVSE[e.UID] = e
		}
		evses = append(evses, page...)
		if len(page) < r.limit {
			break
		}
	}
	var locs []chargenet.Location
	for {
		seek := r.locAt
		seek.Since, seek.Limit = r.since, r.limit
		page, err := r.s.ListLocationChanges(ctx, seek)
		if err != nil {
			return nil, nil, err
		}
		for _, l := range page {
			if r.locAt.HasPos && (l.ChangePos < r.locAt.Pos || l.ChangePos == r.locAt.Pos && l.ID <= r.locAt.Key) {
				return nil, nil, fmt.Errorf("location %s at (%d, %s) is not after (%d, %s)", l.ID, l.ChangePos, l.ID, r.locAt.Pos, r.locAt.Key)
			}
			r.locAt = chargenet.ChangeSeek[string]{Pos: l.ChangePos, Key: l.ID, HasPos: true}
			r.lastLoc[l.ID] = l
		}
		locs = append(locs, page...)
		if len(page) < r.limit {
			break
		}
	}
	r.evses = append(r.evses, evses...)
	r.locs = append(r.locs, locs...)
	return evses, locs, nil
}

// mustPoll is poll for a test.
func (r *changeReader) mustPoll(t testing.TB) ([]chargenet.EVSE, []chargenet.Location) {
	t.Helper()
	evses, locs, err := r.poll(t.Context())
	require.NoError(t, err)
	return evses, locs
}

// pollUntil polls until done holds for what the reader saw or a deadline passes (on
// PostgreSQL a change shows once every transaction that started before it has ended,
// also those of other databases of the server), and reports whether done held.
func (r *changeReader) pollUntil(t testing.TB, done func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r.mustPoll(t)
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pollFor polls until done holds for everything the polls read, in the order read, or
// the deadline of pollUntil passes, and returns it. settled cannot wait for a change
// that takes an item out of view: on PostgreSQL a location whose deletion is not yet
// listed is in no position of the list at all (its row has the deletion's position), so
// a reader waits for that change itself.
func (r *changeReader) pollFor(t testing.TB, done func([]chargenet.EVSE, []chargenet.Location) bool) ([]chargenet.EVSE, []chargenet.Location) {
	t.Helper()
	var evses []chargenet.EVSE
	var locs []chargenet.Location
	deadline := time.Now().Add(15 * time.Second)
	for {
		e, l := r.mustPoll(t)
		evses, locs = append(evses, e...), append(locs, l...)
		if done(evses, locs) || time.Now().After(deadline) {
			return evses, locs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func evseUIDs(evses []chargenet.EVSE) []int64 {
	out := make([]int64, len(evses))
	for i, e := range evses {
		out[i] = e.UID
	}
	return out
}

func locationIDs(locs []chargenet.Location) []string {
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = l.ID
	}
	return out
}

// evsesWithoutPos returns copies of evses with ChangePos zero, as the other reads give them.
func evsesWithoutPos(evses []chargenet.EVSE) []chargenet.EVSE {
	out := make([]chargenet.EVSE, len(evses))
	for i := range evses {
		out[i] = cloneEVSE(evses[i])
		out[i].ChangePos = 0
	}
	return out
}

func locationsWithoutPos(locs []chargenet.Location) []chargenet.Location {
	out := slices.Clone(locs)
	for i := range out {
		out[i].ChangePos = 0
	}
	return out
}

// checkChangeOrder checks that keys come in strictly ascending (position, key) order.
func checkChangeOrder[K int64 | string](t testing.TB, pos []uint64, keys []K) {
	t.Helper()
	for i := 1; i < len(pos); i++ {
		after := pos[i] > pos[i-1] || pos[i] == pos[i-1] && keys[i] > keys[i-1]
		assert.True(t, after, "item %d (%d, %v) after item %d (%d, %v)", i, pos[i], keys[i], i-1, pos[i-1], keys[i-1])
	}
	for i, p := range pos {
		assert.NotZero(t, p, "item %d (%v) has a position", i, keys[i])
	}
}

func evsePositions(evses []chargenet.EVSE) []uint64 {
	out := make([]uint64, len(evses))
	for i, e := range evses {
		out[i] = e.ChangePos
	}
	return out
}

func locationPositions(locs []chargenet.Location) []uint64 {
	out := make([]uint64, len(locs))
	for i, l := range locs {
		out[i] = l.ChangePos
	}
	return out
}

// drained returns a reader that has read both lists of s to their current end, once
// every committed change shows in them (see settled).
func drained(t testing.TB, s chargenet.Store) *changeReader {
	t.Helper()
	settled(t, s)
	r := newChangeReader(s, time.Time{}, 100)
	r.mustPoll(t)
	return r
}

// settled waits until the change lists of s show every EVSE and location as the plain
// reads do. On PostgreSQL a change shows once every transaction that began writing
// before it has ended, also those of other databases on the server (other tests); on
// SQLite at once.
func settled(t testing.TB, s chargenet.Store) {
	t.Helper()
	snap := takeSnapshot(t, s)
	r := newChangeReader(s, time.Time{}, 1000)
	ok := r.pollUntil(t, func() bool {
		for _, e := range snap.EVSEs {
			if r.lastEVSE[e.UID].Version != e.Version {
				return false
			}
		}
		for _, l := range snap.Locations {
			if !r.lastLoc[l.ID].LastUpdated.Equal(l.LastUpdated) {
				return false
			}
		}
		for id, seen := range r.lastLoc { // deleted ones too
			l, err := s.Location(t.Context(), id)
			require.NoError(t, err)
			if !seen.LastUpdated.Equal(l.LastUpdated) {
				return false
			}
		}
		return true
	})
	require.True(t, ok, "the change lists show what the plain lists do")
}

func testChangeLists(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	settled(t, s)
	snap := takeSnapshot(t, s)

	// Whole lists in one read and in pages of 7 are the same, every item once, in
	// (position, key) order, each as the plain lists give it.
	all, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 1000})
	require.NoError(t, err)
	allLocs, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Limit: 1000})
	require.NoError(t, err)
	paged := newChangeReader(s, time.Time{}, 7)
	paged.mustPoll(t)
	assert.Equal(t, all, paged.evses, "EVSEs in one read and in pages")
	assert.Equal(t, allLocs, paged.locs, "locations in one read and in pages")
	checkChangeOrder(t, evsePositions(all), evseUIDs(all))
	checkChangeOrder(t, locationPositions(allLocs), locationIDs(allLocs))
	byUID := evsesWithoutPos(all)
	slices.SortFunc(byUID, func(a, b chargenet.EVSE) int { return compare(a.UID, b.UID) })
	assert.Equal(t, snap.EVSEs, byUID, "every EVSE once, as ListEVSEs gives it")
	byID := locationsWithoutPos(allLocs)
	slices.SortFunc(byID, func(a, b chargenet.Location) int { return compare(a.ID, b.ID) })
	assert.Equal(t, snap.Locations, byID, "every location once, as ListLocations gives it")

	// Limits.
	none, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 0})
	require.NoError(t, err)
	assert.NotNil(t, none)
	assert.Empty(t, none)
	three, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 3})
	require.NoError(t, err)
	assert.Equal(t, all[:3], three)
	last := all[len(all)-1]
	past, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Pos: last.ChangePos, Key: last.UID, HasPos: true, Limit: 10})
	require.NoError(t, err)
	assert.NotNil(t, past)
	assert.Empty(t, past, "nothing after the last item")
	lastLoc := allLocs[len(allLocs)-1]
	pastLocs, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Pos: lastLoc.ChangePos, Key: lastLoc.ID, HasPos: true, Limit: 10})
	require.NoError(t, err)
	assert.NotNil(t, pastLocs)
	assert.Empty(t, pastLocs)

	// A seek after an item in the middle returns exactly the items after it.
	mid := all[17]
	rest, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Pos: mid.ChangePos, Key: mid.UID, HasPos: true, Limit: 1000})
	require.NoError(t, err)
	assert.Equal(t, all[18:], rest)
	midLoc := allLocs[50]
	restLocs, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Pos: midLoc.ChangePos, Key: midLoc.ID, HasPos: true, Limit: 1000})
	require.NoError(t, err)
	assert.Equal(t, allLocs[51:], restLocs)
}

func testChangeListsSince(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	base := now().Add(time.Hour) // later than the import
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }

	// EVSE 1001+i and location LOC-0101+i change at minute i. Each EVSE's change
	// touches its location (LOC-0001 holds 1001 and 1002, LOC-0002 1003 and 1004,
	// LOC-0003 1005), which moves there in the list with the EVSE's time.
	for i := range 5 {
		_, err := s.UpdateConnector(ctx, int64(1001+i), 1, chargenet.ConnectorPatch{MaxAmperage: ptr(float64(10 + i))}, "", "", at(i))
		require.NoError(t, err)
		l := newLocation(fmt.Sprintf("LOC-%04d", 101+i), at(i))
		_, _, err = s.PutLocation(ctx, &l, "", at(i))
		require.NoError(t, err)
	}
	settled(t, s)
	for _, tc := range []struct {
		name  string
		since time.Time
		uids  []int64
		ids   []string
	}{
		{"at the first change", at(0), []int64{1001, 1002, 1003, 1004, 1005},
			[]string{"LOC-0101", "LOC-0001", "LOC-0102", "LOC-0103", "LOC-0002", "LOC-0104", "LOC-0003", "LOC-0105"}},
		{"between changes", at(2).Add(-time.Microsecond), []int64{1003, 1004, 1005},
			[]string{"LOC-0103", "LOC-0002", "LOC-0104", "LOC-0003", "LOC-0105"}},
		{"at a change", at(3), []int64{1004, 1005}, []string{"LOC-0002", "LOC-0104", "LOC-0003", "LOC-0105"}},
		{"after the last", at(4).Add(time.Microsecond), []int64{}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newChangeReader(s, tc.since, 2)
			r.mustPoll(t)
			assert.Equal(t, tc.uids, evseUIDs(r.evses), "EVSEs changed at or after %v, in change order", tc.since)
			assert.Equal(t, tc.ids, locationIDs(r.locs), "locations changed at or after %v, in change order", tc.since)
			for _, e := range r.evses {
				assert.False(t, e.LastUpdated.Before(tc.since), "EVSE %d", e.UID)
			}
			for _, l := range r.locs {
				assert.False(t, l.LastUpdated.Before(tc.since), "location %s", l.ID)
			}
		})
	}

	// Without Since every item is listed; the ones changed last come last.
	r := newChangeReader(s, time.Time{}, 100)
	r.mustPoll(t)
	assert.Len(t, r.evses, 40)
	assert.Equal(t, []int64{1001, 1002, 1003, 1004, 1005}, evseUIDs(r.evses[35:]))
	assert.Len(t, r.locs, 120)
	assert.Equal(t, []string{"LOC-0101", "LOC-0001", "LOC-0102", "LOC-0103", "LOC-0002", "LOC-0104", "LOC-0003", "LOC-0105"},
		locationIDs(r.locs[112:]))

	// Changes committed out of time order: 1006 at minute 10, then 1007 at minute 1.
	// Each is listed for every Since at or before its own time, the later commit last;
	// so are their locations, LOC-0003 (which 1005 left at minute 4) and LOC-0004.
	_, err := s.UpdateConnector(ctx, 1006, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(20.0)}, "", "", at(10))
	require.NoError(t, err)
	_, err = s.UpdateConnector(ctx, 1007, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(21.0)}, "", "", at(1))
	require.NoError(t, err)
	l := newLocation("LOC-0106", at(10))
	_, _, err = s.PutLocation(ctx, &l, "", at(10))
	require.NoError(t, err)
	l = newLocation("LOC-0107", at(1))
	_, _, err = s.PutLocation(ctx, &l, "", at(1))
	require.NoError(t, err)
	settled(t, s)
	for _, tc := range []struct {
		since time.Time
		uids  []int64
		ids   []string
	}{
		{at(1), []int64{1002, 1003, 1004, 1005, 1006, 1007},
			[]string{"LOC-0001", "LOC-0102", "LOC-0103", "LOC-0002", "LOC-0104", "LOC-0105", "LOC-0003", "LOC-0004", "LOC-0106", "LOC-0107"}},
		{at(4), []int64{1005, 1006}, []string{"LOC-0105", "LOC-0003", "LOC-0106"}},
		{at(10), []int64{1006}, []string{"LOC-0003", "LOC-0106"}},
	} {
		r := newChangeReader(s, tc.since, 2)
		r.mustPoll(t)
		assert.Equal(t, tc.uids, evseUIDs(r.evses), "EVSEs changed at or after %v", tc.since)
		assert.Equal(t, tc.ids, locationIDs(r.locs), "locations changed at or after %v", tc.since)
	}
}

func testChangeListsMove(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	r := drained(t, s)
	first := r.lastEVSE[1001]
	firstLoc := r.lastLoc["LOC-0110"]

	_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(10.0)}, "", "", now())
	require.NoError(t, err)
	_, err = s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(10.0)}, "", "", now())
	require.NoError(t, err)
	e, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(12.0)}, "", "", now())
	require.NoError(t, err)
	l := newLocation("LOC-0110", now())
	_, _, err = s.PutLocation(ctx, &l, "", now())
	require.NoError(t, err)

	settled(t, s)
	evses, locs := r.mustPoll(t)
	require.Equal(t, []int64{1002, 1001}, evseUIDs(evses), "the EVSE changed again moved behind the other")
	assert.Greater(t, evses[1].ChangePos, first.ChangePos, "a later position than before")
	got := evses[1]
	got.ChangePos = 0
	assert.Equal(t, e, &got, "the EVSE as last committed")
	require.Equal(t, []string{"LOC-0001", "LOC-0110"}, locationIDs(locs), "the EVSEs' location (once), then the one put")
	assert.Equal(t, int64(4), r.lastLoc["LOC-0001"].Version, "the location of 1001 and 1002, touched by each change")
	assert.Greater(t, locs[1].ChangePos, firstLoc.ChangePos)
	assert.Equal(t, l.Name, locs[1].Name)

	// The whole list still holds each item once, the moved ones last.
	all := newChangeReader(s, time.Time{}, 100)
	all.mustPoll(t)
	assert.Len(t, all.evses, 40)
	assert.Equal(t, []int64{1002, 1001}, evseUIDs(all.evses[38:]))
	assert.Len(t, all.locs, 120)
	assert.Equal(t, []string{"LOC-0001", "LOC-0110"}, locationIDs(all.locs[118:]))
}

func testChangeListsRemovals(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	r := drained(t, s)
	since := now()

	removed := mustChange(t, s, 1003, removeEVSE(""), since)
	require.Equal(t, chargenet.StatusRemoved, removed.Status)
	deleted, err := s.DeleteLocation(ctx, "LOC-0100", "", since)
	require.NoError(t, err)
	require.NotNil(t, deleted.DeletedAt)

	// The deleted location leaves the list until its deletion is listed: wait for that.
	evses, locs := r.pollFor(t, func(_ []chargenet.EVSE, locs []chargenet.Location) bool {
		return slices.ContainsFunc(locs, func(l chargenet.Location) bool { return l.ID == "LOC-0100" && l.DeletedAt != nil })
	})
	require.Equal(t, []int64{1003}, evseUIDs(evses))
	assert.Equal(t, chargenet.StatusRemoved, evses[0].Status, "the removal is listed")
	require.Equal(t, []string{"LOC-0002", "LOC-0100"}, locationIDs(locs), "the removed EVSE's location, then the deleted one")
	require.NotNil(t, locs[1].DeletedAt, "the deletion is listed")
	assert.Equal(t, deleted.DeletedAt, locs[1].DeletedAt)

	// Also with Since, and in a list read from the start.
	sr := newChangeReader(s, since, 10)
	sr.mustPoll(t)
	assert.Equal(t, []int64{1003}, evseUIDs(sr.evses))
	assert.Equal(t, []string{"LOC-0002", "LOC-0100"}, locationIDs(sr.locs))
	all := newChangeReader(s, time.Time{}, 1000)
	all.mustPoll(t)
	assert.Len(t, all.evses, 40, "REMOVED EVSEs stay in the list")
	assert.Len(t, all.locs, 120, "deleted locations stay in the list")
	visible, err := s.ListLocations(ctx, chargenet.Seek[string]{Limit: 1000})
	require.NoError(t, err)
	assert.Len(t, visible, 119, "ListLocations leaves the deleted one out")
}

func testChangeListsWritePaths(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	type want struct {
		uids []int64
		ids  []string
	}
	tests := []struct {
		name  string
		write func(t *testing.T) want
	}{
		{"UpdateConnector", func(t *testing.T) want {
			_, err := s.UpdateConnector(ctx, 1007, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(230.0)}, "", "", now())
			require.NoError(t, err)
			return want{uids: []int64{1007}, ids: []string{"LOC-0004"}}
		}},
		{"ApplyStatusNotification", func(t *testing.T) want {
			// Charge box 505 holds EVSEs 1009 and 1010; connector 0 is the whole box.
			res, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 505, ConnectorID: 0,
				Status: "Faulted", ErrorCode: "GroundFailure", Timestamp: now()}, "",
				now())

			require.NoError(t, err)
			var uids []int64
			for _, c := range res.EVSEs {
				require.Equal(t, int64(2), c.Version, "EVSE %d changed", c.UID)
				uids = append(uids, c.UID)
			}
			slices.Sort(uids)
			require.NotEmpty(t, uids)
			return want{uids: uids, ids: []string{"LOC-0005"}}
		}},
		{"ApplyStatusNotification connector error", func(t *testing.T) want {
			res, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 506, ConnectorID: 1,
				Status: "Faulted", ErrorCode: "HighTemperature", Timestamp: now()}, "",
				now())

			require.NoError(t, err)
			require.Len(t, res.EVSEs, 1)
			require.Equal(t, int64(2), res.EVSEs[0].Version, "the EVSE changed")
			return want{uids: []int64{res.EVSEs[0].UID}, ids: []string{"LOC-0006"}}
		}},
		{"CreateEVSE", func(t *testing.T) want {
			at := now()
			e, err := s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*CHG*E1", "LOC-0003", 900, ""), at), nil, "", at)
			require.NoError(t, err)
			return want{uids: []int64{e.UID}, ids: []string{"LOC-0003"}}
		}},
		{"ChangeEVSE patch", func(t *testing.T) want {
			mustChange(t, s, 1011, patchStatus(chargenet.StatusInoperative), now())
			return want{uids: []int64{1011}, ids: []string{"LOC-0006"}}
		}},
		{"ChangeEVSE move", func(t *testing.T) want {
			loc := "LOC-0050"
			mustChange(t, s, 1012, patchEVSE(chargenet.EVSEPatch{LocationID: &loc}, ""), now())
			return want{uids: []int64{1012}, ids: []string{"LOC-0006", "LOC-0050"}}
		}},
		{"ChangeEVSE add connector", func(t *testing.T) want {
			mustChange(t, s, 1013, addConnector(acConnector()), now())
			return want{uids: []int64{1013}, ids: []string{"LOC-0007"}}
		}},
		{"ChangeEVSE delete connector", func(t *testing.T) want {
			mustChange(t, s, 1014, deleteConnector(1), now())
			return want{uids: []int64{1014}, ids: []string{"LOC-0007"}}
		}},
		{"ChangeEVSE remove", func(t *testing.T) want {
			mustChange(t, s, 1015, removeEVSE(""), now())
			return want{uids: []int64{1015}, ids: []string{"LOC-0008"}}
		}},
		{"PutLocation create", func(t *testing.T) want {
			l := newLocation("LOC-NEW", now())
			_, created, err := s.PutLocation(ctx, &l, "", now())
			require.NoError(t, err)
			require.True(t, created)
			return want{ids: []string{"LOC-NEW"}}
		}},
		{"PutLocation replace", func(t *testing.T) want {
			l := newLocation("LOC-0002", now())
			_, created, err := s.PutLocation(ctx, &l, "", now())
			require.NoError(t, err)
			require.False(t, created)
			return want{ids: []string{"LOC-0002"}}
		}},
		{"DeleteLocation", func(t *testing.T) want {
			_, err := s.DeleteLocation(ctx, "LOC-0111", "", now())
			require.NoError(t, err)
			return want{ids: []string{"LOC-0111"}}
		}},
		{"Import", func(t *testing.T) want {
			at := now()
			e := newEVSE(5001, "LOC-IMP", at)
			require.NoError(t, s.Import(ctx, &chargenet.Inventory{Locations: []chargenet.Location{newLocation("LOC-IMP", at)},
				EVSEs: []chargenet.EVSE{e}}))
			return want{uids: []int64{5001}, ids: []string{"LOC-IMP"}}
		}},
		{"Import at an existing location", func(t *testing.T) want {
			e := newEVSE(5002, "LOC-0030", now())
			require.NoError(t, s.Import(ctx, &chargenet.Inventory{EVSEs: []chargenet.EVSE{e}}))
			return want{uids: []int64{5002}, ids: []string{"LOC-0030"}}
		}},
		{"no change writes nothing", func(t *testing.T) want {
			l, err := s.Location(ctx, "LOC-0002")
			require.NoError(t, err)
			_, _, err = s.PutLocation(ctx, l, "", now())
			require.NoError(t, err)
			return want{}
		}},
	}
	r := drained(t, s)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeLoc := r.evseAt.Pos, r.locAt.Pos
			r.evses, r.locs = nil, nil
			w := tc.write(t)
			// On PostgreSQL a change shows once the transactions that started before it
			// ended, those of other tests on the server included: wait for the first.
			require.True(t, r.pollUntil(t, func() bool { return len(r.evses)+len(r.locs) > 0 || len(w.uids)+len(w.ids) == 0 }),
				"the write shows in the change lists")
			r.mustPoll(t)
			evses, locs := r.evses, r.locs

			uids := evseUIDs(evses)
			slices.Sort(uids)
			ids := locationIDs(locs)
			slices.Sort(ids)
			assert.Equal(t, nonNil(w.uids), uids, "EVSEs the write moved")
			assert.Equal(t, nonNil(w.ids), ids, "locations the write moved")
			for _, e := range evses {
				assert.Greater(t, e.ChangePos, before, "EVSE %d after the position read before", e.UID)
				stored, err := s.EVSE(ctx, e.UID)
				require.NoError(t, err)
				e.ChangePos = 0
				assert.Equal(t, public(*stored), public(e), "EVSE %d as stored", e.UID)
			}
			for _, l := range locs {
				assert.Greater(t, l.ChangePos, beforeLoc, "location %s after the position read before", l.ID)
				stored, err := s.Location(ctx, l.ID)
				require.NoError(t, err)
				l.ChangePos = 0
				assert.Equal(t, stored, &l, "location %s as stored", l.ID)
			}
		})
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// testChangeListsConcurrent writes through every path from several goroutines while a
// partner polls both lists, resuming after the last (position, key) it saw. At the end
// the partner's last copy of every EVSE and location is the one stored: no change was
// passed over, whatever order the writers committed in.
func testChangeListsConcurrent(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	const (
		writers = 6
		rounds  = 40
	)
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range rounds {
				uid := int64(1001 + rng.IntN(40))
				var err error
				switch (w + i) % 6 {
				case 0:
					_, err = s.UpdateConnector(ctx, uid, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(float64(1 + rng.IntN(300)))}, "", "", now())
				case 1:
					status := []string{"Available", "Charging", "Faulted", "SuspendedEV"}[rng.IntN(4)]
					_, err = s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: int64(501 + rng.IntN(20)),
						ConnectorID: 0, Status: status, ErrorCode: "NoError", Timestamp: now()}, "",
						now())

				case 2:
					at := now()
					e := postedEVSE(fmt.Sprintf("DE*CON*E%d*%d", w, i), fmt.Sprintf("LOC-%04d", 1+rng.IntN(30)), 900, "")
					if err = e.PrepareNew(at); err == nil {
						_, err = s.CreateEVSE(ctx, &e, nil, "", at)
					}
				case 3:
					loc := fmt.Sprintf("LOC-%04d", 1+rng.IntN(30))
					_, err = s.ChangeEVSE(ctx, uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
						if e.Status == chargenet.StatusRemoved {
							return nil, nil
						}
						return e.ApplyPatch(chargenet.EVSEPatch{LocationID: &loc}, "", now())
					}, nil, "",

						now())

				case 4:
					l := newLocation(fmt.Sprintf("LOC-%04d", 1+rng.IntN(120)), now())
					l.Name = fmt.Sprintf("Renamed %d/%d", w, i)
					_, _, err = s.PutLocation(ctx, &l, "", now())
				case 5:
					// Below the demo's uids: CreateEVSE takes the highest plus one.
					e := newEVSE(int64(100+w*rounds+i), "LOC-0040", now())
					e.EvseID = fmt.Sprintf("DE*IMP*E%d*%d", w, i)
					err = s.Import(ctx, &chargenet.Inventory{EVSEs: []chargenet.EVSE{e}})
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d round %d: %w", w, i, err)
				}
			}
		}()
	}
	r := newChangeReader(s, time.Time{}, 10)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	polls := 0
poll:
	for {
		select {
		case <-done:
			break poll
		default:
		}
		r.mustPoll(t)
		polls++
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	final := takeSnapshot(t, s)
	allLocs := final.Locations // none is deleted
	caughtUp := func() bool {
		if len(r.lastEVSE) != len(final.EVSEs) {
			return false
		}
		for _, e := range final.EVSEs {
			if r.lastEVSE[e.UID].Version != e.Version {
				return false
			}
		}
		for _, l := range allLocs {
			if !r.lastLoc[l.ID].LastUpdated.Equal(l.LastUpdated) {
				return false
			}
		}
		return true
	}
	ok := r.pollUntil(t, caughtUp)
	t.Logf("%d polls during the writes, %d EVSE and %d location items read", polls, len(r.evses), len(r.locs))
	require.Greater(t, len(final.EVSEs), 40, "the writers created EVSEs")
	for _, e := range final.EVSEs {
		got, seen := r.lastEVSE[e.UID]
		if assert.True(t, seen, "EVSE %d seen", e.UID) {
			assert.Equal(t, e.Version, got.Version, "EVSE %d: the last version seen is the last committed", e.UID)
			got.ChangePos = 0
			assert.Equal(t, e, got, "EVSE %d", e.UID)
		}
	}
	for _, l := range allLocs {
		got, seen := r.lastLoc[l.ID]
		if assert.True(t, seen, "location %s seen", l.ID) {
			assert.Equal(t, l.LastUpdated, got.LastUpdated, "location %s: the last update seen is the last committed", l.ID)
			assert.Equal(t, l.EvseUIDs, got.EvseUIDs, "location %s: its EVSEs", l.ID)
		}
	}
	assert.True(t, ok, "the partner caught up")
}
