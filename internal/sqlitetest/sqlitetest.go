// Package sqlitetest hands tests new SQLite database files quickly. Each starts as a copy
// of one database file that sqlite.Open created and migrated once per test process:
// under the race detector, migrating a new database takes seconds, copying one takes a
// millisecond. The copy holds what Open makes of a new file, so a test sees the same
// database either way (TestMigratedCopies in package sqlite checks it); only the times
// the migrations record are older. A test of Open or of the migrations themselves
// opens a new path with sqlite.Open instead.
package sqlitetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chargenet/chargenet/sqlite"
)

var migrated struct {
	once sync.Once
	file []byte // a database file as Open and Close leave it: WAL mode, the WAL checkpointed
	err  error
}

// Create writes a new database file at path, in an existing directory, holding what
// sqlite.Open makes of a new file: every migration applied and nothing else. It fails
// if path exists. Errors are file system errors, or those of Open and Close making the
// first database of the process.
func Create(path string) error {
	migrated.once.Do(func() { migrated.file, migrated.err = makeMigrated() })
	if migrated.err != nil {
		return fmt.Errorf("sqlitetest: making the migrated database: %w", migrated.err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("sqlitetest: %w", err)
	}
	_, err = f.Write(migrated.file)
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("sqlitetest: %w", err)
	}
	return nil
}

// NewFile returns the path of a new database file that Create wrote in a temporary
// directory of tb, failing tb if it cannot.
func NewFile(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "chargenet.db")
	if err := Create(path); err != nil {
		tb.Fatal(err)
	}
	return path
}

// makeMigrated returns the content of a database file that Open created and migrated.
func makeMigrated() ([]byte, error) {
	dir, err := os.MkdirTemp("", "chargenet-sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "chargenet.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	// Closing the last connection checkpoints the WAL into the file and deletes it.
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s-wal is left after Close (%v)", path, err)
	}
	return os.ReadFile(path)
}
