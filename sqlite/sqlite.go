// Package sqlite is the embedded store: chargenet.Store over SQLite through the pure-Go
// modernc.org/sqlite driver, in WAL mode with synchronous=FULL, so an acknowledged write
// survives a crash of the process or the machine.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/chargenet/chargenet"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a chargenet.Store over one SQLite database file. Writes go through a single
// connection (SQLite has one writer; queuing in Go avoids SQLITE_BUSY), reads through a
// pool that WAL lets run beside the writer.
type Store struct {
	write *sql.DB
	read  *sql.DB
	stmts statements
}

var _ chargenet.Store = (*Store)(nil)

// Open opens (creating it and its directory if needed) the database at path and applies
// the pending migrations. path ":memory:" opens a private in-memory database, for tests.
func Open(ctx context.Context, path string) (*Store, error) {
	pragmas := "_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)"
	var s Store
	var err error
	if path == ":memory:" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		dsn := "file:mem-" + hex.EncodeToString(b[:]) + "?mode=memory&cache=shared&" + pragmas + "&_txlock=immediate"
		if s.write, err = sql.Open("sqlite", dsn); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		s.write.SetMaxOpenConns(1)
		s.write.SetConnMaxIdleTime(0)
		s.write.SetConnMaxLifetime(0)
		s.read = s.write
	} else {
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("sqlite: creating %s: %w", dir, err)
			}
		}
		base := "file:" + path + "?" + pragmas + "&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
		if s.write, err = sql.Open("sqlite", base+"&_txlock=immediate"); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		s.write.SetMaxOpenConns(1)
		if s.read, err = sql.Open("sqlite", base+"&_pragma=query_only(1)"); err != nil {
			s.write.Close()
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		s.read.SetMaxOpenConns(8)
		s.read.SetMaxIdleConns(8)
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return &s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.stmts.close()
	err := s.write.Close()
	if s.read != s.write {
		err = errors.Join(err, s.read.Close())
	}
	return err
}

// migrate applies, in name order, each embedded migration not yet recorded in the
// migrations table, each in its own transaction.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: creating the migrations table: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := s.applyMigration(ctx, name); err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", name, err)
		}
	}
	return nil
}

func (s *Store) applyMigration(ctx context.Context, name string) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	body, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`, name, formatTime(time.Now())); err != nil {
		return err
	}
	return tx.Commit()
}

// Migrations returns the names of the applied migrations, in order.
func (s *Store) Migrations(ctx context.Context) ([]string, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT name FROM migrations ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Ping checks that the database answers; it returns an error wrapping
// chargenet.ErrUnavailable if it does not.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return chargenet.Errorf(chargenet.ErrUnavailable, chargenet.CodeUnavailable, "", "database unavailable: %v", err)
	}
	return nil
}

const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// formatTime stores times as fixed-width UTC text, so they sort and round-trip exactly.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// constraint reports whether err is an SQLite constraint violation, and its message.
func constraint(err error) (string, bool) {
	var se *sqlitedrv.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
		return se.Error(), true
	}
	return "", false
}

// wrap marks driver errors as the store's; domain errors and context errors pass as
// they are.
func wrap(err error) error {
	var de *chargenet.Error
	if err == nil || errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqlite: %w", err)
}
