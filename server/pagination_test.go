package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func locations(n int) *chargenet.Inventory {
	inv := &chargenet.Inventory{}
	for i := 0; i < n; i++ {
		inv.Locations = append(inv.Locations, chargenet.Location{
			ID: fmt.Sprintf("L%05d", i), Name: "Site", Address: "Street 1", City: "Berlin", Country: "DEU",
			TimeZone: "Europe/Berlin", LastUpdated: time.Now(),
		})
	}
	return inv
}

// walk follows next cursors from the first page, then previous cursors back, and checks
// the envelope rules on every page. It returns the ids seen going forward.
func walk(t *testing.T, v *env, limit int) []string {
	t.Helper()
	type page struct {
		ids  []string
		body gen.LocationPage
	}
	var forward []page
	path := fmt.Sprintf("/v1/locations?limit=%d", limit)
	for {
		rec := v.do(http.MethodGet, path, "")
		require.Equal(t, 200, rec.Code, rec.Body.String())
		p := decode[gen.LocationPage](t, rec)
		var ids []string
		for _, l := range p.Data {
			ids = append(ids, l.Id)
		}
		assert.LessOrEqual(t, len(ids), limit)
		assert.Equal(t, p.Pagination.HasMore, p.Pagination.NextCursor != nil, "next_cursor is null exactly when has_more is false")
		assert.Equal(t, len(forward) == 0, p.Pagination.PreviousCursor == nil, "previous_cursor is null exactly on the first page")
		forward = append(forward, page{ids, p})
		if !p.Pagination.HasMore {
			break
		}
		require.Less(t, len(forward), 2000, "walk does not end")
		path = fmt.Sprintf("/v1/locations?limit=%d&cursor=%s", limit, url.QueryEscape(*p.Pagination.NextCursor))
	}
	// Back from the last page: each previous page equals the one seen going forward.
	for i := len(forward) - 1; i > 0; i-- {
		prev := forward[i].body.Pagination.PreviousCursor
		require.NotNil(t, prev)
		rec := v.do(http.MethodGet, fmt.Sprintf("/v1/locations?limit=%d&cursor=%s", limit, url.QueryEscape(*prev)), "")
		require.Equal(t, 200, rec.Code)
		p := decode[gen.LocationPage](t, rec)
		assert.Equal(t, forward[i-1].body, p, "page %d walking back", i-1)
	}
	var all []string
	for _, p := range forward {
		all = append(all, p.ids...)
	}
	return all
}

func TestPaginationWalks(t *testing.T) {
	for _, n := range []int{0, 1, 25, 26, 100, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			v := newEnv(t, true)
			require.NoError(t, v.store.Import(context.Background(), locations(n)))
			for _, limit := range []int{25, 100} {
				if n == 1000 && limit == 25 {
					limit = 97 // keep the walk short; 25 is covered by the smaller lists
				}
				ids := walk(t, v, limit)
				require.Len(t, ids, n, "limit %d: every item once", limit)
				for i, id := range ids {
					assert.Equal(t, fmt.Sprintf("L%05d", i), id, "ascending order")
				}
			}
		})
	}
}

func TestPaginationDefaultsAndDemo(t *testing.T) {
	v := newEnv(t, false)
	p := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations", ""))
	assert.Len(t, p.Data, chargenet.DefaultPageSize)
	assert.Len(t, walk(t, v, 7), 120)
	e := decode[gen.EvsePage](t, v.do(http.MethodGet, "/v2/evses?limit=100", ""))
	assert.Len(t, e.Data, 40)
	assert.False(t, e.Pagination.HasMore)
}

func TestPaginationInsertDuringWalk(t *testing.T) {
	v := newEnv(t, true)
	require.NoError(t, v.store.Import(context.Background(), locations(60)))
	p := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=20", ""))
	// Insert items before, inside and after the current position.
	extra := &chargenet.Inventory{}
	for _, id := range []string{"A0000", "L00010x", "L00030x", "Z0000"} {
		extra.Locations = append(extra.Locations, chargenet.Location{ID: id, Name: "New", Address: "Street 2", City: "Oslo",
			Country: "NOR", TimeZone: "Europe/Oslo", LastUpdated: time.Now()})
	}
	require.NoError(t, v.store.Import(context.Background(), extra))
	seen := map[string]int{}
	for _, l := range p.Data {
		seen[l.Id]++
	}
	for p.Pagination.HasMore {
		p = decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=20&cursor="+url.QueryEscape(*p.Pagination.NextCursor), ""))
		for _, l := range p.Data {
			seen[l.Id]++
		}
	}
	for i := 0; i < 60; i++ {
		assert.Equal(t, 1, seen[fmt.Sprintf("L%05d", i)], "pre-existing item %d seen exactly once", i)
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, id)
	}
}

