package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withLocation returns a copy of locs with l in place of the location with its id, or
// added, in id order.
func withLocation(locs []chargenet.Location, l chargenet.Location) []chargenet.Location {
	out := sortedLocations(&chargenet.Inventory{Locations: locs})
	i := slices.IndexFunc(out, func(o chargenet.Location) bool { return o.ID == l.ID })
	if i < 0 {
		out = append(out, l)
	} else {
		out[i] = l
	}
	slices.SortFunc(out, func(a, b chargenet.Location) int { return compare(a.ID, b.ID) })
	return out
}

// withoutLocation returns a copy of locs without location id.
func withoutLocation(locs []chargenet.Location, id string) []chargenet.Location {
	return slices.DeleteFunc(sortedLocations(&chargenet.Inventory{Locations: locs}), func(l chargenet.Location) bool { return l.ID == id })
}

// checkLocationEvent checks that events is the one event of type typ carrying l.
func checkLocationEvent(t testing.TB, events []chargenet.Event, typ string, l *chargenet.Location) {
	t.Helper()
	require.Len(t, events, 1)
	assert.Equal(t, typ, events[0].Type)
	assert.True(t, l.LastUpdated.Equal(events[0].Time), "event time %v is the write's %v", events[0].Time, l.LastUpdated)
	assert.JSONEq(t, inEvent(t, l), string(events[0].Data), "the event carries the location as committed")
}

