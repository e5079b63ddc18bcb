package chargenet

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCursorCodec(t *testing.T) {
	c := NewCursorCodec([]byte("secret-one-secret-one-secret-one"))
	cur := c.encode(ListLocations, "LOC-1", true)
	p, err := c.decode(ListLocations, cur)
	require.NoError(t, err)
	assert.Equal(t, `"LOC-1"`, string(p.Key))
	assert.True(t, p.Backward)
	assert.NotContains(t, cur, "=", "base64url without padding")

	other := NewCursorCodec([]byte("secret-two-secret-two-secret-two"))
	flipped := []byte(cur)
	flipped[3] ^= 0x01
	bad := map[string]string{
		"another list":   c.encode(ListEVSEs, int64(5), false),
		"another secret": other.encode(ListLocations, "LOC-1", true),
		"tampered":       string(flipped),
		"no signature":   strings.Split(cur, ".")[0],
		"not base64":     "!!!.???",
		"empty":          ".",
	}
	for name, s := range bad {
		_, err := c.decode(ListLocations, s)
		var de *Error
		require.True(t, errors.As(err, &de), name)
		assert.Equal(t, CodeInvalidCursor, de.Code, name)
		assert.Equal(t, "cursor", de.Param, name)
	}
}

// sliceReader is a keyset reader over sorted ints, as a store would implement it.
func sliceReader(items []int64) func(context.Context, Seek[int64]) ([]int64, error) {
	return func(_ context.Context, s Seek[int64]) ([]int64, error) {
		var out []int64
		if !s.Backward {
			for _, v := range items {
				if (!s.HasKey || v > s.Key || s.Inclusive && v == s.Key) && len(out) < s.Limit {
					out = append(out, v)
				}
			}
			return out, nil
		}
		for i := len(items) - 1; i >= 0; i-- {
			if (!s.HasKey || items[i] < s.Key || s.Inclusive && items[i] == s.Key) && len(out) < s.Limit {
				out = append(out, items[i])
			}
		}
		return out, nil
	}
}

func TestPaginateCursorOfWrongKeyType(t *testing.T) {
	c := NewCursorCodec([]byte("secret-one-secret-one-secret-one"))
	cur := c.encode(ListEVSEs, "not-a-number", false)
	_, err := Paginate(context.Background(), c, ListEVSEs, cur, 10, sliceReader(nil), func(v *int64) int64 { return *v })
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestPaginateEmptyPages(t *testing.T) {
	c := NewCursorCodec([]byte("secret-one-secret-one-secret-one"))
	items := []int64{1, 2, 3}
	key := func(v *int64) int64 { return *v }
	// A cursor past the end (the last items were deleted) gives an empty page that
	// still leads back.
	p, err := Paginate(context.Background(), c, ListEVSEs, c.encode(ListEVSEs, int64(10), false), 2, sliceReader(items), key)
	require.NoError(t, err)
	assert.Empty(t, p.Items)
	assert.False(t, p.HasMore)
	require.NotEmpty(t, p.Previous)
	back, err := Paginate(context.Background(), c, ListEVSEs, p.Previous, 2, sliceReader(items), key)
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 3}, back.Items)
	assert.True(t, back.HasMore == false && back.Next == "", "nothing after 3")
	assert.NotEmpty(t, back.Previous)
}

