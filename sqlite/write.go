package sqlite

import (
	"context"
	"database/sql"
)

// writeTx runs fn in a write transaction on the writer connection and commits it.
func (s *Store) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
