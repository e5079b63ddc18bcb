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
	s := open(t, Options{})
	ctx := t.Context()
	created := now().Add(-time.Hour)
	partner := chargenet.APIKey{Name: "partner-1", Hash: chargenet.HashAPIKey("secret-1"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: created}
	ingest := chargenet.APIKey{Name: "ingest-1", Hash: chargenet.HashAPIKey("secret-2"), Scopes: []string{chargenet.ScopeIngest}, CreatedAt: created.Add(time.Second)}

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
			{"name taken", chargenet.APIKey{Name: "partner-1", Hash: chargenet.HashAPIKey("secret-3"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: created}, "name"},
			{"hash taken", chargenet.APIKey{Name: "partner-2", Hash: partner.Hash, Scopes: []string{chargenet.ScopePartner}, CreatedAt: created}, "hash"},
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
		requireError(t, s.CreateAPIKey(ctx, chargenet.APIKey{Name: "partner-1", Hash: chargenet.HashAPIKey("secret-4"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: created}),
			chargenet.ErrConflict, chargenet.CodeConflict, "name")
		requireError(t, s.CreateAPIKey(ctx, chargenet.APIKey{Name: "partner-5", Hash: partner.Hash, Scopes: []string{chargenet.ScopePartner}, CreatedAt: created}),
			chargenet.ErrConflict, chargenet.CodeConflict, "hash")
		_, err := s.APIKeyByHash(ctx, partner.Hash)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")
	})
}

