package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/chargenet/chargenet/gen"
)

// APIKeysPage returns one page of the API keys that are not revoked (expired ones
// included), in ascending name order, without their secrets: the service keeps only
// their hashes. Development keys given in the service's environment are not listed.
// Pass the page's NextCursor (or PreviousCursor) in the next PageRequest to move through
// the list.
//
// It fails with ErrInvalid if the cursor was not issued for this list or was altered
// (code invalid_cursor) or the limit is out of range (code invalid_parameter),
// ErrForbidden if the API key is not accepted or lacks ScopeKeys, and ErrRateLimited or
// ErrUnavailable if the service still refuses after the retries.
func (c *Client) APIKeysPage(ctx context.Context, req PageRequest, opts ...CallOption) (*APIKeyPage, error) {
	o := newCallOptions(opts)
	const op = "GET /admin/v1/keys"
	var params gen.ListKeysParams
	params.Cursor, params.Limit = req.params()
	res, err := c.api.ListKeys(ctx, &params)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, err
	}
	parsed, err := gen.ParseListKeysResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, decodeError(op, res, err)
	}
	return newPage(parsed.JSON200.Data, parsed.JSON200.Pagination, apiKeyFromAPI), nil
}

// APIKeys iterates over all API keys that are not revoked in ascending name order,
// fetching opts.PageSize at a time as the loop asks for them; breaking out of the loop
// stops fetching.
//
//	for key, err := range c.APIKeys(ctx, client.ListOptions{}) {
//		if err != nil {
//			return err
//		}
//		...
//	}
//
// A failure is yielded once, as the error of the last iteration, with the errors of
// APIKeysPage.
func (c *Client) APIKeys(ctx context.Context, opts ListOptions) iter.Seq2[APIKey, error] {
	return all(ctx, opts, func(ctx context.Context, req PageRequest) (*APIKeyPage, error) {
		return c.APIKeysPage(ctx, req)
	})
}

// CreateAPIKey creates the API key k and returns it with its secret, to send as
// WithAPIKey(secret). The answer is the only time the secret is shown: store it safely
// and hand it to the key's holder.
//
// The call is sent once and never retried, and carries no Idempotency-Key: the service
// keeps no answer that would hold the secret. When its answer is lost, a repeat fails
// with ErrConflict because the name is taken; rotate the key with an Overlap of zero to
// get a secret.
//
// It fails with ErrInvalid (Error.Param names the field) if the name is malformed or
// reserved, a scope is unknown, ExpiresAt is not in the future, or the rate limit is out
// of range (a Window that is not whole seconds is refused without contacting the
// service); ErrConflict if the name is taken, also by a revoked key; ErrForbidden if the
// API key is not accepted or lacks ScopeKeys; ErrRateLimited or ErrUnavailable if the
// service refused.
func (c *Client) CreateAPIKey(ctx context.Context, k NewAPIKey, opts ...CallOption) (key *APIKey, secret string, err error) {
	o := newCallOptions(opts)
	const op = "POST /admin/v1/keys"
	body := gen.KeyCreate{Name: k.Name}
	if len(k.Scopes) > 0 {
		scopes := make([]gen.ScopeName, len(k.Scopes))
		for i, s := range k.Scopes {
			scopes[i] = gen.ScopeName(s)
		}
		body.Scopes = &scopes
	}
	if !k.ExpiresAt.IsZero() {
		body.ExpiresAt = &k.ExpiresAt
	}
	if k.RateLimit != nil {
		if body.RateLimit, err = k.RateLimit.toAPI(op); err != nil {
			return nil, "", err
		}
	}
	res, err := c.api.CreateKey(sendOnce(ctx), body)
	if err := c.answer(op, o, nil, res, err, http.StatusCreated); err != nil {
		return nil, "", err
	}
	parsed, err := gen.ParseCreateKeyResponse(res)
	if err != nil || parsed.JSON201 == nil {
		return nil, "", decodeError(op, res, err)
	}
	key, secret = apiKeyWithSecretFromAPI(parsed.JSON201)
	return key, secret, nil
}

