package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testCodec = chargenet.NewCursorCodec([]byte("storetest cursor secret"))

// list is one paginated list of a store: its name, reader and key.
type list[T any, K int64 | string] struct {
	name string
	read func(context.Context, chargenet.Seek[K]) ([]T, error)
	key  func(*T) K
}

func evseList(s chargenet.Store) list[chargenet.EVSE, int64] {
	return list[chargenet.EVSE, int64]{chargenet.ListEVSEs, s.ListEVSEs, evseKey}
}

func locationList(s chargenet.Store) list[chargenet.Location, string] {
	return list[chargenet.Location, string]{chargenet.ListLocations, s.ListLocations, locationKey}
}

func (l list[T, K]) page(t testing.TB, cursor string, limit int) *chargenet.Page[T] {
	t.Helper()
	p, err := chargenet.Paginate(t.Context(), testCodec, l.name, cursor, limit, l.read, l.key)
	require.NoError(t, err)
	return p
}

// pagedInventory returns n locations with ids of mixed characters and n EVSEs with
// spaced uids, EVSE i at location i/2.
func pagedInventory(n int) *chargenet.Inventory {
	ts := now()
	inv := &chargenet.Inventory{}
	for i := range n {
		inv.Locations = append(inv.Locations, newLocation(mixedID(i), ts))
	}
	for i := range n {
		inv.EVSEs = append(inv.EVSEs, newEVSE(int64(7*i+3), mixedID(i/2), ts))
	}
	return asImported(inv)
}

// testPagination walks both lists through chargenet.Paginate forward to the end and
// back to the start, at several page sizes.
func testPagination(t *testing.T, open Opener) {
	for _, n := range []int{0, 1, 25, 26, 100, 1000} {
		t.Run(fmt.Sprintf("%d items", n), func(t *testing.T) {
			s := open(t, Options{})
			inv := pagedInventory(n)
			require.NoError(t, s.Import(t.Context(), inv))
			// Small pages over many items add time, not coverage.
			limits := []int{1, 7, chargenet.DefaultPageSize, chargenet.MaxPageSize}
			switch {
			case n > 100:
				limits = limits[2:]
			case n > 26:
				limits = limits[1:]
			}
			for _, limit := range limits {
				t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
					checkWalk(t, locationList(s), limit, sortedLocations(inv))
					checkWalk(t, evseList(s), limit, sortedEVSEs(inv))
				})
			}
		})
	}
}

// checkWalk walks l forward from the first page, checking each page, then back from
// the last page through Previous, checking that it yields the same pages.
func checkWalk[T any, K int64 | string](t *testing.T, l list[T, K], limit int, want []T) {
	t.Helper()
	pages := walkForward(t, l, limit, len(want)/limit+2)
	wantPages := max(1, (len(want)+limit-1)/limit)
	require.Len(t, pages, wantPages, "%s: number of pages of %d items, %d a page", l.name, len(want), limit)

	got := []T{}
	for i, p := range pages {
		assert.Equal(t, p.HasMore, p.Next != "", "%s page %d: Next is empty exactly when HasMore is false", l.name, i)
		assert.Equal(t, i < len(pages)-1, p.HasMore, "%s page %d: HasMore on every page but the last", l.name, i)
		assert.Equal(t, i == 0, p.Previous == "", "%s page %d: Previous is empty exactly on the first page", l.name, i)
		if i < len(pages)-1 {
			assert.Len(t, p.Items, limit, "%s page %d: full", l.name, i)
		}
		got = append(got, p.Items...)
	}
	if !assert.Equal(t, keysOf(want, l.key), keysOf(got, l.key), "%s: the forward walk yields every item once, in order", l.name) {
		return
	}
	assert.Equal(t, want, got, "%s: items as imported", l.name)

	// Back from the last page: each Previous leads to the page before, whose Next
	// leads back.
	cur := pages[len(pages)-1]
	for i := len(pages) - 2; i >= 0; i-- {
		require.NotEmpty(t, cur.Previous, "%s: Previous of page %d", l.name, i+1)
		prev := l.page(t, cur.Previous, limit)
		assert.Equal(t, pages[i].Items, prev.Items, "%s: Previous of page %d is page %d", l.name, i+1, i)
		assert.Equal(t, i == 0, prev.Previous == "", "%s page %d reached backward: Previous is empty exactly on the first page", l.name, i)
		assert.True(t, prev.HasMore, "%s page %d reached backward: HasMore", l.name, i)
		if assert.NotEmpty(t, prev.Next, "%s page %d reached backward: Next", l.name, i) {
			next := l.page(t, prev.Next, limit)
			assert.Equal(t, keysOf(pages[i+1].Items, l.key), keysOf(next.Items, l.key), "%s: Next of page %d reached backward is page %d", l.name, i, i+1)
		}
		cur = prev
	}
}

// walkForward follows Next from the first page to the last one.
func walkForward[T any, K int64 | string](t *testing.T, l list[T, K], limit, maxPages int) []*chargenet.Page[T] {
	t.Helper()
	var pages []*chargenet.Page[T]
	cursor := ""
	for {
		require.Less(t, len(pages), maxPages, "%s: the walk does not end", l.name)
		p := l.page(t, cursor, limit)
		pages = append(pages, p)
		if !p.HasMore {
			return pages
		}
		cursor = p.Next
	}
}

