package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
)

// apiKeyColumns are the columns of a key, as scanAPIKey reads them.
const apiKeyColumns = `name, hash, scopes, created_at, expires_at, rate_requests, rate_window_s, last_used_at, ` +
	`previous_hash, previous_until`

// scanAPIKey reads the apiKeyColumns of one row.
func scanAPIKey(row interface{ Scan(...any) error }) (*chargenet.APIKey, error) {
	var (
		k                      chargenet.APIKey
		hash, prev             []byte
		scopes, created        string
		expires, used, prevEnd sql.NullString
		windowS                int64
	)
	if err := row.Scan(&k.Name, &hash, &scopes, &created, &expires, &k.RateLimit.Requests, &windowS, &used,
		&prev, &prevEnd); err != nil {
		return nil, err
	}
	copy(k.Hash[:], hash)
	copy(k.PreviousHash[:], prev)
	k.Scopes = strings.Fields(scopes)
	k.RateLimit.Window = time.Duration(windowS) * time.Second
	var err error
	if k.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		src sql.NullString
		dst *time.Time
	}{{expires, &k.ExpiresAt}, {used, &k.LastUsedAt}, {prevEnd, &k.PreviousUntil}} {
		if t.src.Valid {
			if *t.dst, err = parseTime(t.src.String); err != nil {
				return nil, err
			}
		}
	}
	return &k, nil
}

// CreateAPIKey stores a key: its name, hash, scopes, creation time, expiry and rate
// limit. Names are unique among all keys, active or revoked, so a name identifies one
// key for good in logs, events and revocations; hashes are unique too. A name or hash
// already stored is an ErrConflict *chargenet.Error with Code conflict and Param "name"
// or "hash".
func (s *Store) CreateAPIKey(ctx context.Context, key chargenet.APIKey) error {
	const op = "create api key"
	_, err := s.insertAPIKey.ExecContext(ctx, key.Name, key.Hash[:], strings.Join(key.Scopes, " "), formatTime(key.CreatedAt),
		nullTime(key.ExpiresAt), key.RateLimit.Requests, int64(key.RateLimit.Window/time.Second))
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

func noActiveKey(name string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "name", "no active API key named %q", name)
}

// RevokeAPIKey marks the named key revoked at now; APIKeyByHash no longer finds it by
// any of its secrets. If no active key has this name (none ever had, or it is already
// revoked) it returns an ErrNotFound *chargenet.Error with Code not_found and Param
// "name".
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
		return noActiveKey(name)
	}
	return nil
}

// APIKeyByHash returns the key, not revoked, whose current or previous secret has this
// hash, expired or not. Otherwise it returns an ErrNotFound *chargenet.Error with Code
// not_found and an empty Param.
func (s *Store) APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error) {
	k, err := scanAPIKey(s.apiKeyByHash.QueryRowContext(ctx, hash[:], hash[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "", "API key not found")
	}
	if err != nil {
		return nil, wrap("api key by hash", err)
	}
	return k, nil
}

// ListAPIKeys reads one keyset slice of the keys not revoked, ordered by name (see
// chargenet.Seek). Errors are wrapped driver errors.
func (s *Store) ListAPIKeys(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.APIKey, error) {
	out := []chargenet.APIKey{}
	if seek.Limit <= 0 {
		return out, nil
	}
	q, args := filteredSeek(`SELECT `+apiKeyColumns+` FROM api_keys`, "revoked_at IS NULL", "name", nil, seek)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap("list api keys", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, wrap("list api keys", err)
		}
		out = append(out, *k)
	}
	return out, wrap("list api keys", rows.Err())
}

// RotateAPIKey makes r.Hash the named key's secret in one transaction: the current
// secret becomes the previous one, accepted until r.PreviousUntil, and a previous
// secret of an earlier rotation is dropped; r.ExpiresAt, when set, becomes the key's
// expiry. It returns the key as committed. An ErrNotFound *chargenet.Error (Param
// "name") when no active key has the name; an ErrConflict (Param "hash") when a key has
// the hash already. Other errors are wrapped driver errors.
func (s *Store) RotateAPIKey(ctx context.Context, name string, r chargenet.KeyRotation) (*chargenet.APIKey, error) {
	var out *chargenet.APIKey
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		q := `UPDATE api_keys SET previous_hash = hash, previous_until = ?, hash = ?`
		args := []any{formatTime(r.PreviousUntil), r.Hash[:]}
		if r.ExpiresAt != nil {
			q, args = q+`, expires_at = ?`, append(args, formatTime(*r.ExpiresAt))
		}
		res, err := tx.ExecContext(ctx, q+` WHERE name = ? AND revoked_at IS NULL`, append(args, name)...)
		if constraintCode(err) != 0 {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "hash", "API key %q: the new secret has the same hash as an existing key", name)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = noActiveKey(name)
			}
			return err
		}
		out, err = scanAPIKey(tx.QueryRowContext(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE name = ?`, name))
		return err
	})
	if err != nil {
		return nil, wrap("rotate api key", err)
	}
	return out, nil
}

// RecordAPIKeyUse sets the last_used_at of each named key to its use's time unless it
// is later already, in one transaction. Unknown and revoked names are skipped. Errors
// are wrapped driver errors; then nothing is recorded.
func (s *Store) RecordAPIKeyUse(ctx context.Context, uses []chargenet.KeyUse) error {
	if len(uses) == 0 {
		return nil
	}
	return wrap("record api key use", s.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `UPDATE api_keys SET last_used_at = ? WHERE name = ? AND revoked_at IS NULL `+
			`AND (last_used_at IS NULL OR last_used_at < ?)`)
		if err != nil {
			return err
		}
		defer func() { _ = st.Close() }()
		for _, u := range uses {
			at := formatTime(u.At)
			if _, err := st.ExecContext(ctx, at, u.Name, at); err != nil {
				return err
			}
		}
		return nil
	}))
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
