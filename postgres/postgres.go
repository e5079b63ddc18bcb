// Package postgres is the server store: chargenet.Store over PostgreSQL through a pgx
// pool, for running several stateless replicas on one database.
//
// Open applies the embedded migrations, once however many replicas start together (an
// advisory lock). Every read sees one snapshot, so an EVSE's Version describes the
// connectors read with it; writers of an EVSE queue on its row lock. Location ids use
// the "C" collation so that both stores order cursors alike. When the database cannot be
// reached, methods return a *chargenet.Error of kind ErrUnavailable promptly (timeouts
// and TCP keepalive, see Options), and the same Store works again once it is back.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/groupcommit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Defaults of Options.
const (
	// DefaultConnectTimeout bounds one connection attempt when neither Options nor the URL
	// (connect_timeout) sets a timeout.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultStatementTimeout is the server-side statement_timeout when neither Options
	// nor the URL sets one.
	DefaultStatementTimeout = 30 * time.Second
)

// DefaultMaxConns is the pool size when neither Options nor the URL (pool_max_conns)
// sets one: the greater of 8 and twice the number of CPUs (why: docs/internals.md, Reads
// on PostgreSQL).
func DefaultMaxConns() int32 { return int32(max(8, 2*runtime.GOMAXPROCS(0))) }

// TCP keepalive of the connections: a server that vanished without closing them (a
// host crash, a network partition) is noticed after about keepAliveIdle +
// keepAliveCount*keepAliveInterval, even by a query waiting for its answer.
const (
	keepAliveIdle     = 15 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
)

// Advisory lock keys (pg_advisory_xact_lock), per database. inventoryLock makes Import
// and CreateEVSE, which both add EVSEs with the uids they choose, take turns.
const (
	migrationLock int64 = 0x6367_6e74_6d69_6772 // "cgntmigr"
	inventoryLock int64 = 0x6367_6e74_696d_7074 // "cgntimpt"
)

// Options tunes the connection pool. A zero field keeps what the URL says (pool_max_conns,
// pool_min_conns, connect_timeout, statement_timeout, ...) or, if the URL says nothing,
// the default given for the field.
type Options struct {
	// MaxConns is the largest number of open connections. Default: DefaultMaxConns.
	MaxConns int32
	// MinConns is the number of connections kept open while idle. Default 0.
	MinConns int32
	// ConnectTimeout bounds one connection attempt: dial, TLS and authentication; it also
	// bounds the liveness ping of a connection taken from the pool after being idle.
	// Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// StatementTimeout is the server's statement_timeout for every statement except
	// those of Import and of migrations, which only the context bounds. Negative means
	// none. Default DefaultStatementTimeout.
	StatementTimeout time.Duration
	// MaxConnLifetime is the age at which a connection is replaced. Default 1 hour.
	MaxConnLifetime time.Duration
	// MaxConnIdleTime is the idle time after which a connection is closed. Default 30
	// minutes.
	MaxConnIdleTime time.Duration
	// HealthCheckPeriod is the interval of the pool's background check of idle
	// connections. Default 1 minute.
	HealthCheckPeriod time.Duration

	// Hooks, when set, are called after each commit (Hooks.OnCommit), after each commit
	// that queued a webhook delivery or an OCPI push and for those another replica
	// queued (Hooks.OnEvents: see listen.go), and for the charge box signals of every
	// replica (Hooks.OnChargeboxSignal). Nil calls nothing.
	Hooks *chargenet.Hooks
	// CommitWait makes a group of PATCHes and status notifications that arrive as a
	// stream, each alone, wait up to CommitWait for more before it commits, so that
	// several share one commit, and commit as soon as CommitWaitTarget of them are
	// together (internal/groupcommit: Queue.SetWait); a client sending one change after
	// another is not held. Default 0: a group never waits.
	CommitWait time.Duration
	// CommitWaitTarget is how many changes end a wait. Default groupWaitTarget (32).
	CommitWaitTarget int
}

// apply writes the options into a parsed pool configuration.
func (o Options) apply(cfg *pgxpool.Config) error {
	if o.MaxConns < 0 || o.MinConns < 0 {
		return errors.New("MaxConns and MinConns must not be negative")
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	} else if !strings.Contains(cfg.ConnString(), "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns()
	}
	if o.MinConns > 0 {
		cfg.MinConns = o.MinConns
	}
	if cfg.MinConns > cfg.MaxConns {
		return fmt.Errorf("MinConns %d is greater than MaxConns %d", cfg.MinConns, cfg.MaxConns)
	}
	cc := cfg.ConnConfig
	switch {
	case o.ConnectTimeout > 0:
		cc.ConnectTimeout = o.ConnectTimeout
	case cc.ConnectTimeout <= 0:
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.PingTimeout = cc.ConnectTimeout
	cc.DialFunc = (&net.Dialer{
		Timeout: cc.ConnectTimeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount,
		},
	}).DialContext
	if _, inURL := cc.RuntimeParams["statement_timeout"]; o.StatementTimeout != 0 || !inURL {
		st := o.StatementTimeout
		if st == 0 {
			st = DefaultStatementTimeout
		}
		if st < 0 {
			st = 0 // PostgreSQL: no timeout
		}
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(st.Milliseconds(), 10)
	}
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "chargenet"
	}
	if o.MaxConnLifetime > 0 {
		cfg.MaxConnLifetime = o.MaxConnLifetime
	}
	if o.MaxConnIdleTime > 0 {
		cfg.MaxConnIdleTime = o.MaxConnIdleTime
	}
	if o.HealthCheckPeriod > 0 {
		cfg.HealthCheckPeriod = o.HealthCheckPeriod
	}
	return nil
}

