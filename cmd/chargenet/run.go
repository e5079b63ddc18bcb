package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/health"
	"github.com/chargenet/chargenet/intake"
	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/ocpp"
	"github.com/chargenet/chargenet/outbox"
	"github.com/chargenet/chargenet/postgres"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/chargenet/chargenet/tracing"
	"go.opentelemetry.io/otel/trace"
)

const usage = `chargenet: the Charging Network Integration API

Usage:
  chargenet serve [flags]                  run the HTTP service
  chargenet import [flags] FILE            load {"locations":[...],"evses":[...]} in one transaction
  chargenet migrate [flags]                apply the database migrations
  chargenet backup [flags] OUT             copy a SQLite database, also while serve runs, and check the copy
  chargenet apikey create --name NAME [--scope SCOPE]... [--expires WHEN] [--rate-limit N/DURATION]
                                           create an API key and print it (once)
  chargenet apikey rotate --name NAME [--overlap DURATION] [--expires WHEN]
                                           give a key a new secret and print it (once)
  chargenet apikey list [flags]            list the keys: scopes, creation, expiry, last use
  chargenet apikey revoke [flags] NAME     revoke an API key
  chargenet ocpi register --name NAME [flags]
                                           make a registration token for a new OCPI partner and print it (once)
  chargenet ocpi connect --versions-url URL --token TOKEN [--name NAME] [flags]
                                           register chargenet with an OCPI partner that handed out a token
  chargenet ocpi list [flags]              list the OCPI partners
  chargenet ocpi unregister --name NAME [flags]
                                           unregister an OCPI partner (and tell it)
  chargenet chargebox create --id ID [--identity IDENTITY] [flags]
                                           register a charge box for OCPP and print its new password (once)
  chargenet chargebox revoke --id ID [flags]
                                           end a charge box's registration
  chargenet help                           show this text

Run "chargenet COMMAND -h" for the flags of a command.
`

// run is the whole program: main only supplies the process's arguments, environment and
// streams, so tests call run exactly as a user calls the binary.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runClock(ctx, args, getenv, stdout, stderr, time.Now)
}

