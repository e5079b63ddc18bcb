package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
	sqlite3 "modernc.org/sqlite/lib"
)

// IdempotentAnswer returns the answer kept for owner's key less than
// chargenet.IdempotencyTTL before now; an ErrNotFound *chargenet.Error otherwise.
func (s *Store) IdempotentAnswer(ctx context.Context, owner, key string, now time.Time) (*chargenet.IdempotentAnswer, error) {
	var (
		a           chargenet.IdempotentAnswer
		fingerprint []byte
		created     string
	)
	err := s.read.QueryRowContext(ctx, `SELECT fingerprint, answer, created_at FROM idempotency_keys `+
		`WHERE owner = ? AND key = ? AND created_at > ?`, owner, key, formatTime(now.Add(-chargenet.IdempotencyTTL))).
		Scan(&fingerprint, &a.Answer, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "Idempotency-Key", "no answer kept for Idempotency-Key %q", key)
	}
	if err != nil {
		return nil, wrap("idempotent answer", err)
	}
	copy(a.Fingerprint[:], fingerprint)
	if a.CreatedAt, err = parseTime(created); err != nil {
		return nil, wrap("idempotent answer", err)
	}
	return &a, nil
}

// expiredAnswersPerWrite bounds how many expired idempotency answers a write deletes,
// so that the table stays small without a long delete.
const expiredAnswersPerWrite = 100

// claimKey makes room for idem's answer in tx, before anything is written: it deletes a
// few expired answers (this key's first) and refuses a key whose answer has not expired
// (chargenet.IdempotencyKeyInUse). A nil idem does nothing.
func claimKey(ctx context.Context, tx *sql.Tx, idem *chargenet.Idempotency, now time.Time) error {
	if idem == nil {
		return nil
	}
	cutoff := formatTime(now.Add(-chargenet.IdempotencyTTL))
	if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE owner = ? AND key = ? AND created_at <= ?`, idem.Owner, idem.Key, cutoff); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE (owner, key) IN `+
		`(SELECT owner, key FROM idempotency_keys WHERE created_at <= ? ORDER BY created_at LIMIT ?)`, cutoff, expiredAnswersPerWrite); err != nil {
		return err
	}
	var taken bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM idempotency_keys WHERE owner = ? AND key = ?)`, idem.Owner, idem.Key).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return chargenet.IdempotencyKeyInUse(idem.Key)
	}
	return nil
}

// keepAnswer stores idem's answer for created in tx (after claimKey). A nil idem does
// nothing.
func keepAnswer(ctx context.Context, tx *sql.Tx, idem *chargenet.Idempotency, created any, now time.Time) error {
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (owner, key, fingerprint, answer, created_at) VALUES (?, ?, ?, ?, ?)`,
		idem.Owner, idem.Key, idem.Fingerprint[:], answer, formatTime(now)); err != nil {
		if constraintCode(err) == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
			return chargenet.IdempotencyKeyInUse(idem.Key)
		}
		return err
	}
	return nil
}
