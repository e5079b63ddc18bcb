package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// MaxAPIKeyLength bounds the token accepted in the Authorization header.
const MaxAPIKeyLength = 256

// NewAPIKey returns a new random API key: "cn_" and 43 base64url characters (256 bits).
func NewAPIKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "cn_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Keys authenticates API keys: keys stored (hashed) in the database, and development
// keys given in the environment (CHARGENET_API_KEYS, kept in memory as hashes only).
// Database answers are cached for CacheTTL, so a revoked, rotated or changed key takes
// effect within that time on every replica.
//
// Keys also notes when each stored key is used, at most once per key and minute, and
// FlushUses writes what it noted in one batch: last use is recorded to the minute and
// never costs a write per request.
type Keys struct {
	store    KeyStore
	static   []*cachedKey
	CacheTTL time.Duration

	mu    sync.Mutex
	cache map[[sha256.Size]byte]*cachedKey
	uses  map[string]time.Time // key name -> the minute of its last use, not yet written
}

// cachedKey is a key as one of its secrets authenticates it. Only used is written after
// the entry is made, under Keys.mu.
type cachedKey struct {
	key    chargenet.APIKey
	grants chargenet.Grants
	// expiry is when the secret stops working (zero: never); rotated says it is the
	// secret a rotation replaced.
	expiry  time.Time
	rotated bool
	stored  bool      // false for a development key, whose use is not recorded
	until   time.Time // when the entry must be read from the store again
	used    int64     // the Unix minute of the last use noted
}

const maxCachedKeys = 10000

// KeyStore is what Keys uses of a store: the keys by hash, and the record of their use.
type KeyStore interface {
	APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error)
	RecordAPIKeyUse(ctx context.Context, uses []chargenet.KeyUse) error
}

// NewKeys returns an authenticator over store plus the given development keys, each of
// scope partner and named chargenet.DevKeyName.
func NewKeys(store KeyStore, devKeys []string) *Keys {
	k := &Keys{store: store, CacheTTL: 5 * time.Second, cache: map[[sha256.Size]byte]*cachedKey{}, uses: map[string]time.Time{}}
	for _, dk := range devKeys {
		if dk = strings.TrimSpace(dk); dk != "" {
			key := chargenet.APIKey{Name: chargenet.DevKeyName, Hash: chargenet.HashAPIKey(dk), Scopes: []string{chargenet.ScopePartner}}
			k.static = append(k.static, &cachedKey{key: key, grants: key.Grants()})
		}
	}
	return k
}

func forbidden(format string, args ...any) *Error {
	return newError(http.StatusForbidden, chargenet.CodeUnauthorized, "Authorization", format, args...)
}

