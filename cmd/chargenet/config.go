package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/server"
)

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

// config is the configuration of `chargenet serve` and the database commands: flags,
// each with a CHARGENET_* environment fallback, checked by Validate.
type config struct {
	Addr            string
	Database        string
	CursorSecret    string
	Demo            bool
	APIKeys         []string
	ShutdownTimeout time.Duration
	LogLevel        string
	DBMaxConns      int
	// DBConnectTimeout and DBStatementTimeout bound PostgreSQL connection attempts and
	// statements; zero picks the store's defaults.
	DBConnectTimeout   time.Duration
	DBStatementTimeout time.Duration
	KeyCacheTTL        time.Duration
	// ReadCacheMB bounds the SQLite store's read cache, in MiB; 0 turns it off.
	ReadCacheMB int
	// CommitWait is how long PATCHes and status notifications that arrive as a stream
	// wait for company before their group commits; 0 never waits.
	CommitWait time.Duration
	RateLimit  string
	// ReadHeaderTimeout bounds how long a client may take to send a request's headers,
	// the defence against slow clients holding connections (slowloris).
	ReadHeaderTimeout time.Duration
	// Webhook delivery: development flag, retry schedule, per-attempt timeout, poll
	// interval and concurrency of the dispatcher.
	WebhookAllowInsecure bool
	WebhookSchedule      string
	WebhookTimeout       time.Duration
	WebhookPoll          time.Duration
	WebhookConcurrency   int
	WebhookDispatch      bool
	// EventRetention is how long events, delivery attempts and pending deliveries are
	// kept (the event log's window).
	EventRetention time.Duration
	// AdminAddr is the listen address of /metrics and /debug/pprof/; empty turns them
	// off. Never the public address.
	AdminAddr string
	// PublicURL is the base of every URL chargenet hands out (OCPI versions, endpoints,
	// Link); empty derives it from Addr.
	PublicURL string
	// OCPICountryCode and OCPIPartyID are chargenet's OCPI CPO identity: with both set,
	// OCPI is served under /ocpi. OCPIBusinessName goes with them in the credentials.
	OCPICountryCode  string
	OCPIPartyID      string
	OCPIBusinessName string
	// The OCPP listener (package ocpp): its address (empty: off), TLS certificate and
	// key (both or neither), the heartbeat interval a BootNotification is answered
	// with, how long a silent box stays connected, whether idTags are accepted, and the
	// password of the demo charge boxes.
	OCPPAddr         string
	OCPPTLSCert      string
	OCPPTLSKey       string
	OCPPHeartbeat    time.Duration
	OCPPOfflineAfter time.Duration
	OCPPAuthorize    string
	OCPPDevPassword  string
}

// ocpiOn reports whether the OCPI interface is configured.
func (c *config) ocpiOn() bool { return c.OCPICountryCode != "" && c.OCPIPartyID != "" }

// party returns chargenet's OCPI identity: the codes in upper case, the business name
// or, when none is set, the two codes ("NL CNE").
func (c *config) party() ocpi.Party {
	p := ocpi.Party{CountryCode: strings.ToUpper(c.OCPICountryCode), PartyID: strings.ToUpper(c.OCPIPartyID), Name: c.OCPIBusinessName}
	if p.Name == "" {
		p.Name = p.CountryCode + " " + p.PartyID
	}
	return p
}

