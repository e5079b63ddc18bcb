package postgres

import "context"

// ListeningForTest reports whether the store's listener (see OnEvents) listens.
func (s *Store) ListeningForTest() bool { return s.listening.Load() }

// ExecForTest runs sql on a pooled connection.
func (s *Store) ExecForTest(ctx context.Context, sql string) (int64, error) {
	tag, err := s.pool.Exec(ctx, sql)
	return tag.RowsAffected(), err
}
