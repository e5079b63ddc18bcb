package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
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
// Database answers are cached for CacheTTL, so a revoked key stops working within that
// time on every replica.
type Keys struct {
	store    chargenet.Store
	static   [][sha256.Size]byte
	CacheTTL time.Duration

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cachedKey
}

type cachedKey struct {
	key     chargenet.APIKey
	expires time.Time
}

const maxCachedKeys = 10000

// NewKeys returns an authenticator over store plus the given development keys.
func NewKeys(store chargenet.Store, devKeys []string) *Keys {
	k := &Keys{store: store, CacheTTL: 5 * time.Second, cache: map[[sha256.Size]byte]cachedKey{}}
	for _, dk := range devKeys {
		if dk = strings.TrimSpace(dk); dk != "" {
			k.static = append(k.static, chargenet.HashAPIKey(dk))
		}
	}
	return k
}

func forbidden(format string, args ...any) *Error {
	return newError(http.StatusForbidden, chargenet.CodeUnauthorized, "Authorization", format, args...)
}

// Authenticate checks the Authorization header values of a request and returns the key
// they carry. A missing, repeated, malformed, unknown or revoked key is a 403 *Error; a
// database that cannot be reached is an ErrUnavailable error.
func (k *Keys) Authenticate(ctx context.Context, header []string) (*chargenet.APIKey, error) {
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
	var match int
	for i := range k.static { // no early exit: the time taken does not depend on which key matched
		match |= subtle.ConstantTimeCompare(hash[:], k.static[i][:])
	}
	if match == 1 {
		return &chargenet.APIKey{Name: chargenet.DevKeyName, Hash: hash, Scopes: []string{chargenet.ScopePartner}}, nil
	}
	now := time.Now()
	k.mu.Lock()
	c, hit := k.cache[hash]
	k.mu.Unlock()
	if hit && now.Before(c.expires) {
		return &c.key, nil
	}
	key, err := k.store.APIKeyByHash(ctx, hash)
	if err == nil {
		if _, _, ok := key.SecretExpiry(hash); !ok {
			err = chargenet.ErrNotFound
		}
	}
	if errors.Is(err, chargenet.ErrNotFound) {
		return nil, forbidden(`header "Authorization": the API key is unknown or revoked`)
	}
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	if len(k.cache) >= maxCachedKeys {
		clear(k.cache)
	}
	k.cache[hash] = cachedKey{key: *key, expires: now.Add(k.CacheTTL)}
	k.mu.Unlock()
	return key, nil
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

// authenticationFunc returns the validator's hook for the bearer scheme: it runs for
// every operation whose contract declares it, checks the key and its scope (bearerAuth
// takes partner keys, ingestKey ingest keys), records the key's name (the owner of the
// webhooks it creates) on the request context, and counts the request against the
// key's rate limit.
func authenticationFunc(keys *Keys, lim *limiter) openapi3filter.AuthenticationFunc {
	return func(ctx context.Context, in *openapi3filter.AuthenticationInput) error {
		key, err := keys.Authenticate(ctx, in.RequestValidationInput.Request.Header.Values("Authorization"))
		if err != nil {
			return err
		}
		want := chargenet.ScopePartner
		if in.SecuritySchemeName == "ingestKey" {
			want = chargenet.ScopeIngest
		}
		if g, _ := chargenet.GrantsOf(want); !key.Grants().Has(g) {
			return forbidden(`header "Authorization": the API key has scope %q, which does not grant this operation`, strings.Join(key.Scopes, " "))
		}
		c, ok := ctx.Value(echoContextKey).(echo.Context)
		if !ok {
			return nil
		}
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), ownerKey{}, key.Name)))
		return lim.allow(c, key.Hash)
	}
}
