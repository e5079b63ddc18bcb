package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const adminKey = "admin-key-0123456789abcdef"

// clockEnv is the service over the demo inventory with devKey, a stored key of scope
// keys (adminKey), the default rate limit given, and a clock the test moves.
type clockEnv struct {
	*env
	now  time.Time
	keys *server.Keys
}

func newClockEnv(t *testing.T, limit *server.RateLimit) *clockEnv {
	t.Helper()
	base := newEnv(t, false)
	c := &clockEnv{env: base, now: time.Date(2026, 11, 1, 10, 0, 30, 0, time.UTC)}
	require.NoError(t, base.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "admin",
		Hash: chargenet.HashAPIKey(adminKey), Scopes: []string{chargenet.ScopeKeys}, CreatedAt: c.now.Add(-time.Hour)}))
	c.keys = server.NewKeys(base.store, []string{devKey})
	e, err := server.New(server.Config{Store: base.store, Keys: c.keys, Cursors: chargenet.NewCursorCodec([]byte(testSecret)),
		RateLimit: limit, Now: func() time.Time { return c.now }})
	require.NoError(t, err)
	c.e = e
	return c
}

// admin sends a request with adminKey.
func (c *clockEnv) admin(method, path, body string) *httptest.ResponseRecorder {
	c.t.Helper()
	return c.do(method, path, body, "Authorization", "Bearer "+adminKey)
}

var keySecretRe = regexp.MustCompile(`^cn_[A-Za-z0-9_-]{43}$`)

