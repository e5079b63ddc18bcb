// Package sqlite is the embedded store: chargenet.Store over one SQLite database through
// the pure-Go driver modernc.org/sqlite.
//
// The database runs in WAL mode with synchronous=FULL, so a write the Store has
// acknowledged survives a crash of the process or of the machine. Writes go through a
// single connection, in transactions begun with BEGIN IMMEDIATE: SQLite has one writer,
// and queuing writers in Go instead of in SQLite avoids SQLITE_BUSY. Reads go through a
// pool of read-only connections that WAL lets run beside the writer; each read is one
// SQL statement, so it sees one consistent snapshot.
//
// Times are stored as fixed-width RFC 3339 text in UTC with nanoseconds, so they sort
// as text and round-trip exactly. The times the contract shows of EVSEs, connectors and
// locations are written to the microsecond, and read so (chargenet.Precision).
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
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/groupcommit"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// busyTimeout is how long a connection waits for a lock held by another process (for
// example `chargenet import` beside a running server) before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Store is a chargenet.Store over one SQLite database. Create it with Open; it is safe
// for concurrent use.
type Store struct {
	hooks *chargenet.Hooks // told of commits and queued deliveries (WithHooks)

	write *sql.DB // one connection; every write goes through it
	read  *sql.DB // query_only connections; the same *sql.DB as write for ":memory:"

	stmts []*sql.Stmt // every prepared statement, for Close

	// Read statements, prepared on read.
	evse         *sql.Stmt
	location     *sql.Stmt
	apiKeyByHash *sql.Stmt
	changes      *sql.Stmt // the change positions, for the read cache
	// reads and writes keep the statements whose text depends on the call: keyset
	// reads, change lists, PATCHes of some columns, batches of events.
	reads, writes statements

	// Write statements, prepared on write (its only connection, so a transaction
	// reuses them through Tx.StmtContext without preparing again).
	evseForUpdate   *sql.Stmt
	setVersion      *sql.Stmt
	insertLocation  *sql.Stmt
	insertEVSE      *sql.Stmt
	insertConnector *sql.Stmt
	insertAPIKey    *sql.Stmt
	apiKeyNameTaken *sql.Stmt
	revokeAPIKey    *sql.Stmt
	insertSetting   *sql.Stmt
	selectSetting   *sql.Stmt
	logEnd          *sql.Stmt
	fanOut          *sql.Stmt
	g               groupStatements

	// cache keeps EVSE and location JSON while the database is unchanged (see
	// readCache); nil for an in-memory database.
	cache *readCache

	// The single writer of UpdateConnector and ApplyStatusNotification (see group.go).
	group *groupcommit.Queue
	// known are the EVSEs as the last group left them, for the next (see groupCache).
	known groupCache

	closeOnce sync.Once
	closeErr  error
}

var _ chargenet.Store = (*Store)(nil)

// Option is an option of Open.
type Option func(*options)

type options struct {
	hooks      *chargenet.Hooks
	wait       time.Duration
	waitTarget int
}

// WithHooks makes the store call the functions of hooks: after each commit
// (Hooks.OnCommit), and after each commit that queued a webhook delivery or an OCPI
// push (Hooks.OnEvents). Without it the store calls nothing.
func WithHooks(hooks *chargenet.Hooks) Option { return func(o *options) { o.hooks = hooks } }

// WithCommitWait makes a group of PATCHes and status notifications that arrive as a
// stream, each alone, wait up to d for more before it commits, so that several share
// one commit, and commit as soon as target of them are together (0: 8, the group
// commit's default); a client sending one change after another is not held
// (internal/groupcommit: Queue.SetWait). Without it, or with d 0, a group never waits.
func WithCommitWait(d time.Duration, target int) Option {
	return func(o *options) { o.wait, o.waitTarget = d, target }
}

// Open opens the database at path, creating the file and its parent directory if they
// do not exist, applies the pending migrations (see Migrate) and prepares the store's
// statements. path ":memory:" opens a new, private in-memory database that lives until
// Close; it uses a single connection for reads and writes. Errors are wrapped driver or
// file system errors; the store is closed again when Open fails.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	return open(ctx, path, nil, opts)
}

