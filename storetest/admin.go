package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testAPIKeys(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	created := now().Add(-time.Hour)
	partner := chargenet.APIKey{Name: "partner-1", Hash: chargenet.HashAPIKey("secret-1"), Scope: chargenet.ScopePartner, CreatedAt: created}
	ingest := chargenet.APIKey{Name: "ingest-1", Hash: chargenet.HashAPIKey("secret-2"), Scope: chargenet.ScopeIngest, CreatedAt: created.Add(time.Second)}

	_, err := s.APIKeyByHash(ctx, partner.Hash)
	requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")

	require.NoError(t, s.CreateAPIKey(ctx, partner))
	require.NoError(t, s.CreateAPIKey(ctx, ingest))
	for _, want := range []chargenet.APIKey{partner, ingest} {
		got, err := s.APIKeyByHash(ctx, want.Hash)
		require.NoError(t, err)
		assert.Equal(t, &want, got)
	}

	t.Run("create conflicts", func(t *testing.T) {
		tests := []struct {
			name  string
			key   chargenet.APIKey
			param string
		}{
			{"name taken", chargenet.APIKey{Name: "partner-1", Hash: chargenet.HashAPIKey("secret-3"), Scope: chargenet.ScopePartner, CreatedAt: created}, "name"},
			{"hash taken", chargenet.APIKey{Name: "partner-2", Hash: partner.Hash, Scope: chargenet.ScopePartner, CreatedAt: created}, "hash"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				requireError(t, s.CreateAPIKey(ctx, tt.key), chargenet.ErrConflict, chargenet.CodeConflict, tt.param)
				got, err := s.APIKeyByHash(ctx, partner.Hash)
				require.NoError(t, err)
				assert.Equal(t, &partner, got, "the existing key is unchanged")
			})
		}
	})

	t.Run("lookup of an unknown hash", func(t *testing.T) {
		_, err := s.APIKeyByHash(ctx, chargenet.HashAPIKey("unknown"))
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")
	})

	t.Run("revoke", func(t *testing.T) {
		require.NoError(t, s.RevokeAPIKey(ctx, "partner-1", now()))
		_, err := s.APIKeyByHash(ctx, partner.Hash)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")
		got, err := s.APIKeyByHash(ctx, ingest.Hash)
		require.NoError(t, err, "other keys stay active")
		assert.Equal(t, &ingest, got)

		msg := requireError(t, s.RevokeAPIKey(ctx, "partner-1", now()), chargenet.ErrNotFound, chargenet.CodeNotFound, "name")
		assert.Contains(t, msg, "partner-1", "revoking twice")
		requireError(t, s.RevokeAPIKey(ctx, "nobody", now()), chargenet.ErrNotFound, chargenet.CodeNotFound, "name")
	})

	t.Run("revoked names and hashes stay taken", func(t *testing.T) {
		requireError(t, s.CreateAPIKey(ctx, chargenet.APIKey{Name: "partner-1", Hash: chargenet.HashAPIKey("secret-4"), Scope: chargenet.ScopePartner, CreatedAt: created}),
			chargenet.ErrConflict, chargenet.CodeConflict, "name")
		requireError(t, s.CreateAPIKey(ctx, chargenet.APIKey{Name: "partner-5", Hash: partner.Hash, Scope: chargenet.ScopePartner, CreatedAt: created}),
			chargenet.ErrConflict, chargenet.CodeConflict, "hash")
		_, err := s.APIKeyByHash(ctx, partner.Hash)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")
	})
}

func testSetting(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	steps := []struct{ name, value, want string }{
		{"cursor-secret", "first", "first"},
		{"cursor-secret", "second", "first"},
		{"other", "x", "x"},
		{"cursor-secret", "", "first"},
		{"empty", "", ""},
		{"empty", "late", ""},
	}
	for _, st := range steps {
		got, err := s.Setting(ctx, st.name, st.value)
		require.NoError(t, err)
		assert.Equal(t, st.want, got, "Setting(%q, %q)", st.name, st.value)
	}
}

// testSettingConcurrent checks that of callers racing to store a setting all get the
// same, first stored, value.
func testSettingConcurrent(t *testing.T, open Opener) {
	const callers = 16
	s := open(t)
	ctx := t.Context()
	start := make(chan struct{})
	got := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = s.Setting(ctx, "race", fmt.Sprintf("value-%d", i))
		}()
	}
	close(start)
	wg.Wait()
	for i := range callers {
		require.NoError(t, errs[i])
		assert.Equal(t, got[0], got[i], "caller %d gets the same value", i)
	}
	assert.Regexp(t, `^value-\d+$`, got[0])
	again, err := s.Setting(ctx, "race", "later")
	require.NoError(t, err)
	assert.Equal(t, got[0], again)
}

func testPing(t *testing.T, open Opener) {
	s := open(t)
	require.NoError(t, s.Ping(t.Context()))
	require.NoError(t, s.Close())
	err := s.Ping(t.Context())
	require.Error(t, err, "Ping of a closed store")
	assert.ErrorIs(t, err, chargenet.ErrUnavailable)
}

// testCanceledContext calls every method with a canceled context: each returns an
// error that errors.Is context.Canceled, and nothing is written.
func testCanceledContext(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	before := takeSnapshot(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ts := now()
	calls := []struct {
		name string
		call func() error
	}{
		{"EVSE", func() error { _, err := s.EVSE(ctx, 1001); return err }},
		{"ListEVSEs", func() error { _, err := s.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 10}); return err }},
		{"Location", func() error { _, err := s.Location(ctx, "LOC-0001"); return err }},
		{"ListLocations", func() error { _, err := s.ListLocations(ctx, chargenet.Seek[string]{Limit: 10}); return err }},
		{"UpdateConnector", func() error {
			_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(230.0)}, "", ts)
			return err
		}},
		{"Import", func() error {
			return s.Import(ctx, &chargenet.Inventory{Locations: []chargenet.Location{newLocation("CANCELED", ts)}})
		}},
		{"CreateAPIKey", func() error {
			return s.CreateAPIKey(ctx, chargenet.APIKey{Name: "k", Hash: chargenet.HashAPIKey("k"), Scope: chargenet.ScopePartner, CreatedAt: ts})
		}},
		{"RevokeAPIKey", func() error { return s.RevokeAPIKey(ctx, "k", ts) }},
		{"APIKeyByHash", func() error { _, err := s.APIKeyByHash(ctx, chargenet.HashAPIKey("k")); return err }},
		{"Setting", func() error { _, err := s.Setting(ctx, "canceled", "v"); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorIs(t, c.call(), context.Canceled)
		})
	}
	assert.Equal(t, before, takeSnapshot(t, s), "nothing changed")
	_, err := s.APIKeyByHash(t.Context(), chargenet.HashAPIKey("k"))
	requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")
	v, err := s.Setting(t.Context(), "canceled", "after")
	require.NoError(t, err)
	assert.Equal(t, "after", v, "the canceled Setting stored nothing")
}
