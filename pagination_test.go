package chargenet

import (
	"context"
	"errors"
	"strings"
	"testing"

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
				if (!s.HasKey || v > s.Key) && len(out) < s.Limit {
					out = append(out, v)
				}
			}
			return out, nil
		}
		for i := len(items) - 1; i >= 0; i-- {
			if (!s.HasKey || items[i] < s.Key) && len(out) < s.Limit {
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