func testPutLocation(t *testing.T, open Opener) {
	yesterday := now().Add(-24 * time.Hour)
	byID := func(inv *chargenet.Inventory, id string) chargenet.Location {
		for _, l := range inv.Locations {
			if l.ID == id {
				return l
			}
		}
		panic("storetest: no location " + id)
	}
	tests := []struct {
		name    string
		put     func(inv *chargenet.Inventory) chargenet.Location
		created bool
		event   string  // the event's type; "" when nothing is written
		uids    []int64 // of the location afterwards
	}{
		{
			name: "create, ignoring uids and times",
			put: func(*chargenet.Inventory) chargenet.Location {
				l := newLocation("NEW-1", yesterday)
				l.EvseUIDs, l.DeletedAt = []int64{1001}, &yesterday
				return l
			},
			created: true, event: chargenet.EventLocationCreated, uids: []int64{},
		},
		{
			name:    "create an id that sorts first",
			put:     func(*chargenet.Inventory) chargenet.Location { return newLocation("-", yesterday) },
			created: true, event: chargenet.EventLocationCreated, uids: []int64{},
		},
		{
			name: "replace a location with EVSEs",
			put: func(inv *chargenet.Inventory) chargenet.Location {
				l := byID(inv, "LOC-0001")
				l.Name, l.Latitude, l.PostalCode, l.EvseUIDs, l.LastUpdated = "Renamed", l.Latitude+0.5, "", nil, yesterday
				return l
			},
			event: chargenet.EventLocationUpdated, uids: []int64{1001, 1002},
		},
		{
			name: "replace one field",
			put: func(inv *chargenet.Inventory) chargenet.Location {
				l := byID(inv, "LOC-0120")
				l.TimeZone = "Europe/Lisbon"
				return l
			},
			event: chargenet.EventLocationUpdated, uids: []int64{},
		},
		{
			name: "replace at the version it holds",
			put: func(inv *chargenet.Inventory) chargenet.Location {
				l := byID(inv, "LOC-0001")
				l.Name, l.IfVersion = "Renamed", l.Version
				return l
			},
			event: chargenet.EventLocationUpdated, uids: []int64{1001, 1002},
		},
		{
			name: "same fields",
			put: func(inv *chargenet.Inventory) chargenet.Location {
				l := byID(inv, "LOC-0001")
				l.EvseUIDs, l.LastUpdated = []int64{7}, yesterday
				return l
			},
			uids: []int64{1001, 1002},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, inv := demoStore(t, open)
			subscribeAll(t, s)
			before := takeSnapshot(t, s)
			at := now()
			l := tt.put(inv)
			got, created, err := s.PutLocation(t.Context(), &l, "", at)
			require.NoError(t, err)
			assert.Equal(t, tt.created, created)
			want := l
			want.EvseUIDs, want.LastUpdated, want.Version, want.DeletedAt, want.IfVersion = tt.uids, at, 1, nil, 0
			if !tt.created {
				stored := byID(inv, l.ID)
				want.Version = stored.Version + 1
				if tt.event == "" {
					want.LastUpdated, want.Version = stored.LastUpdated, stored.Version
				}
			}
			assert.Equal(t, &want, got, "the location as committed")
			assert.Equal(t, got, location(t, s, l.ID), "Location reads what PutLocation returned")
			checkLocationDocs(t, s, l.ID)
			assert.Equal(t, snapshot{Locations: withLocation(before.Locations, want), EVSEs: before.EVSEs}, takeSnapshot(t, s),
				"the location and nothing else")
			events := recorded(t, s)
			if tt.event == "" {
				assert.Empty(t, events, "nothing written")
				return
			}
			checkLocationEvent(t, events, tt.event, got)
		})
	}

	t.Run("deleted", func(t *testing.T) {
		s, inv := demoStore(t, open)
		subscribeAll(t, s)
		_, err := s.DeleteLocation(t.Context(), "LOC-0120", "", now())
		require.NoError(t, err)
		recorded(t, s)
		before := takeSnapshot(t, s)
		stored := location(t, s, "LOC-0120")
		same := byID(inv, "LOC-0120")
		changed := same
		changed.Name = "Back again"
		for _, l := range []chargenet.Location{same, changed} {
			got, created, err := s.PutLocation(t.Context(), &l, "", now())
			assert.Nil(t, got)
			assert.False(t, created)
			requireError(t, err, chargenet.ErrConflict, chargenet.CodeLocationDeleted, "id")
		}
		assert.Equal(t, stored, location(t, s, "LOC-0120"), "unchanged")
		assert.Equal(t, before, takeSnapshot(t, s))
		assert.Empty(t, recorded(t, s))
	})

	t.Run("a version it does not hold", func(t *testing.T) {
		s, inv := demoStore(t, open)
		subscribeAll(t, s)
		_, err := s.DeleteLocation(t.Context(), "LOC-0120", "", now())
		require.NoError(t, err)
		recorded(t, s)
		before := takeSnapshot(t, s)
		stale := byID(inv, "LOC-0001")
		stale.Name, stale.IfVersion = "Renamed", stale.Version+1
		missing := newLocation("NEW-1", yesterday)
		missing.IfVersion = 1
		deleted := byID(inv, "LOC-0120")
		deleted.IfVersion = deleted.Version
		for _, tt := range []struct {
			l           chargenet.Location
			kind        error
			code, param string
		}{
			{stale, chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "version"},
			{missing, chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "version"},
			{deleted, chargenet.ErrConflict, chargenet.CodeLocationDeleted, "id"},
		} {
			got, created, err := s.PutLocation(t.Context(), &tt.l, "", now())
			assert.Nil(t, got, tt.l.ID)
			assert.False(t, created, tt.l.ID)
			requireError(t, err, tt.kind, tt.code, tt.param)
		}
		assert.Equal(t, before, takeSnapshot(t, s), "nothing written")
		assert.Empty(t, recorded(t, s))
	})

	t.Run("concurrent puts of a new id", func(t *testing.T) {
		const n = 8
		s, _ := demoStore(t, open)
		subscribeAll(t, s)
		created := make([]bool, n)
		errs := make([]error, n)
		atOnce(n, func(i int) {
			l := newLocation("RACE", now())
			l.Name = fmt.Sprintf("Writer %d", i)
			_, created[i], errs[i] = s.PutLocation(t.Context(), &l, "", time.Now())
		})
		creates := 0
		for i := range n {
			require.NoError(t, errs[i], "put %d", i)
			if created[i] {
				creates++
			}
		}
		assert.Equal(t, 1, creates, "one put creates, the others replace")
		types := eventTypes(recorded(t, s))
		assert.Equal(t, 1, count(types, chargenet.EventLocationCreated))
		assert.Equal(t, n-1, count(types, chargenet.EventLocationUpdated))
	})
}

func count[T comparable](items []T, v T) int {
	n := 0
	for _, it := range items {
		if it == v {
			n++
		}
	}
	return n
}

