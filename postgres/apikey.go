package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
)

// CreateAPIKey stores a key: its name, hash, scope and creation time. Names are unique
// among all keys, active or revoked, so a name identifies one key for good in logs and
// revocations; hashes are unique too. A name already stored is an ErrConflict
// *chargenet.Error with Code conflict and Param "name"; otherwise a hash already stored
// is one with Param "hash". Other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) CreateAPIKey(ctx context.Context, key chargenet.APIKey) error {
	const op = "create api key"
	tag, err := s.pool.Exec(ctx, `INSERT INTO api_keys (name, hash, scope, created_at) VALUES ($1, $2, $3, $4) `+
		`ON CONFLICT DO NOTHING`, key.Name, key.Hash[:], key.Scope, key.CreatedAt)
	if err != nil {
		return s.wrap(op, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var nameTaken bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE name = $1)`, key.Name).Scan(&nameTaken); err != nil {
		return s.wrap(op, err)
	}
	if nameTaken {
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "name", "an API key named %q already exists", key.Name)
	}
	return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "hash", "API key %q has the same hash as an existing key", key.Name)
}

// RevokeAPIKey marks the named key revoked at now; APIKeyByHash no longer finds it. If
// no active key has this name (none ever had, or it is revoked already) it returns an
// ErrNotFound *chargenet.Error with Code not_found and Param "name". Other errors are
// wrapped driver errors, wrapping chargenet.ErrUnavailable if the database cannot be
// reached.
func (s *Store) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL`, name, now)
	if err != nil {
		return s.wrap("revoke api key", err)
	}
	if tag.RowsAffected() == 0 {
		return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "name", "no active API key named %q", name)
	}
	return nil
}

// APIKeyByHash returns the active (not revoked) key with this hash. Otherwise it returns
// an ErrNotFound *chargenet.Error with Code not_found and an empty Param. Other errors
// are wrapped driver errors, wrapping chargenet.ErrUnavailable if the database cannot
// be reached.
func (s *Store) APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error) {
	var (
		k   chargenet.APIKey
		raw []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT name, hash, scope, created_at FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`,
		hash[:]).Scan(&k.Name, &raw, &k.Scope, &k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "", "API key not found")
	}
	if err != nil {
		return nil, s.wrap("api key by hash", err)
	}
	copy(k.Hash[:], raw)
	k.CreatedAt = k.CreatedAt.UTC()
	return &k, nil
}

// Setting returns the stored value of the named setting, storing value first if the
// name has none yet: INSERT ... ON CONFLICT DO NOTHING, then SELECT, as two statements
// so that the SELECT sees a value another replica committed meanwhile. Of several
// callers, all get the value stored first. Errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) Setting(ctx context.Context, name, value string) (string, error) {
	const op = "setting"
	if _, err := s.pool.Exec(ctx, `INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, value); err != nil {
		return "", s.wrap(op, err)
	}
	var stored string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE name = $1`, name).Scan(&stored); err != nil {
		return "", s.wrap(op, err)
	}
	return stored, nil
}
