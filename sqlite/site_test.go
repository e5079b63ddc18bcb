package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemo checks that a kept value is served until the locations or the EVSEs change,
// whoever commits, and survives commits that change neither.
func TestMemo(t *testing.T) {
	s, _ := openDemo(t)
	requireCacheOn(t, s)
	ctx := t.Context()
	reads := 0
	memo := func() any {
		v, err := s.Memo(ctx, "k", func(context.Context) (any, int, error) {
			reads++
			return reads, 8, nil
		})
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, 1, memo())
	assert.Equal(t, 1, memo(), "kept")
	require.NoError(t, s.CreateAPIKey(ctx, chargenet.APIKey{Name: "k", Hash: chargenet.HashAPIKey("secret-key-0123456789"),
		Scopes: []string{chargenet.ScopePartner}, CreatedAt: time.Now()}))
	assert.Equal(t, 1, memo(), "a commit that changes no location or EVSE keeps it")

	_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(33.0)}, "", "", time.Now())
	require.NoError(t, err)
	assert.Equal(t, 2, memo(), "an EVSE changed")
	assert.Equal(t, 2, memo())

	l, err := s.Location(ctx, "LOC-0100")
	require.NoError(t, err)
	l.Name = "renamed"
	_, _, err = s.PutLocation(ctx, l, "", time.Now())
	require.NoError(t, err)
	assert.Equal(t, 3, memo(), "a location changed")

	s.SetReadCacheSize(0)
	assert.Equal(t, 4, memo(), "without the cache every call reads")
	assert.Equal(t, 5, memo())
}