// TestPaginationDeleteBeforeCursor deletes every location before a next cursor: the
// page it leads to is then the first, and its previous_cursor is null; a location left
// before it keeps it set.
func TestPaginationDeleteBeforeCursor(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep first %v", keep), func(t *testing.T) {
			v := newEnv(t, true)
			require.NoError(t, v.store.Import(context.Background(), locations(6)))
			p := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=2", ""))
			require.NotNil(t, p.Pagination.NextCursor)
			for _, id := range []string{"L00000", "L00001"} {
				if keep && id == "L00000" {
					continue
				}
				rec := v.do(http.MethodDelete, "/v1/locations/"+id, "")
				require.Equal(t, 200, rec.Code, rec.Body.String())
			}
			next := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=2&cursor="+url.QueryEscape(*p.Pagination.NextCursor), ""))
			require.Len(t, next.Data, 2)
			assert.Equal(t, "L00002", next.Data[0].Id)
			if !keep {
				assert.Nil(t, next.Pagination.PreviousCursor, "nothing is left before the page")
				return
			}
			require.NotNil(t, next.Pagination.PreviousCursor)
			back := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=2&cursor="+url.QueryEscape(*next.Pagination.PreviousCursor), ""))
			require.Len(t, back.Data, 1)
			assert.Equal(t, "L00000", back.Data[0].Id)
			assert.Nil(t, back.Pagination.PreviousCursor)
		})
	}
}

// TestPaginationDeleteAfterCursor deletes every location after a next cursor's item:
// the cursor's page is empty and leads back to the page before it, that item included.
func TestPaginationDeleteAfterCursor(t *testing.T) {
	v := newEnv(t, true)
	require.NoError(t, v.store.Import(context.Background(), locations(6)))
	p := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=2", ""))
	require.NotNil(t, p.Pagination.NextCursor)
	for _, id := range []string{"L00002", "L00003", "L00004", "L00005"} {
		rec := v.do(http.MethodDelete, "/v1/locations/"+id, "")
		require.Equal(t, 200, rec.Code, rec.Body.String())
	}
	next := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=2&cursor="+url.QueryEscape(*p.Pagination.NextCursor), ""))
	assert.Empty(t, next.Data)
	assert.False(t, next.Pagination.HasMore)
	require.NotNil(t, next.Pagination.PreviousCursor, "the cursor's item and the one before are left")
	back := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=2&cursor="+url.QueryEscape(*next.Pagination.PreviousCursor), ""))
	require.Len(t, back.Data, 2)
	assert.Equal(t, "L00000", back.Data[0].Id)
	assert.Equal(t, "L00001", back.Data[1].Id)
	assert.Nil(t, back.Pagination.PreviousCursor)
	assert.Nil(t, back.Pagination.NextCursor)
	assert.False(t, back.Pagination.HasMore)
}

func TestPaginationBadInput(t *testing.T) {
	v := newEnv(t, false)
	evsePage := decode[gen.EvsePage](t, v.do(http.MethodGet, "/v2/evses?limit=5", ""))
	locPage := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=5", ""))
	tampered := []byte(*locPage.Pagination.NextCursor)
	tampered[2] ^= 1
	tests := []struct {
		name, query string
		code, param string
	}{
		{"limit 0", "limit=0", chargenet.CodeInvalidParameter, "limit"},
		{"limit 101", "limit=101", chargenet.CodeInvalidParameter, "limit"},
		{"limit -1", "limit=-1", chargenet.CodeInvalidParameter, "limit"},
		{"limit abc", "limit=abc", chargenet.CodeInvalidParameter, "limit"},
		{"limit 1.5", "limit=1.5", chargenet.CodeInvalidParameter, "limit"},
		{"empty limit", "limit=", chargenet.CodeInvalidParameter, "limit"},
		{"limit without =", "limit", chargenet.CodeInvalidParameter, "limit"},
		{"empty limit after a cursor-less start", "limit=5&limit=", chargenet.CodeInvalidParameter, "limit"},
		{"empty cursor", "cursor=", chargenet.CodeInvalidCursor, "cursor"},
		{"garbage cursor", "cursor=abc", chargenet.CodeInvalidCursor, "cursor"},
		{"cursor with bad characters", "cursor=" + url.QueryEscape("a b/c"), chargenet.CodeInvalidCursor, "cursor"},
		{"tampered cursor", "cursor=" + url.QueryEscape(string(tampered)), chargenet.CodeInvalidCursor, "cursor"},
		{"cursor of another list", "cursor=" + url.QueryEscape(*evsePage.Pagination.NextCursor), chargenet.CodeInvalidCursor, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertError(t, v.do(http.MethodGet, "/v1/locations?"+tt.query, ""), 400, tt.code, tt.param)
		})
	}
	t.Run("cursor signed under another secret", func(t *testing.T) {
		cursor := "cursor=" + url.QueryEscape(*locPage.Pagination.NextCursor)
		assert.Equal(t, 200, newEnvWithStore(t, v.store).do(http.MethodGet, "/v1/locations?"+cursor, "").Code,
			"a replica sharing the secret accepts it")
		other := newEnvWithSecret(t, v.store, "another-secret-another-secret-xx")
		assertError(t, other.do(http.MethodGet, "/v1/locations?"+cursor, ""), 400, chargenet.CodeInvalidCursor, "cursor")
	})
}