func TestKeyAdministration(t *testing.T) {
	c := newClockEnv(t, nil)

	rec := c.admin(http.MethodPost, "/admin/v1/keys", `{"name": "emsp-acme", "scopes": ["webhooks", "inventory:read"],
		"expiresAt": "2027-02-01T00:00:00Z", "rateLimit": {"requests": 600, "windowSeconds": 60}}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	created := decode[gen.KeyWithSecret](t, rec)
	assert.Regexp(t, keySecretRe, created.Secret)
	assert.Equal(t, "emsp-acme", created.Name)
	assert.Equal(t, []string{"inventory:read", "webhooks"}, created.Scopes, "in the documented order")
	assert.Equal(t, time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC), *created.ExpiresAt)
	assert.Equal(t, &gen.KeyRateLimit{Requests: 600, WindowSeconds: 60}, created.RateLimit)
	assert.Equal(t, c.now.Truncate(time.Second), created.CreatedAt)
	assert.Nil(t, created.LastUsedAt)
	acme := []string{"Authorization", "Bearer " + created.Secret}

	rec = c.admin(http.MethodPost, "/admin/v1/keys", `{"name": "plain"}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	assert.Equal(t, []string{chargenet.ScopePartner}, decode[gen.KeyWithSecret](t, rec).Scopes, "partner when no scope is named")

	t.Run("the new key holds what it was given", func(t *testing.T) {
		assert.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v2/evses/1001", "", acme...).Code)
		rec := c.do(http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxVoltage": 300}`, acme...)
		assertError(t, rec, http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization")
		assert.Equal(t, "600", c.do(http.MethodGet, "/v1/locations", "", acme...).Header().Get("X-RateLimit-Limit"),
			"its own rate limit")
		assertError(t, c.do(http.MethodGet, "/admin/v1/keys", "", acme...), http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization")
		assertError(t, c.do(http.MethodGet, "/admin/v1/keys", ""), http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization")
	})

	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name, body  string
			status      int
			code, param string
		}{
			{"name taken", `{"name": "emsp-acme"}`, 409, chargenet.CodeConflict, "name"},
			{"name of the development keys", `{"name": "env"}`, 400, chargenet.CodeInvalidBody, "name"},
			{"name with a colon", `{"name": "chargebox:1"}`, 400, chargenet.CodeInvalidBody, "name"},
			{"unknown scope", `{"name": "x", "scopes": ["inventory:admin"]}`, 400, chargenet.CodeInvalidBody, "scopes[0]"},
			{"no scope", `{"name": "x", "scopes": []}`, 400, chargenet.CodeInvalidBody, "scopes"},
			{"expiry in the past", `{"name": "x", "expiresAt": "2026-10-01T00:00:00Z"}`, 400, chargenet.CodeInvalidBody, "expiresAt"},
			{"rate limit of no request", `{"name": "x", "rateLimit": {"requests": 0, "windowSeconds": 60}}`, 400, chargenet.CodeInvalidBody, "rateLimit.requests"},
			{"unknown field", `{"name": "x", "secret": "mine"}`, 400, chargenet.CodeInvalidBody, "secret"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := c.admin(http.MethodGet, "/admin/v1/keys?limit=100", "").Body.String()
				assertError(t, c.admin(http.MethodPost, "/admin/v1/keys", tt.body), tt.status, tt.code, tt.param)
				assert.Equal(t, before, c.admin(http.MethodGet, "/admin/v1/keys?limit=100", "").Body.String(), "nothing changed")
			})
		}
		assertError(t, c.admin(http.MethodPost, "/admin/v1/keys/nobody/rotate", ""), 404, chargenet.CodeNotFound, "name")
		assertError(t, c.admin(http.MethodDelete, "/admin/v1/keys/nobody", ""), 404, chargenet.CodeNotFound, "name")
		assertError(t, c.admin(http.MethodPost, "/admin/v1/keys/plain/rotate", `{"overlapSeconds": -1}`), 400, chargenet.CodeInvalidBody, "overlapSeconds")
		assertError(t, c.admin(http.MethodPost, "/admin/v1/keys/plain/rotate", `{"expiresAt": "2020-01-01T00:00:00Z"}`), 400, chargenet.CodeInvalidBody, "expiresAt")
	})

	t.Run("list", func(t *testing.T) {
		page := decode[gen.KeyPage](t, c.admin(http.MethodGet, "/admin/v1/keys?limit=2", ""))
		require.Len(t, page.Data, 2)
		assert.Equal(t, "admin", page.Data[0].Name)
		assert.Equal(t, "emsp-acme", page.Data[1].Name)
		require.NotNil(t, page.Pagination.NextCursor)
		next := decode[gen.KeyPage](t, c.admin(http.MethodGet, "/admin/v1/keys?limit=2&cursor="+*page.Pagination.NextCursor, ""))
		require.Len(t, next.Data, 1)
		assert.Equal(t, "plain", next.Data[0].Name)
		assert.False(t, next.Pagination.HasMore)
		assert.NotContains(t, c.admin(http.MethodGet, "/admin/v1/keys", "").Body.String(), `"secret"`)
	})

	t.Run("rotate with an overlap", func(t *testing.T) {
		rec := c.admin(http.MethodPost, "/admin/v1/keys/emsp-acme/rotate", `{"overlapSeconds": 3600}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		rotated := decode[gen.KeyWithSecret](t, rec)
		assert.NotEqual(t, created.Secret, rotated.Secret)
		assert.Equal(t, created.Scopes, rotated.Scopes)
		assert.Equal(t, created.ExpiresAt, rotated.ExpiresAt, "the expiry stays")
		assert.Equal(t, c.now.Truncate(time.Second).Add(time.Hour), *rotated.PreviousSecretExpiresAt)
		newer := []string{"Authorization", "Bearer " + rotated.Secret}
		assert.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v2/evses/1001", "", acme...).Code, "the old secret works during the overlap")
		assert.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v2/evses/1001", "", newer...).Code)

		c.now = c.now.Add(time.Hour)
		e := assertError(t, c.do(http.MethodGet, "/v2/evses/1001", "", acme...), http.StatusForbidden, chargenet.CodeKeyExpired, "Authorization")
		assert.Contains(t, e.Message, "rotated")
		assert.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v2/evses/1001", "", newer...).Code)
		listed := decode[gen.KeyPage](t, c.admin(http.MethodGet, "/admin/v1/keys", ""))
		assert.Nil(t, listed.Data[1].PreviousSecretExpiresAt, "the overlap is over")

		rec = c.admin(http.MethodPost, "/admin/v1/keys/emsp-acme/rotate", `{"overlapSeconds": 0, "expiresAt": "2027-05-01T00:00:00Z"}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		third := decode[gen.KeyWithSecret](t, rec)
		assert.Equal(t, time.Date(2027, 5, 1, 0, 0, 0, 0, time.UTC), *third.ExpiresAt)
		assertError(t, c.do(http.MethodGet, "/v2/evses/1001", "", newer...), http.StatusForbidden, chargenet.CodeKeyExpired, "Authorization")
		created.Secret = third.Secret
	})

	t.Run("revoke", func(t *testing.T) {
		key := []string{"Authorization", "Bearer " + created.Secret}
		require.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v2/evses/1001", "", key...).Code)
		rec := c.admin(http.MethodDelete, "/admin/v1/keys/emsp-acme", "")
		require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
		assertError(t, c.do(http.MethodGet, "/v2/evses/1001", "", key...), http.StatusForbidden, chargenet.CodeUnauthorized, "Authorization")
		assertError(t, c.admin(http.MethodDelete, "/admin/v1/keys/emsp-acme", ""), 404, chargenet.CodeNotFound, "name")
		assertError(t, c.admin(http.MethodPost, "/admin/v1/keys", `{"name": "emsp-acme"}`), 409, chargenet.CodeConflict, "name")
	})
}

func TestKeyExpiry(t *testing.T) {
	c := newClockEnv(t, nil)
	c.keys.CacheTTL = time.Minute
	require.NoError(t, c.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "short", Hash: chargenet.HashAPIKey("short-key-0123456789"),
		Scopes: []string{chargenet.ScopePartner}, CreatedAt: c.now, ExpiresAt: c.now.Add(2 * time.Second)}))
	key := []string{"Authorization", "Bearer short-key-0123456789"}
	require.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v2/evses/1001", "", key...).Code)
	c.now = c.now.Add(2 * time.Second)
	before := c.do(http.MethodGet, "/v2/evses/1001", "").Body.String()
	e := assertError(t, c.do(http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxVoltage": 300}`, key...),
		http.StatusForbidden, chargenet.CodeKeyExpired, "Authorization")
	assert.Contains(t, e.Message, `"short" expired at 2026-11-01T10:00:32Z`, "also from the cache: the expiry is the key's own")
	assert.Equal(t, before, c.do(http.MethodGet, "/v2/evses/1001", "").Body.String(), "nothing changed")
}

// TestScopeBeforeValidation checks that a key without the scope is refused before the
// request is validated: an invalid body is answered 403, not 400, and nothing changes.
func TestScopeBeforeValidation(t *testing.T) {
	c := newClockEnv(t, nil)
	require.NoError(t, c.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "reader", Hash: chargenet.HashAPIKey("reader-key-0123456789"),
		Scopes: []string{chargenet.ScopeInventoryRead}, CreatedAt: c.now}))
	reader := []string{"Authorization", "Bearer reader-key-0123456789"}
	for _, req := range []struct{ method, path, body string }{
		{http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxVoltage": "high"}`},
		{http.MethodPatch, "/v2/evses/abc/connectors/1", `{"maxVoltage": 300}`},
		{http.MethodPost, "/v2/evses", `not json`},
		{http.MethodDelete, "/v1/locations/LOC-0001", ""},
	} {
		e := assertError(t, c.do(req.method, req.path, req.body, reader...), http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization")
		assert.Equal(t, chargenet.ScopeInventoryWrite, *e.Scope, req.path)
	}
	page := decode[gen.EventPage](t, c.do(http.MethodGet, "/emsp/v1/events", ""))
	assert.Empty(t, page.Data, "no change was made")
}

func TestKeyRateLimit(t *testing.T) {
	for _, def := range []*server.RateLimit{{Requests: 1000, Window: time.Minute}, {}} {
		t.Run("default "+def.String(), func(t *testing.T) {
			c := newClockEnv(t, def)
			require.NoError(t, c.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "slow", Hash: chargenet.HashAPIKey("slow-key-0123456789"),
				Scopes: []string{chargenet.ScopePartner}, CreatedAt: c.now, RateLimit: chargenet.RateLimit{Requests: 2, Window: 10 * time.Second}}))
			slow := []string{"Authorization", "Bearer slow-key-0123456789"}
			for i := 1; i >= 0; i-- {
				rec := c.do(http.MethodGet, "/v1/locations", "", slow...)
				require.Equal(t, http.StatusOK, rec.Code)
				assert.Equal(t, "2", rec.Header().Get("X-RateLimit-Limit"))
				assert.Equal(t, strconv.Itoa(i), rec.Header().Get("X-RateLimit-Remaining"))
			}
			rec := c.do(http.MethodGet, "/v1/locations", "", slow...)
			assertError(t, rec, http.StatusTooManyRequests, chargenet.CodeRateLimited, "")
			assert.Equal(t, "10", rec.Header().Get("Retry-After"))
			other := c.do(http.MethodGet, "/v1/locations", "")
			assert.Equal(t, http.StatusOK, other.Code, "other keys are not limited by it")
			if def.Requests == 0 {
				assert.Empty(t, other.Header().Get("X-RateLimit-Limit"), "no default: other keys are not counted")
			}
			c.now = c.now.Add(10 * time.Second)
			assert.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v1/locations", "", slow...).Code, "a new window")
		})
	}
}

