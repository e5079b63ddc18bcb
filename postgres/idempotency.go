package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
)

// pruneBatch is the most expired idempotency answers one write deletes: every write
// that keeps an answer removes some expired ones, so that they do not accumulate, at a
// bounded cost per write.
const pruneBatch = 100

const (
	// claimKeyQuery inserts the row of an idempotency key, or takes over the row of an
	// expired answer (kept at or before $5); its parameters are owner, key, fingerprint,
	// the time it is kept and the expiry bound. A key whose row another transaction is
	// writing waits for that transaction; no row is affected when the key has an
	// unexpired answer.
	claimKeyQuery = `INSERT INTO idempotency_keys (owner, key, fingerprint, answer, created_at) ` +
		`VALUES ($1, $2, $3, '', $4) ON CONFLICT (owner, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, ` +
		`answer = '', created_at = EXCLUDED.created_at WHERE idempotency_keys.created_at <= $5`
	// pruneKeysQuery deletes up to $2 expired answers (kept at or before $1), oldest
	// first, passing over those another transaction holds.
	pruneKeysQuery = `DELETE FROM idempotency_keys WHERE (owner, key) IN (SELECT owner, key FROM idempotency_keys ` +
		`WHERE created_at <= $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

// expiry returns the bound at or before which an answer kept is expired at now.
func expiry(now time.Time) time.Time { return chargenet.Stamp(now.Add(-chargenet.IdempotencyTTL)) }

// claimKey reserves idem's key for the caller's transaction tx, as kept at now: it
// inserts the key's row, or takes over the row of an expired answer. It does nothing
// when idem is nil. The primary key makes a concurrent write with the same key wait for
// tx, and then fail: so of several requests with one key, one writes and the others get
// chargenet.IdempotencyKeyInUse, whatever they create. keepAnswer completes the row.
//
// Errors: chargenet.IdempotencyKeyInUse when the key has an unexpired answer; driver
// errors, unwrapped.
func claimKey(ctx context.Context, tx pgx.Tx, idem *chargenet.Idempotency, now time.Time) error {
	if idem == nil {
		return nil
	}
	tag, err := tx.Exec(ctx, claimKeyQuery, idem.Owner, idem.Key, idem.Fingerprint[:], chargenet.Stamp(now), expiry(now))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return chargenet.IdempotencyKeyInUse(idem.Key)
	}
	return nil
}

// keepAnswer stores in the row claimKey inserted the answer idem.Answer makes of
// created, the object as committed, and deletes up to pruneBatch expired answers of any
// key. It does nothing when idem is nil. Errors are Answer's and the driver's,
// unwrapped.
func keepAnswer(ctx context.Context, tx pgx.Tx, idem *chargenet.Idempotency, created any, now time.Time) error {
	if idem == nil {
		return nil
	}
	answer, err := idem.Answer(created)
	if err != nil {
		return err
	}
	if answer == nil {
		answer = []byte{} // NOT NULL
	}
	if _, err := tx.Exec(ctx, `UPDATE idempotency_keys SET answer = $3 WHERE owner = $1 AND key = $2`,
		idem.Owner, idem.Key, answer); err != nil {
		return err
	}
	// Last, so that the rows it locks are held only until the commit that follows.
	_, err = tx.Exec(ctx, pruneKeysQuery, expiry(now), pruneBatch)
	return err
}

// IdempotentAnswer returns the answer kept for owner's key when it was kept less than
// chargenet.IdempotencyTTL before now, with the time it was kept (UTC, to the
// microsecond) as CreatedAt. Otherwise an ErrNotFound *chargenet.Error with Param
// "Idempotency-Key". Other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) IdempotentAnswer(ctx context.Context, owner, key string, now time.Time) (*chargenet.IdempotentAnswer, error) {
	var (
		a           chargenet.IdempotentAnswer
		fingerprint []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT fingerprint, answer, created_at FROM idempotency_keys `+
		`WHERE owner = $1 AND key = $2 AND created_at > $3`, owner, key, expiry(now)).
		Scan(&fingerprint, &a.Answer, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "Idempotency-Key",
			"no answer is kept for Idempotency-Key %q", key)
	}
	if err != nil {
		return nil, s.wrap("idempotent answer", err)
	}
	copy(a.Fingerprint[:], fingerprint)
	a.CreatedAt = a.CreatedAt.UTC()
	return &a, nil
}