// open is Open, with fill, if not nil, run on the write connection of a new in-memory
// database before it is migrated: tests start their databases from a prepared copy
// (export_test.go).
func open(ctx context.Context, path string, fill func(context.Context, *sql.DB) error, opts []Option) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: open: empty database path")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.hooks == nil {
		o.hooks = new(chargenet.Hooks)
	}
	s := &Store{hooks: o.hooks}
	if path == ":memory:" {
		// A uniquely named shared-cache memory database, reached through one
		// connection that is never closed while the store is open: every statement
		// sees the same database, and two stores opened this way are independent.
		var b [8]byte
		_, _ = rand.Read(b[:])
		db, err := sql.Open("sqlite", "file:chargenet-"+hex.EncodeToString(b[:])+"?mode=memory&cache=shared&"+
			pragmas(false)+"&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		s.write, s.read = db, db
		if fill != nil {
			if err := fill(ctx, db); err != nil {
				_ = db.Close()
				return nil, fmt.Errorf("sqlite: open: %w", err)
			}
		}
	} else {
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("sqlite: open: creating directory: %w", err)
			}
		}
		// SQLite URI: the path's %, ? and # must be escaped.
		base := "file:" + strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path) + "?" + pragmas(true)
		var err error
		if s.write, err = sql.Open("sqlite", base+"&_txlock=immediate"); err != nil {
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.write.SetMaxOpenConns(1)
		s.write.SetMaxIdleConns(1)
		s.write.SetConnMaxLifetime(0)
		s.write.SetConnMaxIdleTime(0)
		if s.read, err = sql.Open("sqlite", base+"&_pragma=query_only(1)"); err != nil {
			_ = s.write.Close()
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		n := max(4, 2*runtime.GOMAXPROCS(0))
		s.read.SetMaxOpenConns(n)
		s.read.SetMaxIdleConns(n)
	}
	if err := s.migrateWhenFree(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if path != ":memory:" {
		// Without the probe (a system without mmap) the store works uncached.
		if probe, err := openWALProbe(path); err == nil {
			s.cache = newReadCache(probe, DefaultReadCacheSize, s.readChanges, s.encodeLocations)
		}
	}
	s.group = groupcommit.Start(groupStore{s}, groupcommit.Config{MaxGroup: maxGroup, WaitTarget: o.waitTarget,
		Timeout: busyTimeout + 5*time.Second})
	s.group.SetWait(o.wait)
	return s, nil
}

// SetReadCacheSize bounds the memory the store's read cache may hold, in bytes of
// cached JSON (default DefaultReadCacheSize); 0 turns the cache off. It empties the
// cache. The cache keeps the answers of EVSEDoc and ListLocationDocs for as long as
// nothing is committed to the database, by any connection or process; an in-memory
// database has no cache.
func (s *Store) SetReadCacheSize(bytes int) {
	if s.cache != nil {
		s.cache.setLimit(max(bytes, 0))
	}
}

// pragmas returns the DSN parameters that configure every pooled connection. The
// driver runs them on each new connection, so none is lost when the pool reconnects.
func pragmas(file bool) string {
	p := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", busyTimeout.Milliseconds()),
		"_pragma=foreign_keys(1)",
		// FULL, not NORMAL: in WAL mode NORMAL may lose the last acknowledged
		// transactions on power loss; FULL syncs the WAL on every commit.
		"_pragma=synchronous(FULL)",
	}
	if file {
		p = append(p, "_pragma=journal_mode(WAL)")
	}
	return strings.Join(p, "&")
}

// Close closes the database. Calling it again does nothing and returns the first
// call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.group != nil {
			s.group.Close() // the group in progress is committed and answered first
		}
		var errs []error
		for _, st := range s.stmts {
			errs = append(errs, st.Close())
		}
		errs = append(errs, s.reads.close(), s.writes.close())
		if s.read != nil && s.read != s.write {
			errs = append(errs, s.read.Close())
		}
		if s.write != nil {
			errs = append(errs, s.write.Close())
		}
		if s.cache != nil { // after the connections: closing it drops the process's locks
			errs = append(errs, s.cache.probe.close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
	})
	return s.closeErr
}

// migrateWhenFree runs Migrate, trying again for up to busyTimeout while another
// process holds the database. Two processes opening a new file at once both switch it
// to WAL and create the schema; SQLite answers one of them SQLITE_BUSY at once, without
// waiting on the busy timeout, when their locks would otherwise deadlock.
func (s *Store) migrateWhenFree(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := s.Migrate(ctx)
		var se *sqlitedrv.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// Migration is a schema migration recorded in the migrations table.
type Migration struct {
	Name      string // file name, as in "0001_init.sql"
	AppliedAt time.Time
}

// Migrate applies, in file name order, every embedded migration that the migrations
// table does not record yet, each in its own transaction together with its record.
// Applied migrations are skipped, so calling Migrate again is a no-op; two processes
// migrating at once are serialised by SQLite's write lock. Open calls it. Errors are
// wrapped driver errors naming the migration.
func (s *Store) Migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx,
		`CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return wrap("creating the migrations table", err)
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := s.applyMigration(ctx, name); err != nil {
			return wrap("migration "+filepath.Base(name), err)
		}
	}
	return nil
}

func (s *Store) applyMigration(ctx context.Context, name string) error {
	base := filepath.Base(name)
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM migrations WHERE name = ?`, base).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	body, err := migrationFiles.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`,
		base, formatTime(time.Now())); err != nil {
		return err
	}
	return tx.Commit()
}

// Migrations returns the applied migrations in name order. Errors are wrapped driver
// errors.
func (s *Store) Migrations(ctx context.Context) ([]Migration, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT name, applied_at FROM migrations ORDER BY name`)
	if err != nil {
		return nil, wrap("migrations", err)
	}
	defer func() { _ = rows.Close() }()
	var out []Migration
	for rows.Next() {
		var m Migration
		var at string
		if err := rows.Scan(&m.Name, &at); err != nil {
			return nil, wrap("migrations", err)
		}
		if m.AppliedAt, err = parseTime(at); err != nil {
			return nil, wrap("migrations", err)
		}
		out = append(out, m)
	}
	return out, wrap("migrations", rows.Err())
}

