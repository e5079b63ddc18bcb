package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Backup writes a consistent copy of the database at path to out while other
// connections and processes (a running `chargenet serve`) keep reading and writing it.
// The copy is made with SQLite's VACUUM INTO inside one read transaction, so it is the
// database as of one instant: it holds every transaction committed before the copy
// started and none of those committed after, and it is compacted. The copy is written
// to a temporary file beside out, synced, checked with PRAGMA integrity_check and only
// then renamed to out, so out is either a complete, checked backup or absent.
//
// Errors: out already exists; the database cannot be opened or read (a wrapped driver
// error); the integrity check of the copy reports problems (they are listed, and the
// copy is removed).
func Backup(ctx context.Context, path, out string) error {
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("sqlite: backup: %s already exists; choose a new file", out)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	tmp := out + ".partial"
	_ = os.Remove(tmp) // left by an interrupted backup
	defer func() { _ = os.Remove(tmp) }()
	db, err := sql.Open("sqlite", uri(path)+"?"+pragmas(false))
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return wrap("backup: VACUUM INTO", err)
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if err := IntegrityCheck(ctx, tmp); err != nil {
		return fmt.Errorf("sqlite: backup: the copy fails the check: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	return syncFile(filepath.Dir(out))
}

// IntegrityCheck runs PRAGMA integrity_check on the database file at path, opened read
// only. It returns nil when SQLite answers "ok", otherwise an error listing the
// problems found (or the driver's error).
func IntegrityCheck(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", uri(path)+"?mode=ro")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return wrap("integrity check", err)
	}
	defer func() { _ = rows.Close() }()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return wrap("integrity check", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return wrap("integrity check", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity_check: %s", strings.Join(problems, "; "))
	}
	return nil
}

// uri returns path as a SQLite file: URI, its %, ? and # escaped.
func uri(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
}

// syncFile flushes a file or directory to stable storage.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