// TestPaginateAfterDeletes follows the next cursor of the first page [1 2] of a list of
// 1..6 whose items can be deleted, after deleting some: the page has a previous cursor
// exactly when an item is left before it (found in the page's own read while the
// cursor's item is there), and that cursor returns the items before the page, the
// cursor's item included while it is there, as the first page.
func TestPaginateAfterDeletes(t *testing.T) {
	c := NewCursorCodec([]byte("secret-one-secret-one-secret-one"))
	key := func(v *int64) int64 { return *v }
	tests := []struct {
		name     string
		left     []int64 // of 1..6
		page     []int64 // the page after the cursor
		reads    int
		previous []int64 // the page before it; nil: none
		backMore bool    // whether the page before has a next page
	}{
		{"nothing deleted", []int64{1, 2, 3, 4, 5, 6}, []int64{3, 4}, 1, []int64{1, 2}, true},
		{"the cursor's item deleted", []int64{1, 3, 4, 5, 6}, []int64{3, 4}, 2, []int64{1}, true},
		{"every item before deleted", []int64{3, 4, 5, 6}, []int64{3, 4}, 2, nil, false},
		{"only the cursor's item left before", []int64{2, 3, 4, 5, 6}, []int64{3, 4}, 1, []int64{2}, true},
		{"every item after deleted", []int64{1, 2}, nil, 1, []int64{1, 2}, false},
		{"only the cursor's item left", []int64{2}, nil, 1, []int64{2}, false},
		{"the cursor's item and every one after deleted", []int64{1}, nil, 2, []int64{1}, false},
		{"every item deleted", nil, nil, 2, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			read := func(ctx context.Context, s Seek[int64]) ([]int64, error) {
				reads++
				return sliceReader(tt.left)(ctx, s)
			}
			p, err := Paginate(context.Background(), c, ListLocations, c.encode(ListLocations, int64(2), false), 2, read, key)
			require.NoError(t, err)
			if tt.page == nil {
				assert.Empty(t, p.Items)
			} else {
				assert.Equal(t, tt.page, p.Items)
			}
			assert.Equal(t, len(tt.page) > 0, p.HasMore)
			assert.Equal(t, tt.reads, reads, "reads")
			if tt.previous == nil {
				assert.Empty(t, p.Previous)
				return
			}
			require.NotEmpty(t, p.Previous)
			back, err := Paginate(context.Background(), c, ListLocations, p.Previous, 2, sliceReader(tt.left), key)
			require.NoError(t, err)
			assert.Equal(t, tt.previous, back.Items)
			assert.Equal(t, tt.backMore, back.HasMore)
			assert.Empty(t, back.Previous, "the page before is the first")
		})
	}
}

// BenchmarkCursor measures signing and checking a cursor (HMAC-SHA256, base64url).
func BenchmarkCursor(b *testing.B) {
	c := NewCursorCodec([]byte("bench-secret-bench-secret-bench-secret"))
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.encode(ListLocations, "LOC-0099975", false)
		}
	})
	cursor := c.encode(ListLocations, "LOC-0099975", false)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.decode(ListLocations, cursor); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// change is an item of a change-ordered list: its change position, key and time.
type change struct {
	pos uint64
	key int64
	at  time.Time
}

// changeReader reads items (kept in change order, as a store returns them) as a store's
// change list would: at or after seek.Since, after (Pos, Key).
func changeReader(items *[]change) func(context.Context, ChangeSeek[int64]) ([]change, error) {
	return func(_ context.Context, s ChangeSeek[int64]) ([]change, error) {
		var out []change
		for _, c := range *items {
			after := !s.HasPos || c.pos > s.Pos || (c.pos == s.Pos && c.key > s.Key)
			if after && !c.at.Before(s.Since) && len(out) < s.Limit {
				out = append(out, c)
			}
		}
		return out, nil
	}
}

func changePos(c *change) (uint64, int64) { return c.pos, c.key }

func TestPaginateChangesWalksForwardAndResumes(t *testing.T) {
	ctx := context.Background()
	codec := NewCursorCodec([]byte("secret-one-secret-one-secret-one"))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var items []change
	for i := range 7 {
		items = append(items, change{pos: uint64(10 + i), key: int64(100 - i), at: t0.Add(time.Duration(i) * time.Second)})
	}
	items = append(items, change{pos: 3, key: 1, at: t0.Add(-time.Hour)}) // before since: never listed
	slices.SortFunc(items, func(a, b change) int { return cmp.Compare(a.pos, b.pos) })
	filter := ChangeFilter(t0)
	read := changeReader(&items)

	var seen []uint64
	cursor, pages := "", 0
	var last *ChangePage[change]
	for {
		page, err := PaginateChanges(ctx, codec, ListEVSEChanges, filter, cursor, t0, 3, read, changePos)
		require.NoError(t, err)
		pages++
		assert.NotEmpty(t, page.Resume, "every page carries a resume cursor")
		assert.Equal(t, page.HasMore, page.Next != "", "next is empty exactly when there is no more")
		for _, c := range page.Items {
			seen = append(seen, c.pos)
		}
		last = page
		if !page.HasMore {
			break
		}
		assert.Equal(t, page.Next, page.Resume)
		cursor = page.Next
	}
	assert.Equal(t, 3, pages)
	assert.Equal(t, []uint64{10, 11, 12, 13, 14, 15, 16}, seen, "change order, items before since left out")

	// Polling with the last resume cursor finds nothing yet, and then the changes
	// committed later, even one whose time is older than items already seen.
	again, err := PaginateChanges(ctx, codec, ListEVSEChanges, filter, last.Resume, t0, 3, read, changePos)
	require.NoError(t, err)
	assert.Empty(t, again.Items)
	assert.False(t, again.HasMore)
	assert.Empty(t, again.Next)
	require.NotEmpty(t, again.Resume, "an empty page resumes where it started")
	items = append(items, change{pos: 17, key: 5, at: t0.Add(time.Second)}, change{pos: 17, key: 200, at: t0.Add(time.Minute)})
	later, err := PaginateChanges(ctx, codec, ListEVSEChanges, filter, again.Resume, t0, 3, read, changePos)
	require.NoError(t, err)
	assert.Equal(t, []change{items[len(items)-2], items[len(items)-1]}, later.Items)

	// An empty first page resumes from the start.
	empty := []change{}
	first, err := PaginateChanges(ctx, codec, ListEVSEChanges, filter, "", t0, 3, changeReader(&empty), changePos)
	require.NoError(t, err)
	assert.Empty(t, first.Items)
	empty = append(empty, change{pos: 1, key: 1, at: t0})
	next, err := PaginateChanges(ctx, codec, ListEVSEChanges, filter, first.Resume, t0, 3, changeReader(&empty), changePos)
	require.NoError(t, err)
	assert.Equal(t, empty, next.Items)
}

