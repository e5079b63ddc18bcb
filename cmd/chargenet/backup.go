package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/chargenet/chargenet/sqlite"
)

// backup is `chargenet backup --database sqlite:PATH OUT`: a consistent copy of the
// SQLite database taken online (sqlite.Backup), checked with PRAGMA integrity_check.
// PostgreSQL has its own tools (pg_dump, pg_basebackup): see docs/operating.md.
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, fs, err := parse("backup", args, getenv, stderr, false, nil)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: backup needs exactly one OUT file", errUsage)
	}
	kind, path, _ := parseDatabase(cfg.Database) // checked by Validate
	if kind != "sqlite" {
		return fmt.Errorf("%w: backup copies SQLite databases; back PostgreSQL up with pg_dump or pg_basebackup", errUsage)
	}
	out := fs.Arg(0)
	start := time.Now()
	if err := sqlite.Backup(ctx, path, out); err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes) in %s; integrity_check: ok\n", path, out, st.Size(),
		time.Since(start).Round(time.Millisecond))
	return nil
}