func testDeleteLocation(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	subscribeAll(t, s)
	initial := takeSnapshot(t, s)

	t.Run("not found", func(t *testing.T) {
		for _, id := range []string{"NOPE", "loc-0001", ""} {
			got, err := s.DeleteLocation(ctx, id, "", now())
			assert.Nil(t, got)
			requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "id")
		}
		assert.Equal(t, initial, takeSnapshot(t, s))
	})

	t.Run("in use", func(t *testing.T) {
		got, err := s.DeleteLocation(ctx, "LOC-0001", "", now())
		assert.Nil(t, got)
		msg := requireError(t, err, chargenet.ErrConflict, chargenet.CodeLocationInUse, "id")
		assert.Contains(t, msg, "1001")
		assert.Contains(t, msg, "1002")
		assert.Equal(t, initial, takeSnapshot(t, s), "nothing changed")
		assert.Empty(t, recorded(t, s))

		mustChange(t, s, 1001, removeEVSE(""), now())
		recorded(t, s)
		before := takeSnapshot(t, s)
		_, err = s.DeleteLocation(ctx, "LOC-0001", "", now())
		msg = requireError(t, err, chargenet.ErrConflict, chargenet.CodeLocationInUse, "id")
		assert.Contains(t, msg, "1002")
		assert.NotContains(t, msg, "1001", "REMOVED EVSEs do not count")
		assert.Equal(t, before, takeSnapshot(t, s))
		assert.Empty(t, recorded(t, s))
	})

	mustChange(t, s, 1002, removeEVSE(""), now())
	recorded(t, s)
	before := takeSnapshot(t, s)
	stored := location(t, s, "LOC-0001")
	at := now()
	deleted, err := s.DeleteLocation(ctx, "LOC-0001", "", at)
	require.NoError(t, err)

	t.Run("deleted", func(t *testing.T) {
		want := *stored
		want.DeletedAt, want.LastUpdated, want.Version = &at, at, stored.Version+1
		assert.Equal(t, &want, deleted)
		assert.Equal(t, []int64{1001, 1002}, deleted.EvseUIDs, "its REMOVED EVSEs stay listed")
		assert.Equal(t, deleted, location(t, s, "LOC-0001"), "Location still finds it, with DeletedAt")
		assert.Equal(t, snapshot{Locations: withoutLocation(before.Locations, "LOC-0001"), EVSEs: before.EVSEs}, takeSnapshot(t, s),
			"the list no longer shows it; nothing else changed")
		events := recorded(t, s)
		checkLocationEvent(t, events, chargenet.EventLocationDeleted, deleted)
		var data struct {
			DeletedAt time.Time `json:"deletedAt"`
		}
		require.NoError(t, json.Unmarshal(events[0].Data, &data))
		assert.True(t, at.Equal(data.DeletedAt), "deletedAt %v", data.DeletedAt)
	})

	t.Run("twice", func(t *testing.T) {
		again, err := s.DeleteLocation(ctx, "LOC-0001", "", now().Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, deleted, again, "returned as it is")
		assert.Equal(t, deleted, location(t, s, "LOC-0001"))
		assert.Empty(t, recorded(t, s), "no second event")
	})

	t.Run("a location without EVSEs", func(t *testing.T) {
		at := now()
		got, err := s.DeleteLocation(ctx, "LOC-0120", "", at)
		require.NoError(t, err)
		require.NotNil(t, got.DeletedAt)
		assert.Equal(t, at, *got.DeletedAt)
		assert.Equal(t, []int64{}, got.EvseUIDs)
		checkLocationEvent(t, recorded(t, s), chargenet.EventLocationDeleted, got)
	})

	t.Run("its id cannot be used again", func(t *testing.T) {
		before := takeSnapshot(t, s)
		same := *stored
		_, _, err := s.PutLocation(ctx, &same, "", now())
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeLocationDeleted, "id")
		_, err = s.CreateEVSE(ctx, prepared(t, postedEVSE("DE*TST*E9301", "LOC-0001", 900, ""), now()), nil, "", now())
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeLocationDeleted, "locationId")
		_, _, err = change(t, s, 1003, patchEVSE(chargenet.EVSEPatch{LocationID: ptr("LOC-0001")}, ""), now())
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeLocationDeleted, "locationId")
		imported := postedEVSE("DE*TST*E9302", "LOC-0001", 900, chargenet.StatusPlanned)
		imported.UID, imported.Version, imported.LastUpdated = 9302, 1, now()
		err = s.Import(ctx, &chargenet.Inventory{EVSEs: []chargenet.EVSE{imported}})
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeLocationDeleted, "evses[0].locationId")
		assert.Equal(t, before, takeSnapshot(t, s), "nothing changed")
		assert.Equal(t, deleted, location(t, s, "LOC-0001"))
		assert.Empty(t, recorded(t, s))
	})
}

