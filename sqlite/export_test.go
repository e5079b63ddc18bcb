package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
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

// ReadCacheStatsForTest returns the read cache's hits and misses so far, and whether the
// store has a read cache.
func (s *Store) ReadCacheStatsForTest() (hits, misses uint64, on bool) {
	if s.cache == nil {
		return 0, 0, false
	}
	return s.cache.hits.Load(), s.cache.misses.Load(), true
}

// ReadCachePagesFilledForTest returns how many location pages the read cache served
// after encoding only the locations a commit changed.
func (s *Store) ReadCachePagesFilledForTest() uint64 { return s.cache.filled.Load() }

// ReadCacheProbeRefsForTest returns how many open stores of this process share the
// store's WAL-index probe.
func (s *Store) ReadCacheProbeRefsForTest() int {
	probes.mu.Lock()
	defer probes.mu.Unlock()
	return s.cache.probe.refs
}

// GateCacheSyncForTest makes every sync of the store's read cache wait, before it reads
// the change positions, until gate is closed, and returns the number of syncs begun.
// Call it before the store is read concurrently.
func (s *Store) GateCacheSyncForTest(gate <-chan struct{}) *atomic.Int64 {
	read, n := s.cache.changes, new(atomic.Int64)
	s.cache.changes = func(ctx context.Context, evsesAfter, locationsAfter int64) (cacheChanges, error) {
		n.Add(1)
		<-gate
		return read(ctx, evsesAfter, locationsAfter)
	}
	return n
}

// SetCacheSyncLimitForTest makes a read-cache sync drop EVSEs one by one only up to n
// of them until the test ends.
func SetCacheSyncLimitForTest(tb testing.TB, n int) {
	old := syncLimit
	syncLimit = n
	tb.Cleanup(func() { syncLimit = old })
}

// MigrateBeforeForTest creates the database at path with the embedded migrations whose
// names sort before before, recorded as Migrate records them, and then runs stmts: a
// database of an earlier version, for testing the migrations that follow.
func MigrateBeforeForTest(ctx context.Context, path, before string, stmts ...string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?"+pragmas(true))
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, `CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return err
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		base := filepath.Base(name)
		if base >= before {
			break
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("%s: %w", base, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`, base, formatTime(time.Now())); err != nil {
			return err
		}
	}
	for _, st := range stmts {
		if _, err := db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// RecordEventsForTest logs events in a write transaction of their own, as a change
// that produced them would.
func (s *Store) RecordEventsForTest(ctx context.Context, events ...chargenet.Event) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := s.recordEvents(ctx, tx, events...)
		return err
	})
}
