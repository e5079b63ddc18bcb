package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// apiKeyColumns are the columns of a key, as scanAPIKey reads them.
const apiKeyColumns = `name, hash, scopes, created_at, expires_at, rate_requests, rate_window_s, last_used_at, ` +
	`previous_hash, previous_until`

// scanAPIKey reads the apiKeyColumns of one row.
func scanAPIKey(row pgx.Row) (*chargenet.APIKey, error) {
	var (
		k                      chargenet.APIKey
		hash, prev             []byte
		scopes                 string
		expires, used, prevEnd pgtype.Timestamptz
		windowS                int64
	)
	if err := row.Scan(&k.Name, &hash, &scopes, &k.CreatedAt, &expires, &k.RateLimit.Requests, &windowS, &used,
		&prev, &prevEnd); err != nil {
		return nil, err
	}
	copy(k.Hash[:], hash)
	copy(k.PreviousHash[:], prev)
	k.Scopes = strings.Fields(scopes)
	k.RateLimit.Window = time.Duration(windowS) * time.Second
	k.CreatedAt = k.CreatedAt.UTC()
	for _, t := range []struct {
		src pgtype.Timestamptz
		dst *time.Time
	}{{expires, &k.ExpiresAt}, {used, &k.LastUsedAt}, {prevEnd, &k.PreviousUntil}} {
		if t.src.Valid {
			*t.dst = t.src.Time.UTC()
		}
	}
	return &k, nil
}

// CreateAPIKey stores a key: its name, hash, scopes, creation time, expiry and rate
// limit. Names are unique among all keys, active or revoked, so a name identifies one
// key for good in logs, events and revocations; hashes are unique too. A name already
// stored is an ErrConflict *chargenet.Error with Code conflict and Param "name";
// otherwise a hash already stored is one with Param "hash". Other errors are wrapped
// driver errors, wrapping chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) CreateAPIKey(ctx context.Context, key chargenet.APIKey) error {
	const op = "create api key"
	tag, err := s.pool.Exec(ctx, `INSERT INTO api_keys (name, hash, scopes, created_at, expires_at, rate_requests, `+
		`rate_window_s) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
		key.Name, key.Hash[:], strings.Join(key.Scopes, " "), key.CreatedAt, nullTime(key.ExpiresAt),
		key.RateLimit.Requests, int64(key.RateLimit.Window/time.Second))
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

func noActiveKey(name string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "name", "no active API key named %q", name)
}

// RevokeAPIKey marks the named key revoked at now; APIKeyByHash no longer finds it by
// any of its secrets. If no active key has this name (none ever had, or it is revoked
// already) it returns an ErrNotFound *chargenet.Error with Code not_found and Param
// "name". Other errors are wrapped driver errors, wrapping chargenet.ErrUnavailable if
// the database cannot be reached.
func (s *Store) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL`, name, now)
	if err != nil {
		return s.wrap("revoke api key", err)
	}
	if tag.RowsAffected() == 0 {
		return noActiveKey(name)
	}
	return nil
}

// APIKeyByHash returns the key, not revoked, whose current or previous secret has this
// hash, expired or not. Otherwise it returns an ErrNotFound *chargenet.Error with Code
// not_found and an empty Param. Other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error) {
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `SELECT `+apiKeyColumns+` FROM api_keys `+
		`WHERE (hash = $1 OR previous_hash = $1) AND revoked_at IS NULL`, hash[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "", "API key not found")
	}
	if err != nil {
		return nil, s.wrap("api key by hash", err)
	}
	return k, nil
}

// ListAPIKeys reads one keyset slice of the keys not revoked, ordered by name byte by
// byte (see chargenet.Seek). Errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) ListAPIKeys(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.APIKey, error) {
	out := []chargenet.APIKey{}
	if seek.Limit <= 0 {
		return out, nil
	}
	q, args := filteredSeek(`SELECT `+apiKeyColumns+` FROM api_keys`, "revoked_at IS NULL", `name COLLATE "C"`, nil, seek)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap("list api keys", err)
	}
	defer rows.Close()
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, s.wrap("list api keys", err)
		}
		out = append(out, *k)
	}
	return out, s.wrap("list api keys", rows.Err())
}

// RotateAPIKey makes r.Hash the named key's secret in one statement: the current
// secret becomes the previous one, accepted until r.PreviousUntil, and a previous
// secret of an earlier rotation is dropped; r.ExpiresAt, when set, becomes the key's
// expiry. It returns the key as committed. An ErrNotFound *chargenet.Error (Param
// "name") when no active key has the name; an ErrConflict (Param "hash") when a key has
// the hash already. Other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) RotateAPIKey(ctx context.Context, name string, r chargenet.KeyRotation) (*chargenet.APIKey, error) {
	var expires pgtype.Timestamptz
	if r.ExpiresAt != nil {
		expires = nullTime(*r.ExpiresAt)
	}
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `UPDATE api_keys SET previous_hash = hash, previous_until = $2, hash = $3, `+
		`expires_at = CASE WHEN $4::boolean THEN $5::timestamptz ELSE expires_at END WHERE name = $1 AND revoked_at IS NULL RETURNING `+apiKeyColumns,
		name, chargenet.Stamp(r.PreviousUntil), r.Hash[:], r.ExpiresAt != nil, expires))
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, noActiveKey(name)
	case errors.As(err, &pe) && pe.Code == "23505":
		return nil, chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "hash", "API key %q: the new secret has the same hash as an existing key", name)
	case err != nil:
		return nil, s.wrap("rotate api key", err)
	}
	return k, nil
}

// RecordAPIKeyUse sets the last_used_at of each named key to its use's time unless it
// is later already, in one statement. Unknown and revoked names are skipped. Errors are
// wrapped driver errors, wrapping chargenet.ErrUnavailable if the database cannot be
// reached; then nothing is recorded.
func (s *Store) RecordAPIKeyUse(ctx context.Context, uses []chargenet.KeyUse) error {
	if len(uses) == 0 {
		return nil
	}
	names, times := make([]string, len(uses)), make([]time.Time, len(uses))
	for i, u := range uses {
		names[i], times[i] = u.Name, chargenet.Stamp(u.At)
	}
	_, err := s.pool.Exec(ctx, `UPDATE api_keys k SET last_used_at = u.at `+
		`FROM unnest($1::text[], $2::timestamptz[]) AS u (name, at) `+
		`WHERE k.name = u.name AND k.revoked_at IS NULL AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, names, times)
	return s.wrap("record api key use", err)
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