// publicURL returns --public-url, or the URL --addr serves when it is not set: http,
// with 127.0.0.1 for an address that listens on every interface.
func (c *config) publicURL() string {
	if c.PublicURL != "" {
		return strings.TrimSuffix(c.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "http://" + c.Addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Values of --ocpp-authorize, and the password of the demo charge boxes unless
// CHARGENET_OCPP_DEV_PASSWORD sets another.
const (
	authorizeAccept    = "accept"
	authorizeReject    = "reject"
	defaultDevPassword = "dev-ocpp-password-change-me"
)

// bindFlags registers the flags on fs with defaults taken from the environment.
func (c *config) bindFlags(fs *flag.FlagSet, getenv func(string) string, serve bool) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.Database, "database", env("CHARGENET_DATABASE", "sqlite:data/chargenet.db"),
		"database: sqlite:PATH (embedded, the default) or postgres://USER@HOST:PORT/DB (env CHARGENET_DATABASE)")
	maxConns, _ := strconv.Atoi(env("CHARGENET_DB_MAX_CONNS", "0"))
	fs.IntVar(&c.DBMaxConns, "db-max-conns", maxConns, "PostgreSQL pool size; 0 picks the default (env CHARGENET_DB_MAX_CONNS)")
	connect, _ := time.ParseDuration(env("CHARGENET_DB_CONNECT_TIMEOUT", "0s"))
	fs.DurationVar(&c.DBConnectTimeout, "db-connect-timeout", connect,
		"PostgreSQL: bound on one connection attempt; 0 picks the default, 5s (env CHARGENET_DB_CONNECT_TIMEOUT)")
	statement, _ := time.ParseDuration(env("CHARGENET_DB_STATEMENT_TIMEOUT", "0s"))
	fs.DurationVar(&c.DBStatementTimeout, "db-statement-timeout", statement,
		"PostgreSQL: statement_timeout of request statements; 0 picks the default, 30s (env CHARGENET_DB_STATEMENT_TIMEOUT)")
	if !serve {
		return
	}
	fs.StringVar(&c.Addr, "addr", env("CHARGENET_ADDR", "127.0.0.1:8080"), "listen address (env CHARGENET_ADDR)")
	fs.StringVar(&c.AdminAddr, "admin-addr", env("CHARGENET_ADMIN_ADDR", ""),
		"listen address of the admin endpoints, Prometheus /metrics and /debug/pprof/, for example 127.0.0.1:9090; keep it off the public network. Empty: off (env CHARGENET_ADMIN_ADDR)")
	fs.StringVar(&c.CursorSecret, "cursor-secret", env("CHARGENET_CURSOR_SECRET", ""),
		"secret signing pagination cursors, at least 32 characters; replicas must share it. Empty: generated once and kept in the database (env CHARGENET_CURSOR_SECRET)")
	fs.BoolVar(&c.Demo, "demo", env("CHARGENET_DEMO", "") == "true", "load the demo inventory if the database is empty (env CHARGENET_DEMO=true)")
	if keys := getenv("CHARGENET_API_KEYS"); keys != "" {
		for _, k := range strings.Split(keys, ",") {
			if k = strings.TrimSpace(k); k != "" {
				c.APIKeys = append(c.APIKeys, k)
			}
		}
	}
	shutdown, _ := time.ParseDuration(env("CHARGENET_SHUTDOWN_TIMEOUT", "10s"))
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", shutdown, "how long to drain in-flight requests on SIGINT/SIGTERM (env CHARGENET_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.LogLevel, "log-level", env("CHARGENET_LOG_LEVEL", "info"), "debug, info, warn or error (env CHARGENET_LOG_LEVEL)")
	rht, _ := time.ParseDuration(env("CHARGENET_READ_HEADER_TIMEOUT", "5s"))
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", rht,
		"how long a client may take to send the request line and headers before the connection is closed (env CHARGENET_READ_HEADER_TIMEOUT)")
	ttl, _ := time.ParseDuration(env("CHARGENET_KEY_CACHE_TTL", "5s"))
	fs.StringVar(&c.RateLimit, "rate-limit", env("CHARGENET_RATE_LIMIT", "6000/1m"),
		"requests allowed per API key and window on this instance, as N/DURATION; 0 disables (env CHARGENET_RATE_LIMIT)")
	fs.BoolVar(&c.WebhookAllowInsecure, "webhook-allow-insecure", env("CHARGENET_WEBHOOK_ALLOW_INSECURE", "") == "true",
		"DEVELOPMENT ONLY: accept webhook URLs with http and loopback or private hosts, and deliver to them (env CHARGENET_WEBHOOK_ALLOW_INSECURE=true)")
	fs.StringVar(&c.WebhookSchedule, "webhook-retry-schedule", env("CHARGENET_WEBHOOK_RETRY_SCHEDULE", "5s,5m,30m,2h,5h,10h,14h,20h,24h"),
		"comma-separated delays before each retry of a failed webhook delivery; the first attempt is immediate (env CHARGENET_WEBHOOK_RETRY_SCHEDULE)")
	wt, _ := time.ParseDuration(env("CHARGENET_WEBHOOK_TIMEOUT", "10s"))
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", wt, "bound on one webhook delivery attempt (env CHARGENET_WEBHOOK_TIMEOUT)")
	wp, _ := time.ParseDuration(env("CHARGENET_WEBHOOK_POLL", "1s"))
	fs.DurationVar(&c.WebhookPoll, "webhook-poll", wp,
		"how often the outbox is checked for due deliveries, for events other replicas produced and for retries (env CHARGENET_WEBHOOK_POLL)")
	wc, _ := strconv.Atoi(env("CHARGENET_WEBHOOK_CONCURRENCY", "64"))
	fs.IntVar(&c.WebhookConcurrency, "webhook-concurrency", wc, "webhook deliveries in flight at most (env CHARGENET_WEBHOOK_CONCURRENCY)")
	fs.BoolVar(&c.WebhookDispatch, "webhook-dispatch", env("CHARGENET_WEBHOOK_DISPATCH", "true") != "false",
		"run the webhook dispatcher in this process; false leaves delivery to other replicas (env CHARGENET_WEBHOOK_DISPATCH)")
	er, _ := time.ParseDuration(env("CHARGENET_EVENT_RETENTION", "720h"))
	fs.DurationVar(&c.EventRetention, "event-retention", er,
		"how long the event log keeps events, and how long delivery attempts and undelivered deliveries are kept; every replica prunes what is older (env CHARGENET_EVENT_RETENTION)")
	rc, _ := strconv.Atoi(env("CHARGENET_READ_CACHE_MB", "32"))
	fs.IntVar(&c.ReadCacheMB, "read-cache-mb", rc,
		"SQLite: MiB of EVSE and location JSON kept in memory while nothing is committed to the database; 0 turns the cache off (env CHARGENET_READ_CACHE_MB)")
	cw, _ := time.ParseDuration(env("CHARGENET_COMMIT_WAIT", "20ms"))
	fs.DurationVar(&c.CommitWait, "commit-wait", cw,
		"how long PATCHes and status notifications arriving as a steady stream wait for company, so that several share a commit (up to 8 on SQLite, 32 on PostgreSQL); a client sending one change after another is not held; 0 never waits (env CHARGENET_COMMIT_WAIT)")
	fs.StringVar(&c.OCPPAddr, "ocpp-addr", env("CHARGENET_OCPP_ADDR", ""),
		"listen address of the OCPP-J endpoint for charge boxes (OCPP 1.6 and 2.0.1 at /ocpp/{identity}), for example :9000; empty: off (env CHARGENET_OCPP_ADDR)")
	fs.StringVar(&c.OCPPTLSCert, "ocpp-tls-cert", env("CHARGENET_OCPP_TLS_CERT", ""),
		"PEM certificate (chain) of the OCPP endpoint: with --ocpp-tls-key it serves wss:// (env CHARGENET_OCPP_TLS_CERT)")
	fs.StringVar(&c.OCPPTLSKey, "ocpp-tls-key", env("CHARGENET_OCPP_TLS_KEY", ""), "PEM private key of --ocpp-tls-cert (env CHARGENET_OCPP_TLS_KEY)")
	hb, _ := time.ParseDuration(env("CHARGENET_OCPP_HEARTBEAT", "5m"))
	fs.DurationVar(&c.OCPPHeartbeat, "ocpp-heartbeat", hb, "heartbeat interval a charge box's BootNotification is answered with (env CHARGENET_OCPP_HEARTBEAT)")
	oa, _ := time.ParseDuration(env("CHARGENET_OCPP_OFFLINE_AFTER", "5m"))
	fs.DurationVar(&c.OCPPOfflineAfter, "ocpp-offline-after", oa,
		"a charge box from which nothing (message or WebSocket ping) came for this long is disconnected and its EVSEs turn UNKNOWN (env CHARGENET_OCPP_OFFLINE_AFTER)")
	fs.StringVar(&c.OCPPAuthorize, "ocpp-authorize", env("CHARGENET_OCPP_AUTHORIZE", ""),
		"accept or reject every idTag (1.6) and idToken (2.0.1) charge boxes ask about; default reject, accept with --demo (env CHARGENET_OCPP_AUTHORIZE)")
	c.OCPPDevPassword = env("CHARGENET_OCPP_DEV_PASSWORD", defaultDevPassword)
	fs.DurationVar(&c.KeyCacheTTL, "key-cache-ttl", ttl, "how long a checked API key or OCPI token is trusted before the database is asked again; a revoked key or dead token stops working within it (env CHARGENET_KEY_CACHE_TTL)")
	fs.StringVar(&c.PublicURL, "public-url", env("CHARGENET_PUBLIC_URL", ""),
		"the base of every URL chargenet hands out (OCPI versions, endpoints, Link), as partners reach it, for example https://chargenet.example.com. Empty: http:// and --addr (env CHARGENET_PUBLIC_URL)")
	fs.StringVar(&c.OCPICountryCode, "ocpi-country-code", env("CHARGENET_OCPI_COUNTRY_CODE", ""),
		"OCPI: the ISO 3166-1 alpha-2 country code of chargenet's CPO role; with --ocpi-party-id, OCPI 2.2.1 is served under /ocpi (env CHARGENET_OCPI_COUNTRY_CODE)")
	fs.StringVar(&c.OCPIPartyID, "ocpi-party-id", env("CHARGENET_OCPI_PARTY_ID", ""),
		"OCPI: the party ID of chargenet's CPO role, three letters or digits (env CHARGENET_OCPI_PARTY_ID)")
	fs.StringVar(&c.OCPIBusinessName, "ocpi-business-name", env("CHARGENET_OCPI_BUSINESS_NAME", ""),
		"OCPI: the business name sent with chargenet's CPO role in the credentials. Empty: the country code and the party ID (env CHARGENET_OCPI_BUSINESS_NAME)")
}