// RotateAPIKey gives the API key name a new secret and returns the key with it, the
// only time it is shown. The old secret keeps working for r.Overlap, so that the key's
// holder can switch without an outage (Key.PreviousSecretExpiresAt says until when),
// and is then refused with ErrForbidden (code key_expired). Rotating again during an
// overlap ends the older secret at once. The key keeps its name, scopes, rate limit and
// webhooks, and its expiry unless r gives a new one. Every server of the service sees
// the rotation within its key cache time (5 seconds by default).
//
// The call is sent once and never retried: a repeat after a lost answer would rotate
// again and end at once the secret the holder still uses.
//
// It fails with ErrNotFound if no active key has the name; ErrInvalid if the name is
// empty or r.Overlap is not whole seconds (both refused without contacting the
// service), r.Overlap is negative or over 30 days, or r.ExpiresAt is not in the future;
// ErrForbidden if the API key is not accepted or lacks ScopeKeys; ErrRateLimited or
// ErrUnavailable if the service refused.
func (c *Client) RotateAPIKey(ctx context.Context, name string, r KeyRotation, opts ...CallOption) (key *APIKey, secret string, err error) {
	o := newCallOptions(opts)
	op := "POST /admin/v1/keys/" + url.PathEscape(name) + "/rotate"
	if name == "" {
		return nil, "", fmt.Errorf("chargenet: %s: empty key name: %w", op, ErrInvalid)
	}
	var body gen.KeyRotate
	if r.Overlap != nil {
		secs, err := wholeSeconds(op, "Overlap", *r.Overlap)
		if err != nil {
			return nil, "", err
		}
		body.OverlapSeconds = &secs
	}
	if !r.ExpiresAt.IsZero() {
		body.ExpiresAt = &r.ExpiresAt
	}
	res, err := c.api.RotateKey(sendOnce(ctx), name, body)
	if err := c.answer(op, o, nil, res, err); err != nil {
		return nil, "", err
	}
	parsed, err := gen.ParseRotateKeyResponse(res)
	if err != nil || parsed.JSON200 == nil {
		return nil, "", decodeError(op, res, err)
	}
	key, secret = apiKeyWithSecretFromAPI(parsed.JSON200)
	return key, secret, nil
}

// RevokeAPIKey revokes the API key name: none of its secrets works any more (they are
// refused with ErrForbidden, code unauthorized) on every server of the service within
// its key cache time (5 seconds by default). The name stays taken. The call is retried
// like a read.
//
// It fails with ErrNotFound if no active key has the name, which is also the answer to
// a retry after a lost answer to a revocation that succeeded: either way the key is not
// active. It fails with ErrInvalid if the name is empty (refused without contacting the
// service) or too long, ErrForbidden if the API key is not accepted or lacks ScopeKeys,
// and ErrRateLimited or ErrUnavailable if the service still refuses after the retries.
func (c *Client) RevokeAPIKey(ctx context.Context, name string, opts ...CallOption) error {
	o := newCallOptions(opts)
	op := "DELETE /admin/v1/keys/" + url.PathEscape(name)
	if name == "" {
		return fmt.Errorf("chargenet: %s: empty key name: %w", op, ErrInvalid)
	}
	res, err := c.api.RevokeKey(ctx, name)
	if err := c.answer(op, o, nil, res, err, http.StatusNoContent); err != nil {
		return err
	}
	if _, err := gen.ParseRevokeKeyResponse(res); err != nil {
		return decodeError(op, res, err)
	}
	return nil
}

// Scope is a permission an API key holds: each operation needs one. The service may add
// scopes; compare against the constants.
type Scope string

// The scopes of the contract.
const (
	ScopeInventoryRead  Scope = "inventory:read"  // EVSE, location and charge box reads, and the change lists
	ScopeInventoryWrite Scope = "inventory:write" // every change to EVSEs, connectors and locations
	ScopeEventsRead     Scope = "events:read"     // the event log
	ScopeWebhooks       Scope = "webhooks"        // the key's own webhook subscriptions
	ScopeIngest         Scope = "ingest"          // charge box status notifications
	ScopeKeys           Scope = "keys"            // key administration: it can create keys of any scope, itself included
	// ScopePartner stands for ScopeInventoryRead, ScopeInventoryWrite, ScopeEventsRead and
	// ScopeWebhooks; a key created without scopes holds it.
	ScopePartner Scope = "partner"
)

