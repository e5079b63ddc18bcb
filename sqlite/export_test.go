package sqlite

import (
	"context"
	"testing"
)

// PragmaForTest returns the value of a pragma as the store's write connection and one
// of its read connections see it.
func (s *Store) PragmaForTest(ctx context.Context, name string) (write, read string, err error) {
	if err = s.write.QueryRowContext(ctx, "PRAGMA "+name).Scan(&write); err != nil {
		return "", "", err
	}
	err = s.read.QueryRowContext(ctx, "PRAGMA "+name).Scan(&read)
	return write, read, err
}

// CountForTest returns the number of rows of a table.
func (s *Store) CountForTest(ctx context.Context, table string) (n int, err error) {
	err = s.write.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}

// ClearLocationDocsForTest removes the stored JSON of every location, as a database of
// an earlier version has none.
func (s *Store) ClearLocationDocsForTest(ctx context.Context) error {
	_, err := s.write.ExecContext(ctx, `UPDATE locations SET doc = NULL`)
	return err
}

// ClearEVSEDocsForTest removes the stored JSON of every EVSE.
func (s *Store) ClearEVSEDocsForTest(ctx context.Context) error {
	_, err := s.write.ExecContext(ctx, `UPDATE evses SET doc = NULL`)
	return err
}

// ChangeEVSEWithoutDocForTest changes an EVSE the way a program that does not keep
// docs would: status and version, doc untouched.
func (s *Store) ChangeEVSEWithoutDocForTest(ctx context.Context, uid int64, status string) error {
	_, err := s.write.ExecContext(ctx, `UPDATE evses SET status = ?, version = version + 1 WHERE uid = ?`, status, uid)
	return err
}

// ReadCacheStatsForTest returns the read cache's hits and misses so far, and whether the
// store has a read cache.
func (s *Store) ReadCacheStatsForTest() (hits, misses uint64, on bool) {
	if s.cache == nil {
		return 0, 0, false
	}
	return s.cache.hits.Load(), s.cache.misses.Load(), true
}

// ReadCacheProbeRefsForTest returns how many open stores of this process share the
// store's WAL-index probe.
func (s *Store) ReadCacheProbeRefsForTest() int {
	probes.mu.Lock()
	defer probes.mu.Unlock()
	return s.cache.probe.refs
}

// SetChangeLogKeepForTest makes the stores keep n cache_changes rows until the test ends.
func SetChangeLogKeepForTest(tb testing.TB, n int64) {
	old := changeLogKeep
	changeLogKeep = n
	tb.Cleanup(func() { changeLogKeep = old })
}