// maxReadCacheMB bounds --read-cache-mb (64 GiB): beyond it a cache is a mistake, and
// the size in bytes must not overflow.
const maxReadCacheMB = 64 << 10

// maxCommitWait bounds --commit-wait: a longer wait only adds latency.
const maxCommitWait = time.Second

// Validate checks the configuration and returns the first problem found.
func (c *config) Validate() error {
	if _, _, err := parseDatabase(c.Database); err != nil {
		return err
	}
	if c.DBMaxConns < 0 {
		return fmt.Errorf("--db-max-conns %d must not be negative", c.DBMaxConns)
	}
	if c.DBConnectTimeout < 0 || c.DBStatementTimeout < 0 {
		return errors.New("--db-connect-timeout and --db-statement-timeout must not be negative")
	}
	if c.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return fmt.Errorf("--addr %q is not HOST:PORT: %v", c.Addr, err)
		}
	}
	if c.AdminAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			return fmt.Errorf("--admin-addr %q is not HOST:PORT: %v", c.AdminAddr, err)
		}
		if c.AdminAddr == c.Addr {
			return errors.New("--admin-addr must differ from --addr: the admin endpoints never share the public port")
		}
	}
	if c.CursorSecret != "" && len(c.CursorSecret) < 32 {
		return errors.New("--cursor-secret must be at least 32 characters")
	}
	if c.ShutdownTimeout <= 0 && c.Addr != "" {
		return errors.New("--shutdown-timeout must be positive")
	}
	for _, k := range c.APIKeys {
		if len(k) < 16 {
			return errors.New("CHARGENET_API_KEYS: every key must be at least 16 characters")
		}
	}
	if c.Addr != "" && c.ReadHeaderTimeout <= 0 {
		return errors.New("--read-header-timeout must be positive")
	}
	if c.ReadCacheMB < 0 || c.ReadCacheMB > maxReadCacheMB {
		return fmt.Errorf("--read-cache-mb %d must be between 0 and %d", c.ReadCacheMB, maxReadCacheMB)
	}
	if c.CommitWait < 0 || c.CommitWait > maxCommitWait {
		return fmt.Errorf("--commit-wait %s must be between 0 and %s", c.CommitWait, maxCommitWait)
	}
	if c.Addr != "" && c.KeyCacheTTL < 0 {
		return errors.New("--key-cache-ttl must not be negative")
	}
	if c.Addr != "" {
		if _, err := parseRateLimit(c.RateLimit); err != nil {
			return err
		}
	}
	if c.Addr != "" {
		if _, err := parseSchedule(c.WebhookSchedule); err != nil {
			return err
		}
		if c.WebhookTimeout <= 0 || c.WebhookPoll <= 0 || c.WebhookConcurrency <= 0 {
			return errors.New("--webhook-timeout, --webhook-poll and --webhook-concurrency must be positive")
		}
		if c.EventRetention <= 0 {
			return fmt.Errorf("--event-retention %s must be positive", c.EventRetention)
		}
	}
	if err := c.validateOCPP(); err != nil {
		return err
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("--public-url %q must be an http or https URL without credentials, query or fragment", c.PublicURL)
		}
	}
	if (c.OCPICountryCode == "") != (c.OCPIPartyID == "") {
		return errors.New("--ocpi-country-code and --ocpi-party-id go together: set both to serve OCPI, or neither")
	}
	if c.OCPIBusinessName != "" && !c.ocpiOn() {
		return errors.New("--ocpi-business-name needs --ocpi-country-code and --ocpi-party-id")
	}
	if c.ocpiOn() {
		if err := c.party().Validate(); err != nil {
			return asFlag(err, partyFlags)
		}
	}
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level %q must be debug, info, warn or error", c.LogLevel)
	}
	return nil
}

