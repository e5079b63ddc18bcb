package storetest

import (
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSites checks the reads of locations with their EVSEs in (LastUpdated, ID) order:
// every location once, deleted ones included, each with exactly the EVSEs EVSE returns;
// bounds, offsets and positions; the count.
func testSites(t *testing.T, open Opener) {
	s, inv := demoStore(t, open)
	ctx := t.Context()
	base := inv.Locations[0].LastUpdated
	// Three locations move to the end of the order, one of them deleted.
	later := base.Add(time.Hour)
	for i, id := range []string{"LOC-0050", "LOC-0030", "LOC-0100"} {
		l := inv.Locations[0]
		for _, x := range inv.Locations {
			if x.ID == id {
				l = x
			}
		}
		l.Name = "renamed " + id
		_, _, err := s.PutLocation(ctx, &l, "", later.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
	}
	_, err := s.DeleteLocation(ctx, "LOC-0030", "", later.Add(10*time.Second))
	require.NoError(t, err)

	all, err := s.ListSites(ctx, chargenet.UpdateSeek{Limit: 500})
	require.NoError(t, err)
	require.Len(t, all, 120)
	for i := 1; i < len(all); i++ {
		a, b := all[i-1].Location, all[i].Location
		assert.True(t, a.LastUpdated.Before(b.LastUpdated) || a.LastUpdated.Equal(b.LastUpdated) && a.ID < b.ID,
			"%s (%v) before %s (%v)", a.ID, a.LastUpdated, b.ID, b.LastUpdated)
	}
	tail := []string{all[117].Location.ID, all[118].Location.ID, all[119].Location.ID}
	assert.Equal(t, []string{"LOC-0050", "LOC-0100", "LOC-0030"}, tail, "oldest first: the changed ones last")
	assert.NotNil(t, all[119].Location.DeletedAt, "a deleted location is read")
	assert.Equal(t, "renamed LOC-0100", all[118].Location.Name)

	evses := 0
	for _, site := range all {
		uids := []int64{}
		for _, e := range site.EVSEs {
			uids = append(uids, e.UID)
			want, err := s.EVSE(ctx, e.UID)
			require.NoError(t, err)
			assert.Equal(t, site.Location.ID, e.LocationID)
			assert.Equal(t, want.Version, e.Version)
			assert.Equal(t, want.Status, e.Status)
			assert.True(t, want.LastUpdated.Equal(e.LastUpdated))
			assert.Equal(t, want.Connectors, e.Connectors, "EVSE %d", e.UID)
			evses++
		}
		loc, err := s.Location(ctx, site.Location.ID)
		require.NoError(t, err)
		assert.Equal(t, loc.EvseUIDs, uids, "location %s", site.Location.ID)
		assert.Equal(t, uids, site.Location.EvseUIDs)
		assert.True(t, loc.LastUpdated.Equal(site.Location.LastUpdated))
	}
	assert.Equal(t, 40, evses)

	t.Run("pages by offset and by position give the same", func(t *testing.T) {
		var byOffset, byPosition []string
		seek := chargenet.UpdateSeek{Limit: 7}
		for {
			page, err := s.ListSites(ctx, chargenet.UpdateSeek{Limit: 7, Offset: len(byOffset)})
			require.NoError(t, err)
			for _, p := range page {
				byOffset = append(byOffset, p.Location.ID)
			}
			if len(page) < 7 {
				break
			}
		}
		for {
			page, err := s.ListSites(ctx, seek)
			require.NoError(t, err)
			for _, p := range page {
				byPosition = append(byPosition, p.Location.ID)
			}
			if len(page) < 7 {
				break
			}
			last := page[len(page)-1].Location
			seek = chargenet.UpdateSeek{Limit: 7, HasAfter: true, After: chargenet.UpdateKey{LastUpdated: last.LastUpdated, ID: last.ID}, Offset: 99}
		}
		require.Len(t, byOffset, 120)
		assert.Equal(t, byOffset, byPosition, "a position overrides the offset")
	})

	t.Run("bounds", func(t *testing.T) {
		from, to := later, later.Add(3*time.Second)
		page, err := s.ListSites(ctx, chargenet.UpdateSeek{From: from, To: to, Limit: 10})
		require.NoError(t, err)
		var ids []string
		for _, p := range page {
			ids = append(ids, p.Location.ID)
		}
		assert.Equal(t, []string{"LOC-0050", "LOC-0100"}, ids, "from inclusive, to exclusive")
		n, err := s.CountSites(ctx, from, to)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		n, err = s.CountSites(ctx, later, time.Time{})
		require.NoError(t, err)
		assert.Equal(t, 3, n)
		n, err = s.CountSites(ctx, time.Time{}, later)
		require.NoError(t, err)
		assert.Equal(t, 117, n)
		n, err = s.CountSites(ctx, time.Time{}, time.Time{})
		require.NoError(t, err)
		assert.Equal(t, 120, n)
		page, err = s.ListSites(ctx, chargenet.UpdateSeek{From: later.Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, page)
		assert.NotNil(t, page)
	})

	t.Run("versions of the same pages", func(t *testing.T) {
		last := all[59].Location
		for _, seek := range []chargenet.UpdateSeek{
			{Limit: 500},
			{Limit: 7, Offset: 14},
			{Limit: 7, HasAfter: true, After: chargenet.UpdateKey{LastUpdated: last.LastUpdated, ID: last.ID}, Offset: 99},
			{From: later, Limit: 10},
			{To: later, Limit: 10, Offset: 110},
			{From: later.Add(time.Minute), Limit: 10},
			{Limit: 0},
		} {
			sites, err := s.ListSites(ctx, seek)
			require.NoError(t, err)
			versions, err := s.ListSiteVersions(ctx, seek)
			require.NoError(t, err)
			require.NotNil(t, versions)
			require.Len(t, versions, len(sites), "%+v", seek)
			for i, site := range sites {
				assert.Equal(t, site.Location.ID, versions[i].ID)
				assert.Equal(t, site.Location.Version, versions[i].Version, site.Location.ID)
				assert.True(t, site.Location.LastUpdated.Equal(versions[i].LastUpdated), site.Location.ID)
			}
		}
		// A change of an EVSE is a new version of its location's site.
		before, err := s.ListSiteVersions(ctx, chargenet.UpdateSeek{Limit: 500})
		require.NoError(t, err)
		site, err := s.Site(ctx, "LOC-0002")
		require.NoError(t, err)
		require.NotEmpty(t, site.EVSEs)
		at := later.Add(30 * time.Second)
		_, err = s.ChangeEVSE(ctx, site.EVSEs[0].UID, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.ApplyPatch(chargenet.EVSEPatch{Status: new(chargenet.StatusInoperative)}, "", at)
		}, nil, "", at)
		require.NoError(t, err)
		after, err := s.ListSiteVersions(ctx, chargenet.UpdateSeek{Limit: 500})
		require.NoError(t, err)
		versionOf := func(vs []chargenet.SiteVersion, id string) int64 {
			for _, v := range vs {
				if v.ID == id {
					return v.Version
				}
			}
			return -1
		}
		assert.Greater(t, versionOf(after, "LOC-0002"), versionOf(before, "LOC-0002"))
		assert.Equal(t, versionOf(before, "LOC-0003"), versionOf(after, "LOC-0003"))
	})

	t.Run("one site", func(t *testing.T) {
		site, err := s.Site(ctx, "LOC-0001")
		require.NoError(t, err)
		assert.Equal(t, all[0].Location.ID, "LOC-0001")
		assert.Equal(t, all[0], *site)
		site, err = s.Site(ctx, "LOC-0030")
		require.NoError(t, err)
		assert.NotNil(t, site.Location.DeletedAt)
		_, err = s.Site(ctx, "LOC-9999")
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
	})

	t.Run("the count follows new locations and imports, not failed ones", func(t *testing.T) {
		count := func() int {
			t.Helper()
			n, err := s.CountSites(ctx, time.Time{}, time.Time{})
			require.NoError(t, err)
			return n
		}
		l := inv.Locations[0]
		l.ID, l.EvseUIDs = "LOC-NEW1", nil
		_, created, err := s.PutLocation(ctx, &l, "", later.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, created)
		assert.Equal(t, 121, count())
		l2 := l
		l2.ID = "LOC-NEW2"
		require.NoError(t, s.Import(ctx, &chargenet.Inventory{Locations: []chargenet.Location{l2}}))
		assert.Equal(t, 122, count())
		l3 := l
		l3.ID = "LOC-NEW3"
		err = s.Import(ctx, &chargenet.Inventory{Locations: []chargenet.Location{l3, inv.Locations[1]}})
		require.ErrorIs(t, err, chargenet.ErrConflict, "a location that exists fails the whole import")
		assert.Equal(t, 122, count(), "a failed import adds nothing to the count")
		_, err = s.Site(ctx, "LOC-NEW3")
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
	})
}
