package storetest

import (
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testEVSE(t *testing.T, open Opener) {
	s, inv := demoStore(t, open)
	ctx := t.Context()

	t.Run("every EVSE as imported", func(t *testing.T) {
		for _, want := range inv.EVSEs {
			got, err := s.EVSE(ctx, want.UID)
			require.NoError(t, err)
			assert.Equal(t, &want, got)
			assert.Equal(t, `"1"`, got.ETag())
		}
	})
	t.Run("connectors ascending, deleted included", func(t *testing.T) {
		got, err := s.EVSE(ctx, 1004)
		require.NoError(t, err)
		require.Len(t, got.Connectors, 4)
		for i, c := range got.Connectors {
			assert.Equal(t, int64(i+1), c.ID)
		}
		require.NotNil(t, got.Connectors[3].DeletedAt)
		assert.Equal(t, *findEVSE(inv, 1004).Connectors[3].DeletedAt, *got.Connectors[3].DeletedAt)
	})
	t.Run("times in UTC", func(t *testing.T) {
		got, err := s.EVSE(ctx, 1001)
		require.NoError(t, err)
		assert.Equal(t, "UTC", got.LastUpdated.Location().String())
	})
	t.Run("not found", func(t *testing.T) {
		for _, uid := range []int64{42, 0, -1, 1000, 1041} {
			got, err := s.EVSE(ctx, uid)
			assert.Nil(t, got)
			msg := requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "uid")
			assert.Contains(t, msg, "EVSE")
		}
		_, err := s.EVSE(ctx, 42)
		assert.EqualError(t, err, "EVSE with uid 42 not found")
	})
}

func testLocation(t *testing.T, open Opener) {
	s, inv := demoStore(t, open)
	ctx := t.Context()

	t.Run("every location with its EVSE uids", func(t *testing.T) {
		for _, want := range inv.Locations {
			got, err := s.Location(ctx, want.ID)
			require.NoError(t, err)
			assert.Equal(t, &want, got)
		}
	})
	t.Run("EVSE uids ascending", func(t *testing.T) {
		got, err := s.Location(ctx, "LOC-0001")
		require.NoError(t, err)
		assert.Equal(t, []int64{1001, 1002}, got.EvseUIDs)
	})
	t.Run("no EVSEs: empty, not nil", func(t *testing.T) {
		got, err := s.Location(ctx, "LOC-0120")
		require.NoError(t, err)
		assert.NotNil(t, got.EvseUIDs)
		assert.Empty(t, got.EvseUIDs)
	})
	t.Run("not found", func(t *testing.T) {
		for _, id := range []string{"X", "loc-0001", "LOC-0121", ""} {
			got, err := s.Location(ctx, id)
			assert.Nil(t, got)
			msg := requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "id")
			assert.Contains(t, msg, `"`+id+`"`)
		}
		_, err := s.Location(ctx, "X")
		assert.EqualError(t, err, `location with id "X" not found`)
	})
}