// validateOCPP checks the OCPP listener's settings and settles --ocpp-authorize's
// default: accept with --demo, reject otherwise.
func (c *config) validateOCPP() error {
	if c.OCPPAuthorize == "" {
		c.OCPPAuthorize = authorizeReject
		if c.Demo {
			c.OCPPAuthorize = authorizeAccept
		}
	}
	if c.OCPPAuthorize != authorizeAccept && c.OCPPAuthorize != authorizeReject {
		return fmt.Errorf("--ocpp-authorize %q must be accept or reject", c.OCPPAuthorize)
	}
	if c.OCPPAddr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.OCPPAddr); err != nil {
		return fmt.Errorf("--ocpp-addr %q is not HOST:PORT: %v", c.OCPPAddr, err)
	}
	switch {
	case c.OCPPAddr == c.Addr || c.OCPPAddr == c.AdminAddr:
		return errors.New("--ocpp-addr must differ from --addr and --admin-addr")
	case (c.OCPPTLSCert == "") != (c.OCPPTLSKey == ""):
		return errors.New("--ocpp-tls-cert and --ocpp-tls-key go together: give both or neither")
	case c.OCPPHeartbeat < time.Second || c.OCPPHeartbeat > 24*time.Hour:
		return fmt.Errorf("--ocpp-heartbeat %s must be between 1s and 24h", c.OCPPHeartbeat)
	case c.OCPPOfflineAfter < time.Second:
		return fmt.Errorf("--ocpp-offline-after %s must be at least 1s", c.OCPPOfflineAfter)
	case c.Demo && (len(c.OCPPDevPassword) < chargenet.MinChargeboxPassword || len(c.OCPPDevPassword) > chargenet.MaxChargeboxPassword):
		return fmt.Errorf("CHARGENET_OCPP_DEV_PASSWORD must be %d to %d characters", chargenet.MinChargeboxPassword, chargenet.MaxChargeboxPassword)
	}
	return nil
}