func TestKeyLastUse(t *testing.T) {
	c := newClockEnv(t, nil)
	for i := 0; i < 3; i++ {
		require.Equal(t, http.StatusOK, c.admin(http.MethodGet, "/admin/v1/keys", "").Code)
	}
	list := decode[gen.KeyPage](t, c.admin(http.MethodGet, "/admin/v1/keys", ""))
	assert.Nil(t, list.Data[0].LastUsedAt, "nothing is written per request")
	require.NoError(t, c.keys.FlushUses(context.Background()))
	list = decode[gen.KeyPage](t, c.admin(http.MethodGet, "/admin/v1/keys", ""))
	require.NotNil(t, list.Data[0].LastUsedAt)
	assert.Equal(t, time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), *list.Data[0].LastUsedAt, "the minute of the last use")

	c.now = c.now.Add(3 * time.Minute)
	require.Equal(t, http.StatusOK, c.admin(http.MethodGet, "/admin/v1/keys", "").Code)
	require.NoError(t, c.keys.FlushUses(context.Background()))
	require.NoError(t, c.keys.FlushUses(context.Background()), "nothing left to write")
	list = decode[gen.KeyPage](t, c.admin(http.MethodGet, "/admin/v1/keys", ""))
	assert.Equal(t, time.Date(2026, 11, 1, 10, 3, 0, 0, time.UTC), *list.Data[0].LastUsedAt)
}
