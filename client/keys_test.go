package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secretPattern is the form of the secrets the service makes.
const secretPattern = `^cn_[A-Za-z0-9_-]{43}$`

// wantAPIKeys are the keys the store lists (not revoked), by name, in the client's
// types, as the service shows them at now.
func wantAPIKeys(t *testing.T, store chargenet.Store, now time.Time) map[string]client.APIKey {
	t.Helper()
	keys, err := store.ListAPIKeys(context.Background(), chargenet.Seek[string]{Limit: 1000})
	require.NoError(t, err)
	out := map[string]client.APIKey{}
	for _, k := range keys {
		a := client.APIKey{Name: k.Name, CreatedAt: k.CreatedAt.UTC()}
		for _, s := range k.Scopes {
			a.Scopes = append(a.Scopes, client.Scope(s))
		}
		if !k.ExpiresAt.IsZero() {
			a.ExpiresAt = utcPtr(&k.ExpiresAt)
		}
		if !k.LastUsedAt.IsZero() {
			a.LastUsedAt = utcPtr(&k.LastUsedAt)
		}
		if k.PreviousUntil.After(now) {
			a.PreviousSecretExpiresAt = utcPtr(&k.PreviousUntil)
		}
		if k.RateLimit.Requests > 0 {
			a.RateLimit = &client.KeyRateLimit{Requests: k.RateLimit.Requests, Window: k.RateLimit.Window}
		}
		out[k.Name] = a
	}
	return out
}

// listKeys returns every key the service lists, through the iterator.
func listKeys(t *testing.T, c *client.Client) []client.APIKey {
	t.Helper()
	var keys []client.APIKey
	for k, err := range c.APIKeys(context.Background(), client.ListOptions{}) {
		require.NoError(t, err)
		keys = append(keys, k)
	}
	return keys
}

func keyNames(keys []client.APIKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return names
}

// bodies records the bodies of the answers the client receives.
type bodies struct {
	mu  sync.Mutex
	all []string
}