// Ping checks that the database answers a query. It returns an error wrapping
// chargenet.ErrUnavailable (and the cause) if it does not.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("sqlite: ping: %w: %w", chargenet.ErrUnavailable, err)
	}
	return nil
}

// prepare prepares the statements of the hot paths.
func (s *Store) prepare(ctx context.Context) error {
	var err error
	p := func(db *sql.DB, query string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		if st, err = db.PrepareContext(ctx, query); err != nil {
			err = fmt.Errorf("sqlite: preparing %q: %w", query, err)
			return nil
		}
		s.stmts = append(s.stmts, st)
		return st
	}
	s.reads.db, s.writes.db = s.read, s.write
	s.evse = p(s.read, evseByUIDQuery)
	s.location = p(s.read, locationByIDQuery)
	s.changes = p(s.read, changesQuery)
	s.apiKeyByHash = p(s.read, `SELECT `+apiKeyColumns+` FROM api_keys WHERE (hash = ? OR previous_hash = ?) `+
		`AND revoked_at IS NULL`)

	s.evseForUpdate = p(s.write, evseByUIDQuery)
	s.setVersion = p(s.write, `UPDATE evses SET version = ?, last_updated = ? WHERE uid = ?`)
	s.insertLocation = p(s.write, `INSERT INTO locations (`+locationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.insertEVSE = p(s.write, `INSERT INTO evses (`+evseColumns+`) VALUES (?, ?, ?, ?, ?, ?, 1)`)
	s.insertConnector = p(s.write, `INSERT INTO connectors (`+connectorColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.insertAPIKey = p(s.write, `INSERT INTO api_keys (name, hash, scopes, created_at, expires_at, rate_requests, `+
		`rate_window_s) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	s.apiKeyNameTaken = p(s.write, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE name = ?)`)
	s.revokeAPIKey = p(s.write, `UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL`)
	s.insertSetting = p(s.write, `INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`)
	s.selectSetting = p(s.write, `SELECT value FROM settings WHERE name = ?`)
	s.logEnd = p(s.write, logEndQuery)
	s.fanOut = p(s.write, fanOutQuery)
	s.g = groupStatements{chargeboxEVSEs: p(s.write, chargeboxEVSEsQuery), statusTimes: p(s.write, statusTimesQuery),
		setStatus: p(s.write, setStatusQuery), setConnectorStatus: p(s.write, setConnectorStatusQuery),
		locationState: p(s.write, locationStateQuery), setLocation: p(s.write, setLocationQuery),
		writeState: p(s.write, writeStateQuery)}
	if err != nil {
		return err
	}
	return s.warm(ctx)
}

// warm prepares every variant of the statements kept in reads and writes: a statement
// prepared later on the writer connection would wait for the transaction that holds it.
func (s *Store) warm(ctx context.Context) error {
	var queries []string
	for _, backward := range []bool{false, true} {
		for _, mode := range []keyMode{noKey, pastKey, atKey} {
			queries = append(queries, listEVSEsQuery(backward, mode), listLocationsQuery(backward, mode))
		}
	}
	for _, hasPos := range []bool{false, true} {
		for _, since := range []bool{false, true} {
			queries = append(queries, listEVSEChangesQuery(hasPos, since), listLocationChangesQuery(hasPos, since))
		}
	}
	for _, q := range queries {
		if _, err := s.reads.get(ctx, q); err != nil {
			return err
		}
	}
	queries = queries[:0]
	for mask := 1; mask < 1<<patchFields; mask++ {
		queries = append(queries, patchQuery(mask))
	}
	for _, n := range insertBatches {
		queries = append(queries, insertEventsQuery(n))
	}
	for _, q := range queries {
		if _, err := s.writes.get(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// seekRows runs the keyset read that query returns for seek's direction and key mode,
// with the key as first argument when there is one and the limit last.
func seekRows[K int64 | string](ctx context.Context, c *statements, query func(backward bool, mode keyMode) string, seek chargenet.Seek[K]) (*sql.Rows, error) {
	st, err := c.get(ctx, query(seek.Backward, keyModeOf(seek)))
	if err != nil {
		return nil, err
	}
	if seek.HasKey {
		return st.QueryContext(ctx, seek.Key, seek.Limit)
	}
	return st.QueryContext(ctx, seek.Limit)
}

// timeLayout is RFC 3339 with a fixed nine-digit fraction: in UTC ("Z") the text sorts
// like the time.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// parseStamp is parseTime for the times the contract shows of EVSEs, connectors and
// locations: to the microsecond (chargenet.Precision), as the service keeps them; rows
// written before, or by another program, may hold nanoseconds.
func parseStamp(s string) (time.Time, error) {
	t, err := parseTime(s)
	return t.Truncate(chargenet.Precision), err
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

// nullString returns s, or NULL when s is empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// querier is what the reads need of a database, a connection or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}