// Store is a chargenet.Store over a PostgreSQL database. Create it with Open; it is safe
// for concurrent use.
type Store struct {
	hooks *chargenet.Hooks // told of commits, queued deliveries and signals (Options.Hooks)

	pool  *pgxpool.Pool
	group *groupcommit.Queue // PATCHes and status notifications, group-committed (see group.go)

	// Reads gathered into one round trip (see readGroup).
	evseDocs     *readGroup[int64, storedEVSEDoc]
	locationDocs *readGroup[chargenet.Seek[string], []chargenet.LocationDoc]

	// The listeners of deliveriesChannel and chargeboxesChannel (see listen.go), each
	// started once its hook is wanted.
	stopListen context.CancelFunc
	listeners  sync.WaitGroup
	listening  atomic.Bool // the listener of deliveriesChannel listens
	pids       sync.Map    // uint32 backend process ids of the pool's connections
	closeOnce  sync.Once
}

var _ chargenet.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value connection
// string), applies the pending migrations (see Migrate) and returns the store.
//
// Errors: an error wrapping chargenet.ErrUnavailable if the database cannot be reached;
// a wrapped parse error for a malformed url or invalid opts; otherwise the wrapped
// error of the failed migration. No pool is left open when Open fails.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err) // pgconn redacts the password
	}
	if err := opts.apply(cfg); err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{hooks: opts.Hooks}
	if s.hooks == nil {
		s.hooks = new(chargenet.Hooks)
	}
	s.trackPIDs(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, wrapError("open", err)
	}
	s.pool = pool
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.fillDocs(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	target := opts.CommitWaitTarget
	if target <= 0 {
		target = groupWaitTarget
	}
	s.group = groupcommit.Start(groupStore{s}, groupcommit.Config{Writers: groupWriters, WaitTarget: target, Retry: retryGroup,
		Timeout: DefaultStatementTimeout + 5*time.Second})
	s.group.SetWait(opts.CommitWait)
	s.evseDocs = startReadGroup(readLoops, s.fetchEVSEDocs)
	s.locationDocs = startReadGroup(readLoops, s.fetchLocationDocs)
	s.startListeners()
	return s, nil
}

// Close closes every connection, waiting for those in use to be released. Later calls
// of the store's methods fail with chargenet.ErrUnavailable. Calling Close again does
// nothing. It returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopListen()
		s.listeners.Wait()
	})
	s.group.Close()
	s.evseDocs.close()
	s.locationDocs.close()
	s.pool.Close()
	return nil
}

// Ping checks that the database answers a query on a pooled connection. Any failure,
// including ctx's end, is returned as an error wrapping chargenet.ErrUnavailable and
// the cause.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		if connectionLost(err) {
			s.pool.Reset()
		}
		return chargenet.WrapStoreError("postgres", "ping", err, func(error) bool { return true })
	}
	return nil
}

// Migration is a schema migration recorded in the migrations table.
type Migration struct {
	Name      string // file name, as in "0001_init.sql"
	AppliedAt time.Time
}

// Migrate applies, in file name order, each embedded migration that the migrations
// table does not record yet, each in its own transaction together with its record.
// Every transaction first takes an advisory lock, so stores migrating the same database
// at once (replicas starting together) apply each migration exactly once; applied
// migrations are skipped, so calling Migrate again is a no-op. Open calls it.
//
// Errors: an error wrapping chargenet.ErrUnavailable if the database cannot be reached;
// otherwise the wrapped error of the failed migration, which is rolled back.
func (s *Store) Migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	slices.Sort(names)
	err = s.lockedTx(ctx, migrationLock, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS migrations (
			name       text PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`)
		return err
	})
	if err != nil {
		return s.wrap("migrate: creating the migrations table", err)
	}
	for _, name := range names {
		if err := s.migrate(ctx, name); err != nil {
			return s.wrap("migration "+path.Base(name), err)
		}
	}
	return nil
}

// migrate applies one migration file unless it is recorded already.
func (s *Store) migrate(ctx context.Context, name string) error {
	body, err := migrationFiles.ReadFile(name)
	if err != nil {
		return err
	}
	base := path.Base(name)
	return s.lockedTx(ctx, migrationLock, func(tx pgx.Tx) error {
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM migrations WHERE name = $1)`, base).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil
		}
		if _, err := tx.Exec(ctx, string(body)); err != nil { // no arguments: simple protocol, several statements
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO migrations (name) VALUES ($1)`, base)
		return err
	})
}

// lockedTx runs fn in a transaction that holds the advisory lock key from its start to
// its end. The transaction's statements, the wait for the lock included, have no
// statement_timeout: they are bulk work (migrations, imports) that ctx bounds.
func (s *Store) lockedTx(ctx context.Context, key int64, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key); err != nil {
			return err
		}
		return fn(tx)
	})
}

// Migrations returns the applied migrations in name order. Errors are wrapped driver
// errors, wrapping chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) Migrations(ctx context.Context) ([]Migration, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, applied_at FROM migrations ORDER BY name`)
	if err != nil {
		return nil, s.wrap("migrations", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Migration, error) {
		var m Migration
		err := row.Scan(&m.Name, &m.AppliedAt)
		m.AppliedAt = m.AppliedAt.UTC()
		return m, err
	})
	return out, s.wrap("migrations", err)
}

// querier is what the reads need of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// nullTime returns t as a nullable timestamptz, NULL when t is zero.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: chargenet.Stamp(t), Valid: !t.IsZero()}
}