// step forwards the request and records its answer's body.
func (b *bodies) step(req *http.Request, next http.RoundTripper) (*http.Response, error) {
	res, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.all = append(b.all, string(body))
	b.mu.Unlock()
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// containing returns how many recorded bodies contain s.
func (b *bodies) containing(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, body := range b.all {
		if strings.Contains(body, s) {
			n++
		}
	}
	return n
}

func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	var seen bodies
	rec := newRecorder(t, repeat(100, seen.step)...)
	admin := newClient(t, srv.URL, client.WithAPIKey(storedKey(t, srv, "key-admin", chargenet.ScopeKeys)), rec.option())

	// Create a key: 201, its fields as given, and a secret.
	expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now().UTC().Truncate(time.Second)
	var r client.Response
	key, secret, err := admin.CreateAPIKey(ctx, client.NewAPIKey{
		Name: "emsp-beta", Scopes: []client.Scope{client.ScopeEventsRead, client.ScopeInventoryRead},
		ExpiresAt: expires, RateLimit: &client.KeyRateLimit{Requests: 600, Window: time.Minute},
	}, client.WithResponse(&r))
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, r.StatusCode)
	assert.Empty(t, r.IdempotencyKey)
	assert.Empty(t, rec.request(0).Header.Get("Idempotency-Key"), "key creation takes no Idempotency-Key")
	assert.Regexp(t, secretPattern, secret)
	assert.Equal(t, "emsp-beta", key.Name)
	assert.Equal(t, []client.Scope{client.ScopeInventoryRead, client.ScopeEventsRead}, key.Scopes, "in the order of the scopes")
	assert.Equal(t, &expires, key.ExpiresAt)
	assert.Equal(t, &client.KeyRateLimit{Requests: 600, Window: time.Minute}, key.RateLimit)
	assert.False(t, key.CreatedAt.Before(before))
	assert.False(t, key.CreatedAt.After(time.Now()))
	assert.Nil(t, key.LastUsedAt)
	assert.Nil(t, key.PreviousSecretExpiresAt)

	// A key created without scopes holds partner.
	legacy, legacySecret, err := admin.CreateAPIKey(ctx, client.NewAPIKey{Name: "legacy"})
	require.NoError(t, err)
	assert.Equal(t, []client.Scope{client.ScopePartner}, legacy.Scopes)
	assert.Nil(t, legacy.ExpiresAt)
	assert.Nil(t, legacy.RateLimit)
	assert.NotEqual(t, secret, legacySecret)

	// The secret works, for what its scopes grant.
	beta := newClient(t, srv.URL, client.WithAPIKey(secret))
	evse, _, err := beta.EVSE(ctx, 1001)
	require.NoError(t, err)
	assert.Equal(t, int64(1001), evse.UID)
	_, _, err = beta.UpdateEVSE(ctx, 1001, client.EVSEPatch{Status: new(client.StatusInoperative)})
	apiErr := requireAPIError(t, err, client.ErrForbidden, 403, client.CodeInsufficientScope)
	assert.Equal(t, string(client.ScopeInventoryWrite), apiErr.Scope)

	// The list shows the keys as created, and no answer but the creation held the secret.
	now := time.Now()
	listed := listKeys(t, admin)
	assert.Equal(t, []string{"emsp-beta", "key-admin", "legacy"}, keyNames(listed))
	assert.Equal(t, *key, listed[0])
	assert.Equal(t, *legacy, listed[2])
	want := wantAPIKeys(t, srv.Store, now)
	for _, k := range listed {
		assert.Equal(t, want[k.Name], k)
	}
	assert.Equal(t, 1, seen.containing(secret), "the secret is shown once")

	// A recorded use shows as LastUsedAt.
	used := time.Now().UTC().Truncate(time.Minute)
	require.NoError(t, srv.Store.RecordAPIKeyUse(ctx, []chargenet.KeyUse{{Name: "legacy", At: used}}))
	listed = listKeys(t, admin)
	require.NotNil(t, listed[2].LastUsedAt)
	assert.Equal(t, used, *listed[2].LastUsedAt)

	// Rotate with an overlap: a new secret; the old one works until the overlap ends.
	before = time.Now().UTC().Truncate(time.Second)
	rotated, secret2, err := admin.RotateAPIKey(ctx, "emsp-beta", client.KeyRotation{Overlap: new(time.Hour)}, client.WithResponse(&r))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, r.StatusCode)
	assert.Empty(t, rec.request(rec.count()-1).Header.Get("Idempotency-Key"), "rotation takes no Idempotency-Key")
	assert.Regexp(t, secretPattern, secret2)
	assert.NotEqual(t, secret, secret2)
	require.NotNil(t, rotated.PreviousSecretExpiresAt)
	assert.False(t, rotated.PreviousSecretExpiresAt.Before(before.Add(time.Hour)))
	assert.False(t, rotated.PreviousSecretExpiresAt.After(time.Now().Add(time.Hour)))
	assert.Equal(t, &expires, rotated.ExpiresAt, "the expiry is kept")
	assert.Equal(t, key.Scopes, rotated.Scopes)
	assert.Equal(t, key.RateLimit, rotated.RateLimit)
	assert.Equal(t, key.CreatedAt, rotated.CreatedAt)
	for _, s := range []string{secret, secret2} {
		_, _, err := newClient(t, srv.URL, client.WithAPIKey(s)).EVSE(ctx, 1001)
		assert.NoError(t, err)
	}
	assert.Equal(t, 1, seen.containing(secret2))

	// Rotate again without overlap and with a new expiry: only the newest secret works.
	expires2 := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	rotated, secret3, err := admin.RotateAPIKey(ctx, "emsp-beta", client.KeyRotation{Overlap: new(time.Duration(0)), ExpiresAt: expires2})
	require.NoError(t, err)
	assert.Equal(t, &expires2, rotated.ExpiresAt)
	assert.Nil(t, rotated.PreviousSecretExpiresAt, "no overlap runs")
	_, _, err = newClient(t, srv.URL, client.WithAPIKey(secret3)).EVSE(ctx, 1001)
	require.NoError(t, err)
	_, _, err = newClient(t, srv.URL, client.WithAPIKey(secret2)).EVSE(ctx, 1001)
	_ = requireAPIError(t, err, client.ErrForbidden, 403, client.CodeKeyExpired)
	_, _, err = newClient(t, srv.URL, client.WithAPIKey(secret)).EVSE(ctx, 1001)
	_ = requireAPIError(t, err, client.ErrForbidden, 403, client.CodeUnauthorized)

	// Revoke: no secret works, the key leaves the list, its name stays taken.
	require.NoError(t, admin.RevokeAPIKey(ctx, "emsp-beta", client.WithResponse(&r)))
	assert.Equal(t, http.StatusNoContent, r.StatusCode)
	_, _, err = newClient(t, srv.URL, client.WithAPIKey(secret3)).EVSE(ctx, 1001)
	_ = requireAPIError(t, err, client.ErrForbidden, 403, client.CodeUnauthorized)
	assert.Equal(t, []string{"key-admin", "legacy"}, keyNames(listKeys(t, admin)))
	err = admin.RevokeAPIKey(ctx, "emsp-beta")
	_ = requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)
	_, _, err = admin.RotateAPIKey(ctx, "emsp-beta", client.KeyRotation{})
	_ = requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)
	_, _, err = admin.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-beta"})
	_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeConflict)
}