// testPaginationInsertDuringWalk imports items, before and after the walk's position,
// in the middle of a walk: the items that were there before are still seen exactly
// once and in order, items inserted ahead are seen, items inserted behind are not.
func testPaginationInsertDuringWalk(t *testing.T, open Opener) {
	s := open(t, Options{})
	ctx := t.Context()
	ts := now()
	inv := &chargenet.Inventory{}
	for i := range 100 {
		id := fmt.Sprintf("M-%03d", i*10)
		inv.Locations = append(inv.Locations, newLocation(id, ts))
		inv.EVSEs = append(inv.EVSEs, newEVSE(int64(1000+i*10), id, ts))
	}
	require.NoError(t, s.Import(ctx, inv))
	before := takeSnapshot(t, s)
	// Page 3 of 10 ends at M-290 and uid 1290.
	added := &chargenet.Inventory{
		Locations: []chargenet.Location{newLocation("M-005", ts), newLocation("M-295", ts), newLocation("M-999", ts)},
		EVSEs: []chargenet.EVSE{
			newEVSE(1005, "M-000", ts), newEVSE(1295, "M-000", ts), newEVSE(9999, "", ts),
		},
	}

	t.Run("locations", func(t *testing.T) {
		checkInsertDuringWalk(t, s, locationList(s), keysOf(before.Locations, locationKey),
			func() { require.NoError(t, s.Import(ctx, &chargenet.Inventory{Locations: added.Locations})) },
			[]string{"M-295", "M-999"}, []string{"M-005"})
	})
	t.Run("evses", func(t *testing.T) {
		checkInsertDuringWalk(t, s, evseList(s), keysOf(before.EVSEs, evseKey),
			func() { require.NoError(t, s.Import(ctx, &chargenet.Inventory{EVSEs: added.EVSEs})) },
			[]int64{1295, 9999}, []int64{1005})
	})
}

func checkInsertDuringWalk[T any, K int64 | string](t *testing.T, s chargenet.Store, l list[T, K], existing []K, insert func(), ahead, behind []K) {
	const limit = 10
	var seen []K
	cursor := ""
	for page := 0; ; page++ {
		require.Less(t, page, 20, "the walk does not end")
		if page == 3 {
			insert()
		}
		p := l.page(t, cursor, limit)
		seen = append(seen, keysOf(p.Items, l.key)...)
		if !p.HasMore {
			break
		}
		cursor = p.Next
	}
	for i := 1; i < len(seen); i++ {
		assert.Less(t, seen[i-1], seen[i], "keys strictly ascending: no repeats at %d", i)
	}
	count := map[K]int{}
	for _, k := range seen {
		count[k]++
	}
	for _, k := range existing {
		assert.Equal(t, 1, count[k], "existing item %v seen once", k)
	}
	for _, k := range ahead {
		assert.Equal(t, 1, count[k], "item %v inserted ahead of the walk is seen", k)
	}
	for _, k := range behind {
		assert.Zero(t, count[k], "item %v inserted behind the walk is not seen", k)
	}

	// Back from the last page to the first: now every item, once and in order.
	all := keysOf(readAll(t, l.read, l.key), l.key)
	last := walkForward(t, l, limit, len(all)/limit+2)
	p := last[len(last)-1]
	back := keysOf(p.Items, l.key)
	for steps := 0; p.Previous != ""; steps++ {
		require.Less(t, steps, 20, "the backward walk does not end")
		p = l.page(t, p.Previous, limit)
		back = append(keysOf(p.Items, l.key), back...)
	}
	assert.Equal(t, all, back, "the backward walk yields every item once, in order")
}

// testPaginationBadCursor checks that a cursor works only on the list that issued it,
// unaltered, and with the secret that signed it.
func testPaginationBadCursor(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	locNext := locationList(s).page(t, "", 5).Next
	evseNext := evseList(s).page(t, "", 5).Next
	require.NotEmpty(t, locNext)
	require.NotEmpty(t, evseNext)
	other := chargenet.NewCursorCodec([]byte("another secret"))

	tests := []struct {
		name   string
		cursor string
		run    func(cursor string) error
	}{
		{"location cursor on the EVSE list", locNext, func(c string) error {
			_, err := chargenet.Paginate(ctx, testCodec, chargenet.ListEVSEs, c, 5, s.ListEVSEs, evseKey)
			return err
		}},
		{"EVSE cursor on the location list", evseNext, func(c string) error {
			_, err := chargenet.Paginate(ctx, testCodec, chargenet.ListLocations, c, 5, s.ListLocations, locationKey)
			return err
		}},
		{"cursor signed with another secret", evseNext, func(c string) error {
			_, err := chargenet.Paginate(ctx, other, chargenet.ListEVSEs, c, 5, s.ListEVSEs, evseKey)
			return err
		}},
		{"altered cursor", alter(evseNext), func(c string) error {
			_, err := chargenet.Paginate(ctx, testCodec, chargenet.ListEVSEs, c, 5, s.ListEVSEs, evseKey)
			return err
		}},
		{"garbage", "not-a-cursor", func(c string) error {
			_, err := chargenet.Paginate(ctx, testCodec, chargenet.ListLocations, c, 5, s.ListLocations, locationKey)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireError(t, tt.run(tt.cursor), chargenet.ErrInvalid, chargenet.CodeInvalidCursor, "cursor")
		})
	}
}

// alter changes the first character of a cursor.
func alter(cursor string) string {
	if cursor[0] == 'A' {
		return "B" + cursor[1:]
	}
	return "A" + cursor[1:]
}