// testAPIKeyLifecycle covers what a key holds besides its name and secret: scopes,
// expiry and rate limit as created, the list of keys, rotation with its overlap, and
// the recorded last use.
func testAPIKeyLifecycle(t *testing.T, open Opener) {
	s := open(t, Options{})
	ctx := t.Context()
	created := now().Add(-time.Hour)
	expires := created.Add(90 * 24 * time.Hour)
	reader := chargenet.APIKey{Name: "reader", Hash: chargenet.HashAPIKey("reader-1"), CreatedAt: created,
		Scopes:    []string{chargenet.ScopeInventoryRead, chargenet.ScopeWebhooks},
		ExpiresAt: expires, RateLimit: chargenet.RateLimit{Requests: 100, Window: time.Minute}}
	keys := []chargenet.APIKey{
		reader,
		{Name: "admin", Hash: chargenet.HashAPIKey("admin-1"), Scopes: []string{chargenet.ScopeKeys}, CreatedAt: created},
		{Name: "b-partner", Hash: chargenet.HashAPIKey("partner-1"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: created},
		{Name: "gone", Hash: chargenet.HashAPIKey("gone-1"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: created},
		{Name: "old", Hash: chargenet.HashAPIKey("old-1"), Scopes: []string{chargenet.ScopeIngest}, CreatedAt: created,
			ExpiresAt: created.Add(time.Minute)},
	}
	for _, k := range keys {
		require.NoError(t, s.CreateAPIKey(ctx, k))
	}
	require.NoError(t, s.RevokeAPIKey(ctx, "gone", now()))

	t.Run("created as given", func(t *testing.T) {
		got, err := s.APIKeyByHash(ctx, reader.Hash)
		require.NoError(t, err)
		assert.Equal(t, &reader, got)
		got, err = s.APIKeyByHash(ctx, keys[4].Hash)
		require.NoError(t, err, "an expired key is found: the server answers it as expired")
		assert.Equal(t, keys[4].ExpiresAt, got.ExpiresAt)
	})

	t.Run("list", func(t *testing.T) {
		all, err := s.ListAPIKeys(ctx, chargenet.Seek[string]{Limit: 10})
		require.NoError(t, err)
		names := make([]string, len(all))
		for i, k := range all {
			names[i] = k.Name
		}
		assert.Equal(t, []string{"admin", "b-partner", "old", "reader"}, names, "by name, revoked keys left out, expired ones in")
		assert.Equal(t, reader, all[3])
		page, err := s.ListAPIKeys(ctx, chargenet.Seek[string]{Key: "b-partner", HasKey: true, Limit: 2})
		require.NoError(t, err)
		require.Len(t, page, 2)
		assert.Equal(t, "old", page[0].Name)
		assert.Equal(t, "reader", page[1].Name)
		page, err = s.ListAPIKeys(ctx, chargenet.Seek[string]{Key: "old", HasKey: true, Backward: true, Limit: 10})
		require.NoError(t, err)
		require.Len(t, page, 2)
		assert.Equal(t, "b-partner", page[0].Name)
		empty, err := s.ListAPIKeys(ctx, chargenet.Seek[string]{Limit: 0})
		require.NoError(t, err)
		assert.NotNil(t, empty)
		assert.Empty(t, empty)
	})

	t.Run("rotate", func(t *testing.T) {
		at := now()
		second := chargenet.HashAPIKey("reader-2")
		got, err := s.RotateAPIKey(ctx, "reader", chargenet.KeyRotation{Hash: second, PreviousUntil: at.Add(24 * time.Hour)})
		require.NoError(t, err)
		want := reader
		want.Hash, want.PreviousHash, want.PreviousUntil = second, reader.Hash, at.Add(24*time.Hour)
		assert.Equal(t, &want, got, "the expiry, scopes and rate limit stay")
		for _, h := range [][32]byte{reader.Hash, second} {
			byHash, err := s.APIKeyByHash(ctx, h)
			require.NoError(t, err, "both secrets find the key during the overlap")
			assert.Equal(t, &want, byHash)
		}
		expiry, rotated, ok := got.SecretExpiry(reader.Hash)
		assert.True(t, ok && rotated)
		assert.Equal(t, at.Add(24*time.Hour), expiry)

		third := chargenet.HashAPIKey("reader-3")
		later := expires.Add(24 * time.Hour)
		got, err = s.RotateAPIKey(ctx, "reader", chargenet.KeyRotation{Hash: third, PreviousUntil: at, ExpiresAt: &later})
		require.NoError(t, err)
		assert.Equal(t, third, got.Hash)
		assert.Equal(t, second, got.PreviousHash)
		assert.Equal(t, at, got.PreviousUntil)
		assert.Equal(t, later, got.ExpiresAt, "a rotation can set a new expiry")
		_, err = s.APIKeyByHash(ctx, reader.Hash)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")

		_, err = s.RotateAPIKey(ctx, "admin", chargenet.KeyRotation{Hash: keys[2].Hash, PreviousUntil: at})
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeConflict, "hash")
		byHash, err := s.APIKeyByHash(ctx, keys[1].Hash)
		require.NoError(t, err, "a refused rotation changes nothing")
		assert.Equal(t, &keys[1], byHash)
		for _, name := range []string{"gone", "nobody"} {
			_, err = s.RotateAPIKey(ctx, name, chargenet.KeyRotation{Hash: chargenet.HashAPIKey("x-" + name), PreviousUntil: at})
			requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "name")
		}

		require.NoError(t, s.RevokeAPIKey(ctx, "reader", now()))
		for _, h := range [][32]byte{second, third} {
			_, err = s.APIKeyByHash(ctx, h)
			requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "")
		}
	})

	t.Run("last use", func(t *testing.T) {
		minute := now().Truncate(time.Minute)
		require.NoError(t, s.RecordAPIKeyUse(ctx, nil))
		require.NoError(t, s.RecordAPIKeyUse(ctx, []chargenet.KeyUse{
			{Name: "admin", At: minute}, {Name: "old", At: minute.Add(-time.Minute)},
			{Name: "nobody", At: minute}, {Name: "gone", At: minute},
		}))
		require.NoError(t, s.RecordAPIKeyUse(ctx, []chargenet.KeyUse{{Name: "admin", At: minute.Add(-2 * time.Minute)}}))
		all, err := s.ListAPIKeys(ctx, chargenet.Seek[string]{Limit: 10})
		require.NoError(t, err)
		used := map[string]time.Time{}
		for _, k := range all {
			used[k.Name] = k.LastUsedAt
		}
		assert.Equal(t, map[string]time.Time{"admin": minute, "b-partner": {}, "old": minute.Add(-time.Minute)}, used,
			"an earlier use does not move the last one back; unknown and revoked names are skipped")
	})
}

func testSetting(t *testing.T, open Opener) {
	s := open(t, Options{})
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
	s := open(t, Options{})
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
	s := open(t, Options{})
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
			_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(230.0)}, "", "", ts)
			return err
		}},
		{"Import", func() error {
			return s.Import(ctx, &chargenet.Inventory{Locations: []chargenet.Location{newLocation("CANCELED", ts)}})
		}},
		{"CreateAPIKey", func() error {
			return s.CreateAPIKey(ctx, chargenet.APIKey{Name: "k", Hash: chargenet.HashAPIKey("k"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: ts})
		}},
		{"RevokeAPIKey", func() error { return s.RevokeAPIKey(ctx, "k", ts) }},
		{"APIKeyByHash", func() error { _, err := s.APIKeyByHash(ctx, chargenet.HashAPIKey("k")); return err }},
		{"ListAPIKeys", func() error { _, err := s.ListAPIKeys(ctx, chargenet.Seek[string]{Limit: 10}); return err }},
		{"RotateAPIKey", func() error {
			_, err := s.RotateAPIKey(ctx, "k", chargenet.KeyRotation{Hash: chargenet.HashAPIKey("k2"), PreviousUntil: ts})
			return err
		}},
		{"RecordAPIKeyUse", func() error { return s.RecordAPIKeyUse(ctx, []chargenet.KeyUse{{Name: "k", At: ts}}) }},
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