// testListSeek checks the keyset reads of both lists directly, in every direction.
func testListSeek(t *testing.T, open Opener) {
	s, inv := demoStore(t, open)
	ctx := t.Context()
	evses := sortedEVSEs(inv) // uids 1001..1040
	locs := sortedLocations(inv)

	evseTests := []struct {
		name string
		seek chargenet.Seek[int64]
		want []int64
	}{
		{"first", chargenet.Seek[int64]{Limit: 3}, []int64{1001, 1002, 1003}},
		{"after a key", chargenet.Seek[int64]{Key: 1001, HasKey: true, Limit: 3}, []int64{1002, 1003, 1004}},
		{"after a key before all", chargenet.Seek[int64]{Key: -5, HasKey: true, Limit: 2}, []int64{1001, 1002}},
		{"after a key near the end", chargenet.Seek[int64]{Key: 1038, HasKey: true, Limit: 5}, []int64{1039, 1040}},
		{"after the last", chargenet.Seek[int64]{Key: 1040, HasKey: true, Limit: 5}, []int64{}},
		{"last", chargenet.Seek[int64]{Backward: true, Limit: 3}, []int64{1040, 1039, 1038}},
		{"before a key", chargenet.Seek[int64]{Key: 1003, HasKey: true, Backward: true, Limit: 5}, []int64{1002, 1001}},
		{"before a key after all", chargenet.Seek[int64]{Key: 5000, HasKey: true, Backward: true, Limit: 2}, []int64{1040, 1039}},
		{"before the first", chargenet.Seek[int64]{Key: 1001, HasKey: true, Backward: true, Limit: 5}, []int64{}},
		{"at a key", chargenet.Seek[int64]{Key: 1002, HasKey: true, Inclusive: true, Limit: 2}, []int64{1002, 1003}},
		{"at an absent key", chargenet.Seek[int64]{Key: -5, HasKey: true, Inclusive: true, Limit: 2}, []int64{1001, 1002}},
		{"at a key backward", chargenet.Seek[int64]{Key: 1002, HasKey: true, Inclusive: true, Backward: true, Limit: 5}, []int64{1002, 1001}},
		{"inclusive without a key", chargenet.Seek[int64]{Inclusive: true, Limit: 1}, []int64{1001}},
		{"all", chargenet.Seek[int64]{Limit: 100}, keysOf(evses, evseKey)},
	}
	for _, tt := range evseTests {
		t.Run("evses/"+tt.name, func(t *testing.T) {
			got, err := s.ListEVSEs(ctx, tt.seek)
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, tt.want, keysOf(got, evseKey))
			for _, e := range got {
				assert.Equal(t, findEVSE(inv, e.UID), e, "EVSE %d", e.UID)
			}
		})
	}

	locTests := []struct {
		name string
		seek chargenet.Seek[string]
		want []string
	}{
		{"first", chargenet.Seek[string]{Limit: 2}, []string{"LOC-0001", "LOC-0002"}},
		{"after a key", chargenet.Seek[string]{Key: "LOC-0001", HasKey: true, Limit: 2}, []string{"LOC-0002", "LOC-0003"}},
		{"after an absent key", chargenet.Seek[string]{Key: "LOC-0005x", HasKey: true, Limit: 2}, []string{"LOC-0006", "LOC-0007"}},
		{"after the empty key", chargenet.Seek[string]{Key: "", HasKey: true, Limit: 1}, []string{"LOC-0001"}},
		{"after the last", chargenet.Seek[string]{Key: "LOC-0120", HasKey: true, Limit: 2}, []string{}},
		{"last", chargenet.Seek[string]{Backward: true, Limit: 2}, []string{"LOC-0120", "LOC-0119"}},
		{"before a key", chargenet.Seek[string]{Key: "LOC-0003", HasKey: true, Backward: true, Limit: 5}, []string{"LOC-0002", "LOC-0001"}},
		{"before a key after all", chargenet.Seek[string]{Key: "zzz", HasKey: true, Backward: true, Limit: 1}, []string{"LOC-0120"}},
		{"before the first", chargenet.Seek[string]{Key: "LOC-0001", HasKey: true, Backward: true, Limit: 5}, []string{}},
		{"at a key", chargenet.Seek[string]{Key: "LOC-0002", HasKey: true, Inclusive: true, Limit: 2}, []string{"LOC-0002", "LOC-0003"}},
		{"at an absent key", chargenet.Seek[string]{Key: "LOC-0005x", HasKey: true, Inclusive: true, Limit: 2}, []string{"LOC-0006", "LOC-0007"}},
		{"at a key backward", chargenet.Seek[string]{Key: "LOC-0002", HasKey: true, Inclusive: true, Backward: true, Limit: 5}, []string{"LOC-0002", "LOC-0001"}},
		{"at the last", chargenet.Seek[string]{Key: "LOC-0120", HasKey: true, Inclusive: true, Limit: 2}, []string{"LOC-0120"}},
		{"after a key holding NUL", chargenet.Seek[string]{Key: "LOC-0002\x00x", HasKey: true, Limit: 2}, []string{"LOC-0003", "LOC-0004"}},
		{"before a key holding NUL", chargenet.Seek[string]{Key: "LOC-0002\x00", HasKey: true, Backward: true, Limit: 5}, []string{"LOC-0002", "LOC-0001"}},
		{"at a key holding NUL", chargenet.Seek[string]{Key: "LOC-0002\x00", HasKey: true, Inclusive: true, Limit: 1}, []string{"LOC-0003"}},
	}
	byID := map[string]chargenet.Location{}
	for _, l := range locs {
		byID[l.ID] = l
	}
	for _, tt := range locTests {
		t.Run("locations/"+tt.name, func(t *testing.T) {
			got, err := s.ListLocations(ctx, tt.seek)
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, tt.want, keysOf(got, locationKey))
			for _, l := range got {
				assert.Equal(t, byID[l.ID], l, "location %s", l.ID)
			}
			docs, err := s.ListLocationDocs(ctx, tt.seek)
			require.NoError(t, err)
			assert.Equal(t, tt.want, keysOf(docs, func(d *chargenet.LocationDoc) string { return d.ID }), "as JSON")
		})
	}

	t.Run("empty store", func(t *testing.T) {
		empty := open(t, Options{})
		for _, backward := range []bool{false, true} {
			e, err := empty.ListEVSEs(ctx, chargenet.Seek[int64]{Backward: backward, Limit: 10})
			require.NoError(t, err)
			assert.NotNil(t, e)
			assert.Empty(t, e)
			l, err := empty.ListLocations(ctx, chargenet.Seek[string]{Backward: backward, Limit: 10})
			require.NoError(t, err)
			assert.NotNil(t, l)
			assert.Empty(t, l)
		}
	})
}

func evseKey(e *chargenet.EVSE) int64          { return e.UID }
func locationKey(l *chargenet.Location) string { return l.ID }

func keysOf[T any, K int64 | string](items []T, key func(*T) K) []K {
	out := make([]K, len(items))
	for i := range items {
		out[i] = key(&items[i])
	}
	return out
}
