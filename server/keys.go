package server

import (
	"context"
	"net/http"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
)

// DefaultKeyOverlap is how long the old secret of a rotated key keeps working when the
// rotation does not say.
const DefaultKeyOverlap = 24 * time.Hour

// keyAdminStore is what the administration of API keys uses of a store.
type keyAdminStore interface {
	ListAPIKeys(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.APIKey, error)
	CreateAPIKey(ctx context.Context, key chargenet.APIKey) error
	RotateAPIKey(ctx context.Context, name string, r chargenet.KeyRotation) (*chargenet.APIKey, error)
	RevokeAPIKey(ctx context.Context, name string, now time.Time) error
}

// keyAdmin creates, lists, rotates and revokes API keys; the key cache forgets the keys
// it changes.
type keyAdmin struct {
	store   keyAdminStore
	keys    *Keys
	cursors *chargenet.CursorCodec
	now     func() time.Time
}

// ListKeys answers GET /admin/v1/keys with one page of the keys not revoked.
func (s *keyAdmin) ListKeys(ctx context.Context, req gen.ListKeysRequestObject) (gen.ListKeysResponseObject, error) {
	page, err := chargenet.Paginate(ctx, s.cursors, chargenet.ListKeys, deref(req.Params.Cursor), limit(req.Params.Limit),
		s.store.ListAPIKeys, func(k *chargenet.APIKey) string { return k.Name })
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := gen.KeyPage{Data: make([]gen.Key, len(page.Items)), Pagination: pagination(page)}
	for i := range page.Items {
		out.Data[i] = keyToAPI(&page.Items[i], now)
	}
	return gen.ListKeys200JSONResponse{Body: out}, nil
}

// CreateKey answers POST /admin/v1/keys: it checks the name, scopes, expiry and rate
// limit, stores the key's hash and answers 201 with the secret, the only time it is
// shown.
func (s *keyAdmin) CreateKey(ctx context.Context, req gen.CreateKeyRequestObject) (gen.CreateKeyResponseObject, error) {
	if req.Body == nil {
		return nil, newError(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	now := s.now().UTC().Truncate(time.Second)
	key := chargenet.APIKey{Name: req.Body.Name, CreatedAt: now}
	if err := chargenet.CheckKeyName(key.Name); err != nil {
		return nil, err
	}
	var names []string
	if req.Body.Scopes != nil {
		for _, sc := range *req.Body.Scopes {
			names = append(names, string(sc))
		}
	}
	scopes, err := chargenet.ParseScopes(names)
	if err != nil {
		return nil, err
	}
	key.Scopes = scopes
	if req.Body.ExpiresAt != nil {
		if key.ExpiresAt, err = futureTime("expiresAt", *req.Body.ExpiresAt, now); err != nil {
			return nil, err
		}
	}
	if r := req.Body.RateLimit; r != nil {
		key.RateLimit = chargenet.RateLimit{Requests: r.Requests, Window: time.Duration(r.WindowSeconds) * time.Second}
		if err := chargenet.CheckKeyRateLimit(key.RateLimit); err != nil {
			return nil, err
		}
	}
	secret := NewAPIKey()
	key.Hash = chargenet.HashAPIKey(secret)
	if err := s.store.CreateAPIKey(ctx, key); err != nil {
		return nil, err
	}
	return gen.CreateKey201JSONResponse{Body: keyWithSecret(&key, secret, now)}, nil
}

// RotateKey answers POST /admin/v1/keys/{name}/rotate: the key gets a new secret, the
// old one keeps working for the overlap asked for (DefaultKeyOverlap when none), and
// the answer shows the new secret.
func (s *keyAdmin) RotateKey(ctx context.Context, req gen.RotateKeyRequestObject) (gen.RotateKeyResponseObject, error) {
	now := s.now().UTC().Truncate(time.Second)
	overlap := DefaultKeyOverlap
	r := chargenet.KeyRotation{}
	if b := req.Body; b != nil {
		if b.OverlapSeconds != nil {
			overlap = time.Duration(*b.OverlapSeconds) * time.Second
		}
		if b.ExpiresAt != nil {
			at, err := futureTime("expiresAt", *b.ExpiresAt, now)
			if err != nil {
				return nil, err
			}
			r.ExpiresAt = &at
		}
	}
	secret := NewAPIKey()
	r.Hash, r.PreviousUntil = chargenet.HashAPIKey(secret), now.Add(overlap)
	key, err := s.store.RotateAPIKey(ctx, req.Name, r)
	if err != nil {
		return nil, err
	}
	s.keys.Forget(key.Name)
	return gen.RotateKey200JSONResponse{Body: keyWithSecret(key, secret, now)}, nil
}

// RevokeKey answers DELETE /admin/v1/keys/{name}.
func (s *keyAdmin) RevokeKey(ctx context.Context, req gen.RevokeKeyRequestObject) (gen.RevokeKeyResponseObject, error) {
	if err := s.store.RevokeAPIKey(ctx, req.Name, s.now().UTC()); err != nil {
		return nil, err
	}
	s.keys.Forget(req.Name)
	return gen.RevokeKey204Response{}, nil
}

// futureTime returns t in UTC, or an invalid_body error naming field when t is not
// after now.
func futureTime(field string, t, now time.Time) (time.Time, error) {
	if !t.After(now) {
		return time.Time{}, chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, field,
			"%s %s must be in the future", field, t.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// keyToAPI returns k as the contract's Key at now: the end of a rotation's overlap only
// while it runs.
func keyToAPI(k *chargenet.APIKey, now time.Time) gen.Key {
	out := gen.Key{Name: k.Name, Scopes: k.Scopes, CreatedAt: k.CreatedAt.UTC(),
		ExpiresAt: optionalTime(k.ExpiresAt), LastUsedAt: optionalTime(k.LastUsedAt)}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	if k.RateLimit.Requests > 0 {
		out.RateLimit = &gen.KeyRateLimit{Requests: k.RateLimit.Requests, WindowSeconds: int(k.RateLimit.Window / time.Second)}
	}
	if k.PreviousUntil.After(now) {
		out.PreviousSecretExpiresAt = optionalTime(k.PreviousUntil)
	}
	return out
}

// keyWithSecret returns k as the contract's KeyWithSecret, with its secret.
func keyWithSecret(k *chargenet.APIKey, secret string, now time.Time) gen.KeyWithSecret {
	a := keyToAPI(k, now)
	return gen.KeyWithSecret{Name: a.Name, Scopes: a.Scopes, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt,
		RateLimit: a.RateLimit, LastUsedAt: a.LastUsedAt, PreviousSecretExpiresAt: a.PreviousSecretExpiresAt, Secret: secret}
}

// optionalTime returns a pointer to t in UTC, or nil when t is zero.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
