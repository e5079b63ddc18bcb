package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
)

// ListeningForTest reports whether the store's listener of deliveries (see startListeners) listens.
func (s *Store) ListeningForTest() bool { return s.listening.Load() }

// ExecForTest runs sql on a pooled connection.
func (s *Store) ExecForTest(ctx context.Context, sql string) (int64, error) {
	tag, err := s.pool.Exec(ctx, sql)
	return tag.RowsAffected(), err
}

// MigrateBeforeForTest applies to the database at url the embedded migrations whose
// names sort before before, recorded as Migrate records them, and then runs stmts: a
// database of an earlier version, for testing the migrations that follow.
func MigrateBeforeForTest(ctx context.Context, url, before string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, `CREATE TABLE migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		base := path.Base(name)
		if base >= before {
			break
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, string(body)); err != nil {
			return fmt.Errorf("%s: %w", base, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO migrations (name) VALUES ($1)`, base); err != nil {
			return err
		}
	}
	for _, st := range stmts {
		if _, err := conn.Exec(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// LocationPageForTest returns the statement and arguments ListLocationDocs sends for
// seek.
func LocationPageForTest(seek chargenet.Seek[string]) (string, []any) {
	return filteredSeek(selectLocationDocs, "l.deleted_at IS NULL", `l.id COLLATE "C"`, nil, seek)
}