// runClock is run with the clock that serve and apikey read (the server's requests, key
// expiry, rate limits; a key's creation, expiry and overlap): tests pass their own to
// decide when a key expires instead of waiting for it.
func runClock(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, now func() time.Time) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: missing command", errUsage)
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdout, stderr, now)
	case "import":
		return importCmd(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return migrate(ctx, rest, getenv, stdout, stderr)
	case "backup":
		return backup(ctx, rest, getenv, stdout, stderr)
	case "apikey":
		return apikey(ctx, rest, getenv, stdout, stderr, now)
	case "ocpi":
		return ocpiCmd(ctx, rest, getenv, stdout, stderr)
	case "chargebox":
		return chargebox(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// parse parses a command's flags into a validated config.
func parse(name string, args []string, getenv func(string) string, stderr io.Writer, serve bool, extra func(*flag.FlagSet)) (*config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("chargenet "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{}
	cfg.bindFlags(fs, getenv, serve)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, flag.ErrHelp
		}
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return cfg, fs, nil
}

// openStore opens (and migrates) the configured database, with hooks (nil: none) as
// the store's hooks and commitWait as its commit wait.
func openStore(ctx context.Context, cfg *config, hooks *chargenet.Hooks, commitWait time.Duration) (chargenet.Store, error) {
	kind, target, err := parseDatabase(cfg.Database)
	if err != nil {
		return nil, err
	}
	if kind == "postgres" {
		return postgres.Open(ctx, target, postgres.Options{
			MaxConns:         int32(cfg.DBMaxConns),
			ConnectTimeout:   cfg.DBConnectTimeout,
			StatementTimeout: cfg.DBStatementTimeout,
			Hooks:            hooks,
			CommitWait:       commitWait,
		})
	}
	return sqlite.Open(ctx, target, sqlite.WithHooks(hooks), sqlite.WithCommitWait(commitWait, 0))
}

// observeStore registers the metrics of store, whose hooks are hooks: its commits, its
// outbox, and the read cache or the connection pool of its kind.
func observeStore(m *metrics.Metrics, hooks *chargenet.Hooks, store chargenet.Store) {
	m.ObserveStore(store, 2*time.Second)
	hooks.OnCommit(m.Commit)
	switch s := store.(type) {
	case *sqlite.Store:
		m.ObserveReadCache(s.ReadCacheStats)
	case *postgres.Store:
		m.ObservePool(s.PoolStats)
	}
}

// newLogger returns the JSON logger writing to w, which must be safe for concurrent
// use.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by config.Validate; "" is info
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// gcPercent and gcMemoryLimit are serve's garbage collector settings when the
// environment sets neither GOGC nor GOMEMLIMIT: the service keeps a small heap (tens of
// MiB) and allocates with every request, so the default GOGC=100 would collect it
// thousands of times a second under load; at 400 % it collects a quarter as often, and
// the soft limit brings collection back before the heap grows large.
const (
	gcPercent     = 400
	gcMemoryLimit = 512 << 20
)

// tuneGC applies gcPercent and gcMemoryLimit unless the environment sets GOGC or
// GOMEMLIMIT, which the Go runtime has already applied.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(gcMemoryLimit)
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, now func() time.Time) error {
	cfg, _, err := parse("serve", args, getenv, stderr, true, nil)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	tuneGC(getenv)
	logs := newLogBuffer(stdout)
	lctx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	flushed := make(chan struct{})
	go func() { defer close(flushed); logs.run(lctx) }()
	defer func() { stopLogs(); <-flushed }() // runs last: every line is written
	log := slog.New(flushingHandler{newLogger(logs, cfg.LogLevel).Handler(), logs})
	// The store's hooks: set below, once the metrics, the dispatcher and the OCPP
	// listener they call exist.
	hooks := new(chargenet.Hooks)
	store, err := openStore(ctx, cfg, hooks, cfg.CommitWait)
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer func() { _ = store.Close() }()
	if s, ok := store.(*sqlite.Store); ok {
		s.SetReadCacheSize(cfg.ReadCacheMB << 20)
	}

	secret := cfg.CursorSecret
	if secret == "" {
		var b [32]byte
		_, _ = rand.Read(b[:])
		if secret, err = store.Setting(ctx, "cursor_secret", hex.EncodeToString(b[:])); err != nil {
			return fmt.Errorf("reading the cursor secret: %w", err)
		}
	}
	if cfg.Demo {
		loaded, err := loadDemo(ctx, store)
		if err != nil {
			return fmt.Errorf("loading the demo inventory: %w", err)
		}
		if loaded {
			log.Info("demo inventory loaded", "locations", 120, "evses", 40)
		}
		if n, err := registerDemoBoxes(ctx, store, cfg.OCPPDevPassword); err != nil {
			return fmt.Errorf("registering the demo charge boxes: %w", err)
		} else if n > 0 {
			log.Info("demo charge boxes registered for OCPP", "chargeboxes", n)
		}
	}
	kind, _, _ := parseDatabase(cfg.Database)
	var m *metrics.Metrics // nil: metrics off, and no cost
	if cfg.AdminAddr != "" {
		m = metrics.New()
		observeStore(m, hooks, store)
	}
	var tracer trace.Tracer // nil: tracing off, and no cost
	apiStore := store
	if tracing.Enabled(getenv) {
		tp, err := tracing.New(ctx, version())
		if err != nil {
			return err
		}
		defer func() { // runs after the server and the dispatcher stopped: their spans are sent
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				log.Warn("exporting the last spans", "error", err.Error())
			}
		}()
		tracer = tp.Tracer()
		apiStore = tracing.Store(store, tracer, kind)
		log.Info("tracing on: spans are exported over OTLP/HTTP")
	}
	keys := server.NewKeys(apiStore, cfg.APIKeys)
	keys.CacheTTL = cfg.KeyCacheTTL
	// Last use of keys is written once a minute, and once more before the store closes.
	uctx, stopUses := context.WithCancel(context.WithoutCancel(ctx))
	usesFlushed := make(chan struct{})
	go func() { defer close(usesFlushed); keys.RunUseFlusher(uctx, server.UseFlushInterval, log) }()
	defer func() { stopUses(); <-usesFlushed }()
	limit, _ := parseRateLimit(cfg.RateLimit)         // checked by Validate
	schedule, _ := parseSchedule(cfg.WebhookSchedule) // checked by Validate
	cursors := chargenet.NewCursorCodec([]byte(secret))
	var ocpiHTTP server.Mount // nil: nothing is served under /ocpi
	var pusher outbox.Pusher
	if cfg.ocpiOn() {
		ocpiSvc, err := newOCPI(cfg, apiStore, cursors, log)
		if err != nil {
			return err
		}
		if ocpiHTTP, err = ocpi.NewHTTP(ocpiSvc); err != nil {
			return err
		}
		pusher = ocpiSvc
		log.Info("OCPI 2.2.1 served", "versions_url", ocpiSvc.VersionsURL(), "country_code", cfg.party().CountryCode,
			"party_id", cfg.party().PartyID)
	}
	dispatcher, err := outbox.New(outbox.Config{Store: store, Schedule: schedule, Timeout: cfg.WebhookTimeout,
		Poll: cfg.WebhookPoll, Concurrency: cfg.WebhookConcurrency, AllowInsecure: cfg.WebhookAllowInsecure, Logger: log,
		Metrics: m, Tracer: tracer, Pusher: pusher})
	if err != nil {
		return err
	}
	readiness := &health.Checker{Store: store}
	if cfg.WebhookDispatch {
		readiness.Dispatching = dispatcher.Running
	}
	m.ObserveReadiness(func(ctx context.Context) ([]string, []bool) {
		r := readiness.Run(ctx)
		names, ok := make([]string, len(r.Checks)), make([]bool, len(r.Checks))
		for i, c := range r.Checks {
			names[i], ok[i] = c.Name, c.OK
		}
		return names, ok
	}, 2*time.Second)
	// One application path for the charge boxes' messages, whether they come over OCPP
	// or over HTTP: counted, traced (through the traced store) and stamped alike. The
	// OCPP listener, if on, passes the operator's availability changes on to the boxes
	// connected here; without it they are recorded for the replica holding the box.
	var boxes *ocpp.Service
	in, err := intake.New(intake.Config{Store: apiStore, Metrics: m, Tracer: tracer, Logger: log,
		Deliver: func(id int64, owed []chargenet.AvailabilityRequest) {
			if boxes != nil {
				boxes.Deliver(id, owed)
			}
		}})
	if err != nil {
		return err
	}
	if cfg.OCPPAddr != "" {
		var stopOCPP func()
		if boxes, stopOCPP, err = startOCPP(cfg, store, hooks, in, log); err != nil {
			return err
		}
		defer stopOCPP()
	}
	handler, err := server.New(server.Config{
		Store:                 apiStore,
		Keys:                  keys,
		Cursors:               cursors,
		Logger:                log,
		RateLimit:             &limit,
		AllowInsecureWebhooks: cfg.WebhookAllowInsecure,
		Notify:                dispatcher.Notify,
		Metrics:               m,
		Tracer:                tracer,
		Readiness:             readiness,
		OCPI:                  ocpiHTTP,
		Intake:                in,
		Now:                   now,
	})
	if err != nil {
		return err
	}
	if cfg.WebhookAllowInsecure {
		log.Warn("webhooks may be delivered to http and private addresses (--webhook-allow-insecure): for development only")
	}
	dctx, stopDispatch := context.WithCancel(context.WithoutCancel(ctx))
	dispatched := make(chan struct{})
	if cfg.WebhookDispatch {
		hooks.OnEvents(dispatcher.Notify) // deliver queued events at once, not at the next poll
		go func() { defer close(dispatched); dispatcher.Run(dctx) }()
	} else {
		close(dispatched)
	}
	// Stop the dispatcher before the store closes: its attempts in flight are recorded.
	defer func() { stopDispatch(); <-dispatched }()
	// Every replica keeps the event log within its window; stopped before the store closes.
	pruner := outbox.NewPruner(outbox.PrunerConfig{Store: store, Retention: cfg.EventRetention, Logger: log})
	pctx, stopPrune := context.WithCancel(context.WithoutCancel(ctx))
	pruned := make(chan struct{})
	go func() { defer close(pruned); pruner.Run(pctx) }()
	defer func() { stopPrune(); <-pruned }()
	if m != nil {
		stopAdmin, err := startAdmin(cfg.AdminAddr, m, log)
		if err != nil {
			return err
		}
		defer stopAdmin()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("listening", "addr", "http://"+ln.Addr().String(), "database", kind)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain_timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("draining requests: %w", err)
	}
	log.Info("stopped")
	return nil
}