// parseDatabase splits a --database value into its kind ("sqlite" or "postgres") and
// the path or URL the store opens.
func parseDatabase(s string) (kind, target string, err error) {
	switch {
	case strings.HasPrefix(s, "sqlite:"):
		if p := strings.TrimPrefix(s, "sqlite:"); p != "" {
			return "sqlite", p, nil
		}
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return "postgres", s, nil
	}
	return "", "", fmt.Errorf("--database %q must be sqlite:PATH or a postgres:// URL", s)
}

// parseRateLimit reads N/DURATION (for example 6000/1m); "0" disables limiting.
func parseRateLimit(s string) (server.RateLimit, error) {
	if s == "0" {
		return server.RateLimit{}, nil
	}
	n, d, ok := strings.Cut(s, "/")
	requests, err1 := strconv.Atoi(n)
	window, err2 := time.ParseDuration(d)
	if !ok || err1 != nil || err2 != nil || requests < 1 || window <= 0 {
		return server.RateLimit{}, fmt.Errorf("--rate-limit %q must be N/DURATION, as in 6000/1m, or 0", s)
	}
	return server.RateLimit{Requests: requests, Window: window}, nil
}

// parseSchedule reads a comma-separated list of delays (for example 5s,5m,30m); an
// empty list means no retries.
func parseSchedule(s string) ([]time.Duration, error) {
	out := []time.Duration{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--webhook-retry-schedule %q: %q is not a non-negative duration", s, part)
		}
		out = append(out, d)
	}
	return out, nil
}