func TestAPIKeysPagination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	names := []string{"key-admin"}
	adminSecret := storedKey(t, srv, "key-admin", chargenet.ScopeKeys)
	for i := range 11 {
		name := fmt.Sprintf("partner-%02d", i)
		storedKey(t, srv, name, chargenet.ScopeInventoryRead, chargenet.ScopeWebhooks)
		names = append(names, name)
	}
	want := wantAPIKeys(t, srv.Store, time.Now())

	for _, size := range []int{1, 5, 12, 0} {
		t.Run(fmt.Sprintf("iterator page size %d", size), func(t *testing.T) {
			rec := newRecorder(t)
			c := newClient(t, srv.URL, client.WithAPIKey(adminSecret), rec.option())
			var got []string
			for k, err := range c.APIKeys(ctx, client.ListOptions{PageSize: size}) {
				require.NoError(t, err)
				got = append(got, k.Name)
				assert.Equal(t, want[k.Name], k)
			}
			assert.Equal(t, names, got) // every one, once, in order
			limit := size
			if limit == 0 {
				limit = client.MaxPageSize
			}
			assert.Equal(t, (len(names)+limit-1)/limit, rec.count())
			for i := range rec.count() {
				assert.Equal(t, "/admin/v1/keys", rec.request(i).URL.Path)
				assert.Equal(t, i > 0, rec.request(i).URL.Query().Get("cursor") != "", "request %d", i)
			}
		})
	}

	t.Run("pages", func(t *testing.T) {
		c := newClient(t, srv.URL, client.WithAPIKey(adminSecret))
		first, err := c.APIKeysPage(ctx, client.PageRequest{Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, names[:5], keyNames(first.Items))
		assert.True(t, first.HasMore)
		assert.Empty(t, first.PreviousCursor)
		assert.Equal(t, []client.Scope{client.ScopeInventoryRead, client.ScopeWebhooks}, first.Items[1].Scopes)

		second, err := c.APIKeysPage(ctx, client.PageRequest{Cursor: first.NextCursor, Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, names[5:10], keyNames(second.Items))

		last, err := c.APIKeysPage(ctx, client.PageRequest{Cursor: second.NextCursor, Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, names[10:], keyNames(last.Items))
		assert.False(t, last.HasMore)
		assert.Empty(t, last.NextCursor)

		back, err := c.APIKeysPage(ctx, client.PageRequest{Cursor: last.PreviousCursor, Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, names[5:10], keyNames(back.Items))
	})
}

func TestAPIKeyErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	adminKey := storedKey(t, srv, "key-admin", chargenet.ScopeKeys)
	readKey := storedKey(t, srv, "emsp-read", chargenet.ScopeInventoryRead)
	evses, err := newClient(t, srv.URL).EVSEsPage(ctx, client.PageRequest{Limit: 1})
	require.NoError(t, err)
	past := time.Now().Add(-time.Hour)

	tests := []struct {
		name      string
		key       string
		call      func(c *client.Client) error
		sentinel  error
		status    int
		code      string
		wantParam string
		wantScope string
	}{
		{"list with a partner key", demoKey, func(c *client.Client) error { _, err := c.APIKeysPage(ctx, client.PageRequest{}); return err },
			client.ErrForbidden, 403, client.CodeInsufficientScope, "Authorization", "keys"},
		{"create with a read key", readKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "sneaky", Scopes: []client.Scope{client.ScopeKeys}})
			return err
		}, client.ErrForbidden, 403, client.CodeInsufficientScope, "Authorization", "keys"},
		{"rotate with a read key", readKey, func(c *client.Client) error {
			_, _, err := c.RotateAPIKey(ctx, "key-admin", client.KeyRotation{})
			return err
		}, client.ErrForbidden, 403, client.CodeInsufficientScope, "Authorization", "keys"},
		{"revoke with a partner key", demoKey, func(c *client.Client) error { return c.RevokeAPIKey(ctx, "key-admin") },
			client.ErrForbidden, 403, client.CodeInsufficientScope, "Authorization", "keys"},
		{"unknown key", "not-a-known-key-0123456789", func(c *client.Client) error {
			_, err := c.APIKeysPage(ctx, client.PageRequest{})
			return err
		}, client.ErrForbidden, 403, client.CodeUnauthorized, "Authorization", ""},
		{"malformed name", adminKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "no spaces"})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "name", ""},
		{"reserved name", adminKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "env"})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "name", ""},
		{"unknown scope", adminKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-x", Scopes: []client.Scope{client.ScopeInventoryRead, "everything"}})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "scopes[1]", ""},
		{"expiry in the past", adminKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-x", ExpiresAt: past})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "expiresAt", ""},
		{"rate limit of no requests", adminKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-x", RateLimit: &client.KeyRateLimit{Window: time.Minute}})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "rateLimit.requests", ""},
		{"rate limit window too long", adminKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-x", RateLimit: &client.KeyRateLimit{Requests: 1, Window: 25 * time.Hour}})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "rateLimit.windowSeconds", ""},
		{"name taken", adminKey, func(c *client.Client) error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-read"})
			return err
		}, client.ErrConflict, 409, client.CodeConflict, "name", ""},
		{"rotate unknown", adminKey, func(c *client.Client) error {
			_, _, err := c.RotateAPIKey(ctx, "nobody", client.KeyRotation{})
			return err
		}, client.ErrNotFound, 404, client.CodeNotFound, "name", ""},
		{"rotate a development key", adminKey, func(c *client.Client) error {
			_, _, err := c.RotateAPIKey(ctx, chargenet.DevKeyName, client.KeyRotation{})
			return err
		}, client.ErrNotFound, 404, client.CodeNotFound, "name", ""},
		{"overlap over 30 days", adminKey, func(c *client.Client) error {
			_, _, err := c.RotateAPIKey(ctx, "emsp-read", client.KeyRotation{Overlap: new(31 * 24 * time.Hour)})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "overlapSeconds", ""},
		{"negative overlap", adminKey, func(c *client.Client) error {
			_, _, err := c.RotateAPIKey(ctx, "emsp-read", client.KeyRotation{Overlap: new(-time.Second)})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "overlapSeconds", ""},
		{"new expiry in the past", adminKey, func(c *client.Client) error {
			_, _, err := c.RotateAPIKey(ctx, "emsp-read", client.KeyRotation{ExpiresAt: past})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "expiresAt", ""},
		{"revoke unknown", adminKey, func(c *client.Client) error { return c.RevokeAPIKey(ctx, "nobody") },
			client.ErrNotFound, 404, client.CodeNotFound, "name", ""},
		{"revoke a name too long", adminKey, func(c *client.Client) error { return c.RevokeAPIKey(ctx, strings.Repeat("k", 256)) },
			client.ErrInvalid, 400, client.CodeInvalidParameter, "name", ""},
		{"limit too large", adminKey, func(c *client.Client) error {
			_, err := c.APIKeysPage(ctx, client.PageRequest{Limit: client.MaxPageSize + 1})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidParameter, "limit", ""},
		{"cursor of the EVSE list", adminKey, func(c *client.Client) error {
			_, err := c.APIKeysPage(ctx, client.PageRequest{Cursor: evses.NextCursor})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidCursor, "cursor", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(newClient(t, srv.URL, client.WithAPIKey(tt.key)))
			apiErr := requireAPIError(t, err, tt.sentinel, tt.status, tt.code)
			assert.Equal(t, tt.wantParam, apiErr.Param)
			assert.Equal(t, tt.wantScope, apiErr.Scope)
			assert.NotEmpty(t, apiErr.Message)
		})
	}

	// The refused calls changed nothing: the keys are the two stored ones, unrotated.
	admin := newClient(t, srv.URL, client.WithAPIKey(adminKey))
	keys := listKeys(t, admin)
	assert.Equal(t, []string{"emsp-read", "key-admin"}, keyNames(keys))
	for _, k := range keys {
		assert.Nil(t, k.PreviousSecretExpiresAt, k.Name)
	}
	_, _, err = newClient(t, srv.URL, client.WithAPIKey(readKey)).EVSE(ctx, 1001)
	assert.NoError(t, err)

	t.Run("iterator yields the error once", func(t *testing.T) {
		n := 0
		for k, err := range newClient(t, srv.URL).APIKeys(ctx, client.ListOptions{}) {
			n++
			assert.Equal(t, client.APIKey{}, k)
			_ = requireAPIError(t, err, client.ErrForbidden, 403, client.CodeInsufficientScope)
		}
		assert.Equal(t, 1, n)
	})
}

func TestAPIKeyRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := newRecorder(t)
	c := newClient(t, "http://127.0.0.1:1", rec.option())
	tests := []struct {
		name string
		call func() error
	}{
		{"rotate an empty name", func() error { _, _, err := c.RotateAPIKey(ctx, "", client.KeyRotation{}); return err }},
		{"revoke an empty name", func() error { return c.RevokeAPIKey(ctx, "") }},
		{"rate limit window of a fraction of a second", func() error {
			_, _, err := c.CreateAPIKey(ctx, client.NewAPIKey{Name: "emsp-x", RateLimit: &client.KeyRateLimit{Requests: 10, Window: 1500 * time.Millisecond}})
			return err
		}},
		{"overlap of a fraction of a second", func() error {
			_, _, err := c.RotateAPIKey(ctx, "emsp-x", client.KeyRotation{Overlap: new(90*time.Second + time.Millisecond)})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.ErrorIs(t, err, client.ErrInvalid)
			var apiErr *client.Error
			assert.False(t, errors.As(err, &apiErr), "no answer of the service")
		})
	}
	assert.Equal(t, 0, rec.count())
}

func TestAPIKeyRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	adminKey := storedKey(t, srv, "key-admin", chargenet.ScopeKeys)
	partnerSecret := storedKey(t, srv, "partner", chargenet.ScopeInventoryRead)
	admin := func(rec *recorder, s *sleeps) *client.Client {
		return newClient(t, srv.URL, client.WithAPIKey(adminKey), rec.option(), s.option())
	}

	t.Run("create is sent once", func(t *testing.T) {
		var s sleeps
		rec := newRecorder(t, failWith(503, client.CodeUnavailable))
		_, _, err := admin(rec, &s).CreateAPIKey(ctx, client.NewAPIKey{Name: "once-503"})
		_ = requireAPIError(t, err, client.ErrUnavailable, 503, client.CodeUnavailable)
		assert.Equal(t, 1, rec.count())
		assert.Empty(t, rec.request(0).Header.Get("Idempotency-Key"))
		assert.Empty(t, s.all())

		// A lost answer is not repeated either: the key exists, and a repeat finds its
		// name taken.
		rec = newRecorder(t, loseAnswer)
		_, _, err = admin(rec, &s).CreateAPIKey(ctx, client.NewAPIKey{Name: "once-lost"})
		require.Error(t, err)
		var apiErr *client.Error
		assert.False(t, errors.As(err, &apiErr))
		assert.Equal(t, 1, rec.count())
		assert.Contains(t, keyNames(listKeys(t, admin(newRecorder(t), &s))), "once-lost")
		_, _, err = admin(newRecorder(t), &s).CreateAPIKey(ctx, client.NewAPIKey{Name: "once-lost"})
		_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeConflict)
	})

	t.Run("rotate is sent once", func(t *testing.T) {
		var s sleeps
		rec := newRecorder(t, loseAnswer)
		_, _, err := admin(rec, &s).RotateAPIKey(ctx, "partner", client.KeyRotation{})
		require.Error(t, err)
		assert.Equal(t, 1, rec.count(), "a repeat would end the secret in use at once")
		assert.Empty(t, rec.request(0).Header.Get("Idempotency-Key"))
		assert.Empty(t, s.all())
		// The rotation applied once, with the default overlap: the first secret still works.
		_, _, err = newClient(t, srv.URL, client.WithAPIKey(partnerSecret)).EVSE(ctx, 1001)
		assert.NoError(t, err)
	})

	t.Run("revoke is retried", func(t *testing.T) {
		var s sleeps
		storedKey(t, srv, "revoke-503", chargenet.ScopePartner)
		rec := newRecorder(t, failWith(503, client.CodeUnavailable))
		require.NoError(t, admin(rec, &s).RevokeAPIKey(ctx, "revoke-503"))
		assert.Equal(t, 2, rec.count())
		assert.Len(t, s.all(), 1)

		// After a lost answer the repeat finds no active key: ErrNotFound, and the key
		// is revoked.
		storedKey(t, srv, "revoke-lost", chargenet.ScopePartner)
		rec = newRecorder(t, loseAnswer)
		err := admin(rec, &s).RevokeAPIKey(ctx, "revoke-lost")
		_ = requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)
		assert.Equal(t, 2, rec.count())
		assert.NotContains(t, keyNames(listKeys(t, admin(newRecorder(t), &s))), "revoke-lost")
	})
}