// loadDemo imports the demo inventory if the database holds no location and no EVSE.
func loadDemo(ctx context.Context, store chargenet.Store) (bool, error) {
	locs, err := store.ListLocations(ctx, chargenet.Seek[string]{Limit: 1})
	if err != nil {
		return false, err
	}
	evses, err := store.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 1})
	if err != nil {
		return false, err
	}
	if len(locs) > 0 || len(evses) > 0 {
		return false, nil
	}
	return true, store.Import(ctx, chargenet.DemoInventory(time.Now()))
}

func importCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, fs, err := parse("import", args, getenv, stderr, false, nil)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: import needs exactly one FILE", errUsage)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	inv, err := server.DecodeInventory(f)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	store, err := openStore(ctx, cfg, nil, 0)
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer func() { _ = store.Close() }()
	start := time.Now()
	if err := store.Import(ctx, inv); err != nil {
		return fmt.Errorf("%s: nothing imported: %w", fs.Arg(0), err)
	}
	fmt.Fprintf(stdout, "imported %d locations and %d EVSEs in %s\n", len(inv.Locations), len(inv.EVSEs), time.Since(start).Round(time.Millisecond))
	return nil
}

func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, _, err := parse("migrate", args, getenv, stderr, false, nil)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	store, err := openStore(ctx, cfg, nil, 0) // opening applies the migrations
	if err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	fmt.Fprintln(stdout, "database is up to date")
	return store.Close()
}