func TestPaginateChangesRefusesForeignCursors(t *testing.T) {
	ctx := context.Background()
	codec := NewCursorCodec([]byte("secret-one-secret-one-secret-one"))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	items := []change{{pos: 1, key: 1, at: t0}, {pos: 2, key: 2, at: t0}}
	read := changeReader(&items)
	page, err := PaginateChanges(ctx, codec, ListEVSEChanges, ChangeFilter(t0), "", t0, 1, read, changePos)
	require.NoError(t, err)
	require.NotEmpty(t, page.Next)
	plain, err := Paginate(ctx, codec, ListEVSEs, "", 1, sliceReader([]int64{1, 2}), func(v *int64) int64 { return *v })
	require.NoError(t, err)
	require.NotEmpty(t, plain.Next)

	cases := []struct {
		name, list, filter, cursor, want string
	}{
		{"another updated_since", ListEVSEChanges, ChangeFilter(t0.Add(time.Nanosecond)), page.Next, "same filters (updated_since)"},
		{"another change list", ListLocationChanges, ChangeFilter(t0), page.Next, "another list"},
		{"the event log", ListEvents, EventFilter(nil, t0, ""), page.Next, "another list"},
		{"a plain list's cursor", ListEVSEChanges, ChangeFilter(t0), plain.Next, "without updated_since"},
		{"tampered", ListEVSEChanges, ChangeFilter(t0), page.Next[:len(page.Next)-2] + "AA", "altered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PaginateChanges(ctx, codec, tc.list, tc.filter, tc.cursor, t0, 1, read, changePos)
			var de *Error
			require.True(t, errors.As(err, &de), "got %v", err)
			assert.Equal(t, CodeInvalidCursor, de.Code)
			assert.Equal(t, "cursor", de.Param)
			assert.Contains(t, de.Message, tc.want)
		})
	}
	t.Run("a change cursor on the plain list", func(t *testing.T) {
		_, err := Paginate(ctx, codec, ListEVSEs, page.Next, 1, sliceReader([]int64{1, 2}), func(v *int64) int64 { return *v })
		var de *Error
		require.True(t, errors.As(err, &de), "got %v", err)
		assert.Equal(t, CodeInvalidCursor, de.Code)
		assert.Contains(t, de.Message, "pass the same updated_since")
	})
}

func TestEventFilter(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	assert.Equal(t, EventFilter([]string{"b", "a", "b"}, t0, ""), EventFilter([]string{"a", "b"}, t0.UTC(), ""), "order, repeats and zone do not matter")
	assert.NotEqual(t, EventFilter([]string{"a"}, t0, ""), EventFilter([]string{"a", "b"}, t0, ""))
	assert.NotEqual(t, EventFilter(nil, t0, ""), EventFilter(nil, time.Time{}, ""))
	assert.NotEqual(t, EventFilter([]string{"a"}, time.Time{}, ""), EventFilter(nil, time.Time{}, ""))
	assert.NotEqual(t, EventFilter(nil, t0, "emsp-acme"), EventFilter(nil, t0, ""))
	assert.NotEqual(t, EventFilter(nil, t0, "a"), EventFilter(nil, t0, "b"))
	assert.Equal(t, "a,b|"+ChangeFilter(t0), EventFilter([]string{"a", "b"}, t0, ""), "cursors issued before the actor filter stay valid")
}