// APIKey is an API key as the service lists it, without its secret.
type APIKey struct {
	// Name identifies the key for good: it is the actor of every change the key makes,
	// the owner of the webhooks it creates, and the name the other key operations take.
	Name string
	// Scopes are the scopes the key holds, as given when it was created.
	Scopes []Scope
	// CreatedAt is when the key was created.
	CreatedAt time.Time
	// ExpiresAt is when the key stops working, or nil when it does not expire.
	ExpiresAt *time.Time
	// RateLimit is the key's own rate limit, or nil when the service's default applies.
	RateLimit *KeyRateLimit
	// LastUsedAt is the minute of the key's last recorded use, or nil when none is
	// recorded. It is coarse: up to about two minutes late.
	LastUsedAt *time.Time
	// PreviousSecretExpiresAt is, during a rotation's overlap, when the secret the
	// rotation replaced stops working; nil otherwise.
	PreviousSecretExpiresAt *time.Time
}

// KeyRateLimit is an API key's own rate limit, which replaces the service's default for
// it, on each server of the service.
type KeyRateLimit struct {
	// Requests is the number of requests allowed per window, at least 1.
	Requests int
	// Window is the window's length: whole seconds, from 1 second to 24 hours.
	Window time.Duration
}

// NewAPIKey is an API key to create with CreateAPIKey.
type NewAPIKey struct {
	// Name is 1 to 64 letters, digits, ".", "_" and "-", starting with a letter or
	// digit, and unique among all keys ever created (revoked ones included); "env" is
	// reserved. Name keys after their holder and purpose ("emsp-acme").
	Name string
	// Scopes are the scopes the key holds; none means ScopePartner. Give a key only the
	// scopes its holder needs.
	Scopes []Scope
	// ExpiresAt is when the key stops working, in the future; zero means never.
	ExpiresAt time.Time
	// RateLimit is the key's own rate limit; nil means the service's default.
	RateLimit *KeyRateLimit
}

// KeyRotation says how RotateAPIKey rotates a key.
type KeyRotation struct {
	// Overlap is how long the old secret keeps working: whole seconds, at most 30 days.
	// Nil means the service's default, one day; a zero Overlap ends the old secret at
	// once: RotateAPIKey(ctx, name, client.KeyRotation{Overlap: new(time.Duration(0))}).
	Overlap *time.Duration
	// ExpiresAt is the key's new expiry, in the future; zero keeps the one it has.
	ExpiresAt time.Time
}

// APIKeyPage is one page of API keys, as returned by APIKeysPage.
type APIKeyPage = Page[APIKey]

func (r *KeyRateLimit) toAPI(op string) (*gen.KeyRateLimit, error) {
	secs, err := wholeSeconds(op, "RateLimit.Window", r.Window)
	if err != nil {
		return nil, err
	}
	return &gen.KeyRateLimit{Requests: r.Requests, WindowSeconds: secs}, nil
}

// wholeSeconds returns d in seconds, or an ErrInvalid naming field if d has a fraction
// of a second, which the contract cannot carry.
func wholeSeconds(op, field string, d time.Duration) (int, error) {
	if d%time.Second != 0 {
		return 0, fmt.Errorf("chargenet: %s: %s %s is not a whole number of seconds: %w", op, field, d, ErrInvalid)
	}
	return int(d / time.Second), nil
}

func apiKeyFromAPI(a *gen.Key) APIKey {
	k := APIKey{
		Name:                    a.Name,
		Scopes:                  make([]Scope, len(a.Scopes)),
		CreatedAt:               a.CreatedAt,
		ExpiresAt:               a.ExpiresAt,
		LastUsedAt:              a.LastUsedAt,
		PreviousSecretExpiresAt: a.PreviousSecretExpiresAt,
	}
	for i, s := range a.Scopes {
		k.Scopes[i] = Scope(s)
	}
	if a.RateLimit != nil {
		k.RateLimit = &KeyRateLimit{Requests: a.RateLimit.Requests, Window: time.Duration(a.RateLimit.WindowSeconds) * time.Second}
	}
	return k
}

func apiKeyWithSecretFromAPI(a *gen.KeyWithSecret) (*APIKey, string) {
	k := apiKeyFromAPI(&gen.Key{Name: a.Name, Scopes: a.Scopes, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt,
		RateLimit: a.RateLimit, LastUsedAt: a.LastUsedAt, PreviousSecretExpiresAt: a.PreviousSecretExpiresAt})
	return &k, a.Secret
}
