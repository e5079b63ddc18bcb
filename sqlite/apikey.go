package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
)

// CreateAPIKey stores a key: its name, hash, scope and creation time. Names are unique
// among all keys, active or revoked, so a name identifies one key for good in logs and
// revocations; hashes are unique too. A name or hash already stored is an ErrConflict
// *chargenet.Error with Code conflict and Param "name" or "hash".
func (s *Store) CreateAPIKey(ctx context.Context, key chargenet.APIKey) error {
	const op = "create api key"
	_, err := s.insertAPIKey.ExecContext(ctx, key.Name, key.Hash[:], key.Scope, formatTime(key.CreatedAt))
	if err == nil || constraintCode(err) == 0 {
		return wrap(op, err)
	}
	var taken bool
	if err := s.apiKeyNameTaken.QueryRowContext(ctx, key.Name).Scan(&taken); err != nil {
		return wrap(op, err)
	}
	if taken {
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "name", "an API key named %q already exists", key.Name)
	}
	return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "hash", "API key %q has the same hash as an existing key", key.Name)
}

// RevokeAPIKey marks the named key revoked at now; APIKeyByHash no longer finds it. If
// no active key has this name (none ever had, or it is already revoked) it returns an
// ErrNotFound *chargenet.Error with Code not_found and Param "name".
func (s *Store) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	const op = "revoke api key"
	res, err := s.revokeAPIKey.ExecContext(ctx, formatTime(now), name)
	if err != nil {
		return wrap(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "name", "no active API key named %q", name)
	}
	return nil
}

// APIKeyByHash returns the active (not revoked) key with this hash. Otherwise it returns
// an ErrNotFound *chargenet.Error with Code not_found and an empty Param.
func (s *Store) APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error) {
	const op = "api key by hash"
	var (
		k       chargenet.APIKey
		raw     []byte
		created string
	)
	err := s.apiKeyByHash.QueryRowContext(ctx, hash[:]).Scan(&k.Name, &raw, &k.Scope, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "", "API key not found")
	}
	if err != nil {
		return nil, wrap(op, err)
	}
	copy(k.Hash[:], raw)
	if k.CreatedAt, err = parseTime(created); err != nil {
		return nil, wrap(op, err)
	}
	return &k, nil
}

// Setting returns the stored value of the named setting, storing value first if the
// name has none yet (INSERT ... ON CONFLICT DO NOTHING, then SELECT): of several
// callers, all get the value stored first. Errors are wrapped driver errors.
func (s *Store) Setting(ctx context.Context, name, value string) (string, error) {
	const op = "setting"
	if _, err := s.insertSetting.ExecContext(ctx, name, value); err != nil {
		return "", wrap(op, err)
	}
	var stored string
	if err := s.selectSetting.QueryRowContext(ctx, name).Scan(&stored); err != nil {
		return "", wrap(op, err)
	}
	return stored, nil
}