// authenticate checks the Authorization header values of a request at now and returns
// the key they carry, noting its use. A missing, repeated, malformed, unknown or revoked
// key is a 403 unauthorized *Error, an expired key (or a secret whose rotation overlap
// ended) a 403 key_expired *Error; a database that cannot be reached is an
// ErrUnavailable error.
func (k *Keys) authenticate(ctx context.Context, header []string, now time.Time) (*cachedKey, error) {
	switch {
	case len(header) == 0:
		return nil, forbidden(`header "Authorization" is missing; send "Authorization: Bearer <API_KEY>"`)
	case len(header) > 1:
		return nil, forbidden(`header "Authorization" is repeated; send it once`)
	}
	scheme, token, ok := strings.Cut(header[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || !validToken(token) {
		return nil, forbidden(`header "Authorization" is malformed; send "Authorization: Bearer <API_KEY>"`)
	}
	hash := chargenet.HashAPIKey(token)
	var dev *cachedKey
	for _, s := range k.static { // no early exit: the time taken does not depend on which key matched
		if subtle.ConstantTimeCompare(hash[:], s.key.Hash[:]) == 1 {
			dev = s
		}
	}
	if dev != nil {
		return dev, nil
	}
	k.mu.Lock()
	c := k.cache[hash]
	if c != nil && now.Before(c.until) {
		err := expired(c, now)
		if err == nil {
			k.noteUse(c, now)
		}
		k.mu.Unlock()
		return c, err
	}
	k.mu.Unlock()
	key, err := k.store.APIKeyByHash(ctx, hash)
	var expiry time.Time
	var rotated bool
	if err == nil {
		if expiry, rotated, ok = key.SecretExpiry(hash); !ok {
			err = chargenet.ErrNotFound
		}
	}
	if errors.Is(err, chargenet.ErrNotFound) {
		return nil, forbidden(`header "Authorization": the API key is unknown or revoked`)
	}
	if err != nil {
		return nil, err
	}
	c = &cachedKey{key: *key, grants: key.Grants(), expiry: expiry, rotated: rotated, stored: true, until: now.Add(k.CacheTTL)}
	k.mu.Lock()
	if len(k.cache) >= maxCachedKeys {
		clear(k.cache)
	}
	k.cache[hash] = c
	err = expired(c, now)
	if err == nil {
		k.noteUse(c, now)
	}
	k.mu.Unlock()
	return c, err
}

// noteUse notes that c was used at now, once per minute. Keys.mu must be held.
func (k *Keys) noteUse(c *cachedKey, now time.Time) {
	minute := now.Unix() / 60
	if c.used == minute || !c.stored {
		return
	}
	c.used = minute
	at := time.Unix(minute*60, 0).UTC()
	if at.After(k.uses[c.key.Name]) {
		k.uses[c.key.Name] = at
	}
}

// expired returns the 403 key_expired *Error when c's secret no longer works at now.
func expired(c *cachedKey, now time.Time) error {
	if c.expiry.IsZero() || now.Before(c.expiry) {
		return nil
	}
	at := c.expiry.UTC().Format(time.RFC3339)
	if c.rotated {
		return newError(http.StatusForbidden, chargenet.CodeKeyExpired, "Authorization",
			"the API key %q was rotated: this secret stopped working at %s; use the new one", c.key.Name, at)
	}
	return newError(http.StatusForbidden, chargenet.CodeKeyExpired, "Authorization",
		"the API key %q expired at %s; ask for a new one", c.key.Name, at)
}

// Forget drops what the cache holds of the named key on this replica, so that a change
// made here (a revocation, a rotation) takes effect here at once.
func (k *Keys) Forget(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for h, c := range k.cache {
		if c.key.Name == name {
			delete(k.cache, h)
		}
	}
}

// FlushUses writes the uses noted since the last flush (RecordAPIKeyUse). When the
// store fails, the uses are kept for the next flush and the error is returned.
func (k *Keys) FlushUses(ctx context.Context) error {
	k.mu.Lock()
	pending := k.uses
	k.uses = map[string]time.Time{}
	k.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	uses := make([]chargenet.KeyUse, 0, len(pending))
	for name, at := range pending {
		uses = append(uses, chargenet.KeyUse{Name: name, At: at})
	}
	err := k.store.RecordAPIKeyUse(ctx, uses)
	if err != nil {
		k.mu.Lock()
		for name, at := range pending {
			if at.After(k.uses[name]) {
				k.uses[name] = at
			}
		}
		k.mu.Unlock()
	}
	return err
}

// UseFlushInterval is how often RunUseFlusher writes the uses noted.
const UseFlushInterval = time.Minute

// RunUseFlusher writes the uses noted every interval until ctx is done, then once more
// (within two seconds). Failures are logged and retried at the next flush.
func (k *Keys) RunUseFlusher(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := k.FlushUses(ctx); err != nil && ctx.Err() == nil {
				log.Warn("recording the last use of API keys", "error", err.Error())
			}
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := k.FlushUses(fctx); err != nil {
				log.Warn("recording the last use of API keys", "error", err.Error())
			}
			return
		}
	}
}

// validToken reports whether s is an RFC 6750 b64token of acceptable length.
func validToken(s string) bool {
	if s == "" || len(s) > MaxAPIKeyLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=':
		default:
			return false
		}
	}
	return true
}

// authenticationFunc returns the validator's hook for the bearer schemes: it runs for
// every operation, before its parameters and body are checked. It checks the key, its
// expiry and that it holds the operation's scope (scopes, from the contract's
// x-scopes), records the key's name on the request context (the owner of the webhooks
// it creates, the actor of its changes), and counts the request against the key's rate
// limit.
func authenticationFunc(keys *Keys, scopes map[*openapi3.Operation]requirement, lim *limiter, now func() time.Time) openapi3filter.AuthenticationFunc {
	return func(ctx context.Context, in *openapi3filter.AuthenticationInput) error {
		c, err := keys.authenticate(ctx, in.RequestValidationInput.Request.Header.Values("Authorization"), now())
		if err != nil {
			return err
		}
		need, ok := scopes[in.RequestValidationInput.Route.Operation]
		if !ok {
			return errors.New("server: an operation without a scope requirement reached authentication")
		}
		if !c.grants.Has(need.grants) {
			e := newError(http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization",
				"the API key %q does not hold scope %s, which this operation needs; it holds %s",
				c.key.Name, need.scope, strings.Join(c.key.Scopes, ", "))
			e.Scope = need.scope
			return e
		}
		ec, ok := ctx.Value(echoContextKey).(echo.Context)
		if !ok {
			return nil
		}
		ec.SetRequest(ec.Request().WithContext(context.WithValue(ec.Request().Context(), keyNameKey{}, c.key.Name)))
		return lim.allow(ec, c.key.Hash, c.key.RateLimit)
	}
}
