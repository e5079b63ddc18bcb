package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	sqlitedrv "modernc.org/sqlite"
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

// ReadCacheReencodedForTest returns how many locations of cached pages the read cache's
// syncs encoded again.
func (s *Store) ReadCacheReencodedForTest() uint64 { return s.cache.reencoded.Load() }

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

// OpenMemoryCopyForTest opens a store as Open(ctx, ":memory:") does, on a new in-memory
// database that starts as a copy of the database file at src (SQLite's online backup)
// rather than empty, so that Open finds the migrations src has applied.
func OpenMemoryCopyForTest(ctx context.Context, src string, opts ...Option) (*Store, error) {
	return open(ctx, ":memory:", func(ctx context.Context, db *sql.DB) error {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		return conn.Raw(func(dc any) error {
			r, ok := dc.(interface {
				NewRestore(srcURI string) (*sqlitedrv.Backup, error)
			})
			if !ok {
				return fmt.Errorf("restoring %s: driver connection %T has no NewRestore", src, dc)
			}
			uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(src) + "?mode=ro"
			b, err := r.NewRestore(uri)
			if err != nil {
				return fmt.Errorf("restoring %s: %w", src, err)
			}
			_, err = b.Step(-1)
			return errors.Join(err, b.Finish())
		})
	}, opts)
}

// SerializeForTest returns the image of the store's database (sqlite3_serialize): for
// an in-memory database, the file a backup of it to disk would write.
func (s *Store) SerializeForTest(ctx context.Context) ([]byte, error) {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	var image []byte
	err = conn.Raw(func(dc any) error {
		sr, ok := dc.(interface{ Serialize() ([]byte, error) })
		if !ok {
			return fmt.Errorf("driver connection %T has no Serialize", dc)
		}
		image, err = sr.Serialize()
		return err
	})
	return image, err
}

// SchemaForTest returns every entry of the database's schema table as "type name
// tbl_name: sql", in name order.
func (s *Store) SchemaForTest(ctx context.Context) ([]string, error) {
	rows, err := s.write.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var typ, name, table, text string
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			return nil, err
		}
		out = append(out, typ+" "+name+" "+table+": "+text)
	}
	return out, rows.Err()
}
