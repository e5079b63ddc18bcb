package ocpi

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSiteCache(t *testing.T) {
	at := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	v := func(id string, version int64) chargenet.SiteVersion {
		return chargenet.SiteVersion{ID: id, Version: version, LastUpdated: at.Add(time.Duration(version) * time.Second)}
	}
	c := newSiteCache(100)
	c.put(v("A", 1), make([]byte, 40))
	c.put(v("B", 1), make([]byte, 40))

	tests := []struct {
		name string
		v    chargenet.SiteVersion
		ok   bool
	}{
		{"the version kept", v("A", 1), true},
		{"a later version", v("A", 2), false},
		{"the same version at another time", chargenet.SiteVersion{ID: "A", Version: 1, LastUpdated: at}, false},
		{"a site not kept", v("C", 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := c.get(tt.v)
			assert.Equal(t, tt.ok, ok)
		})
	}

	c.put(v("A", 2), make([]byte, 50))
	_, ok := c.get(v("A", 1))
	assert.False(t, ok, "a new version replaces the old one")
	_, ok = c.get(v("A", 2))
	assert.True(t, ok)
	assert.Equal(t, 90, c.size)

	c.put(v("C", 1), make([]byte, 30))
	assert.LessOrEqual(t, c.size, 100, "bounded")
	_, ok = c.get(v("C", 1))
	assert.True(t, ok, "what was added last is kept")
	assert.Len(t, c.m, 2, "one of A and B was forgotten to make room")

	c.put(v("D", 1), make([]byte, 101))
	_, ok = c.get(v("D", 1))
	assert.False(t, ok, "a Location larger than the bound is not kept")
}

// countingStore counts the reads of whole sites.
type countingStore struct {
	chargenet.Store
	site, list atomic.Int64
}

func (s *countingStore) Site(ctx context.Context, id string) (*chargenet.Site, error) {
	s.site.Add(1)
	return s.Store.Site(ctx, id)
}

func (s *countingStore) ListSites(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.Site, error) {
	s.list.Add(1)
	return s.Store.ListSites(ctx, seek)
}

// TestPageEncodesChangedSitesOnly checks that a page is the same whether it is read
// whole or assembled from the kept Locations, and that it reads only the sites that
// changed since, or the whole page when many did.
func TestPageEncodesChangedSitesOnly(t *testing.T) {
	sq, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "chargenet.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sq.Close() })
	require.NoError(t, sq.Import(t.Context(), chargenet.DemoInventory(time.Now().Add(-time.Hour))))
	store := &countingStore{Store: sq}
	s, err := New(Config{Store: store, Party: Party{CountryCode: "NL", PartyID: "CNE", Name: "test"}, PublicURL: "https://cn.example.com"})
	require.NoError(t, err)
	ctx := t.Context()
	seek := chargenet.UpdateSeek{Limit: 501} // every one of the demo's 120 locations

	// whole reads the page in one snapshot, through a service that keeps nothing.
	whole := func() string {
		fresh, err := New(Config{Store: sq, Party: s.cfg.Party, PublicURL: s.cfg.PublicURL})
		require.NoError(t, err)
		items, _, _, err := fresh.readPage(ctx, seek)
		require.NoError(t, err)
		return string(joinArray(items))
	}
	read := func(sites, lists int64) string {
		t.Helper()
		store.site.Store(0)
		store.list.Store(0)
		items, last, more, err := s.page(ctx, seek)
		require.NoError(t, err)
		assert.False(t, more)
		assert.Len(t, items, 120)
		assert.NotEmpty(t, last.ID)
		assert.Equal(t, sites, store.site.Load(), "sites read alone")
		assert.Equal(t, lists, store.list.Load(), "whole pages read")
		return string(joinArray(items))
	}
	// change changes the status of the EVSEs and returns how many locations they are in.
	change := func(uids ...int64) int64 {
		locations := map[string]bool{}
		for _, uid := range uids {
			now := time.Now()
			e, err := sq.ChangeEVSE(ctx, uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
				st := chargenet.StatusInoperative
				if e.Status == st {
					st = chargenet.StatusAvailable
				}
				return e.ApplyPatch(chargenet.EVSEPatch{Status: &st}, "", now)
			}, nil, "", now)
			require.NoError(t, err, "EVSE %d", uid)
			locations[e.LocationID] = true
		}
		return int64(len(locations))
	}

	assert.Equal(t, whole(), read(0, 1), "first: the whole page, every site kept")
	assert.Equal(t, whole(), read(0, 0), "then: every site from what was kept")
	n := change(1001)
	got := read(n, 0)
	assert.Equal(t, whole(), got, "one changed site read alone")
	assert.Contains(t, got, `"uid":"1001"`)
	n = change(1001, 1005, 1009, 1013, 1017, 1021)
	require.Greater(t, n, int64(4))
	assert.Equal(t, whole(), read(n, 0), "a few changed: each read alone")
	var all []int64
	for uid := int64(1001); uid <= 1040; uid++ {
		all = append(all, uid)
	}
	require.Greater(t, change(all...), int64(120/8))
	assert.Equal(t, whole(), read(0, 1), "many changed: the whole page again")
	assert.Equal(t, whole(), read(0, 0))
}