// testListDeletedLocations deletes every third location without EVSEs and walks the
// list both ways in pages: deleted locations are left out, also when a read starts at
// one of them.
func testListDeletedLocations(t *testing.T, open Opener) {
	s, inv := demoStore(t, open)
	ctx := t.Context()
	deleted := map[string]bool{}
	for i := 21; i <= 120; i += 3 {
		id := fmt.Sprintf("LOC-%04d", i)
		_, err := s.DeleteLocation(ctx, id, "", now())
		require.NoError(t, err)
		deleted[id] = true
	}
	require.True(t, deleted["LOC-0120"], "the last one is deleted")
	var want []string
	for _, l := range sortedLocations(inv) {
		if !deleted[l.ID] {
			want = append(want, l.ID)
		}
	}

	const limit = 7
	walk := func(t *testing.T, backward bool) []string {
		var got []string
		seek := chargenet.Seek[string]{Backward: backward, Limit: limit}
		for range 100 {
			page, err := s.ListLocations(ctx, seek)
			require.NoError(t, err)
			for _, l := range page {
				assert.Nil(t, l.DeletedAt, l.ID)
			}
			got = append(got, keysOf(page, locationKey)...)
			if len(page) < limit {
				break
			}
			seek.Key, seek.HasKey = page[len(page)-1].ID, true
		}
		return got
	}
	t.Run("forward", func(t *testing.T) { assert.Equal(t, want, walk(t, false)) })
	t.Run("backward", func(t *testing.T) {
		back := slices.Clone(want)
		slices.Reverse(back)
		assert.Equal(t, back, walk(t, true))
	})
	t.Run("from a deleted key", func(t *testing.T) {
		page, err := s.ListLocations(ctx, chargenet.Seek[string]{Key: "LOC-0021", HasKey: true, Limit: 3})
		require.NoError(t, err)
		assert.Equal(t, []string{"LOC-0022", "LOC-0023", "LOC-0025"}, keysOf(page, locationKey))
		page, err = s.ListLocations(ctx, chargenet.Seek[string]{Key: "LOC-0027", HasKey: true, Backward: true, Limit: 3})
		require.NoError(t, err)
		assert.Equal(t, []string{"LOC-0026", "LOC-0025", "LOC-0023"}, keysOf(page, locationKey))
		page, err = s.ListLocations(ctx, chargenet.Seek[string]{Backward: true, Limit: 1})
		require.NoError(t, err)
		assert.Equal(t, []string{"LOC-0119"}, keysOf(page, locationKey), "the last one is deleted")
	})
	t.Run("documents", func(t *testing.T) {
		docs, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Limit: chargenet.MaxPageSize})
		require.NoError(t, err)
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		assert.Equal(t, want[:min(len(want), chargenet.MaxPageSize)], ids)
	})
	t.Run("Location finds them", func(t *testing.T) {
		l := location(t, s, "LOC-0021")
		assert.NotNil(t, l.DeletedAt)
	})
}

// testDeleteLocationRace deletes locations while EVSEs are created at them and moved to
// them: whichever commits first wins, and a deleted location never holds an EVSE that
// is not REMOVED.
func testDeleteLocationRace(t *testing.T, open Opener) {
	const rounds = 10
	s, _ := demoStore(t, open)
	ctx := t.Context()
	for i := range rounds {
		create := fmt.Sprintf("LOC-%04d", 21+2*i) // an EVSE is created at it
		move := fmt.Sprintf("LOC-%04d", 22+2*i)   // EVSE 1001+i moves to it
		posted := prepared(t, postedEVSE(fmt.Sprintf("DE*TST*ER%d", i), create, 900, ""), now())
		errs := make([]error, 4)
		atOnce(4, func(j int) {
			switch j {
			case 0:
				_, errs[j] = s.CreateEVSE(ctx, posted, nil, "", time.Now())
			case 1:
				_, errs[j] = s.DeleteLocation(ctx, create, "", time.Now())
			case 2:
				_, errs[j] = s.ChangeEVSE(ctx, 1001+int64(i), func(e *chargenet.EVSE) ([]chargenet.Event, error) {
					return e.ApplyPatch(chargenet.EVSEPatch{LocationID: &move}, "", time.Now())
				}, nil, "",

					time.Now())

			case 3:
				_, errs[j] = s.DeleteLocation(ctx, move, "", time.Now())
			}
		})
		for pair, ids := range [][2]int{{0, 1}, {2, 3}} {
			put, del := errs[ids[0]], errs[ids[1]]
			if put == nil {
				requireError(t, del, chargenet.ErrConflict, chargenet.CodeLocationInUse, "id")
			} else {
				require.NoError(t, del, "round %d pair %d: the EVSE was refused, so the delete went first", i, pair)
				requireError(t, put, chargenet.ErrConflict, chargenet.CodeLocationDeleted, "locationId")
			}
		}
		for _, id := range []string{create, move} {
			l := location(t, s, id)
			if l.DeletedAt == nil {
				continue
			}
			for _, uid := range l.EvseUIDs {
				e, err := s.EVSE(ctx, uid)
				require.NoError(t, err)
				assert.Equal(t, chargenet.StatusRemoved, e.Status, "deleted location %s holds EVSE %d", id, uid)
			}
		}
	}
}
