package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const devKey = "cli-test-key-0123456789"

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// syncBuffer is a bytes.Buffer safe for the server goroutine to write while tests read.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// serving runs `chargenet serve ARGS...` until the test ends or stop is called.
type serving struct {
	base string
	stop func() error
	out  *syncBuffer
}

func startServe(t *testing.T, vars map[string]string, args ...string) *serving {
	t.Helper()
	return startServeClock(t, vars, time.Now, args...)
}

// startServeClock is startServe with the server reading the clock now.
func startServeClock(t *testing.T, vars map[string]string, now func() time.Time, args ...string) *serving {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runClock(ctx, append([]string{"chargenet", "serve", "--addr", addr}, args...), env(vars), out, out, now)
	}()
	base := "http://" + addr
	// Wait for the server to answer, or for it to stop: a race-built serve on a busy
	// machine takes seconds to come up, and a fixed short bound failed there.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-done:
			cancel()
			require.FailNow(t, "serve stopped before it answered", "error: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "server did not come up: %s", out.String())
	}
	var once sync.Once
	var runErr error
	s := &serving{base: base, out: out, stop: func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(15 * time.Second):
				runErr = errors.New("serve did not stop")
			}
		})
		return runErr
	}}
	t.Cleanup(func() { _ = s.stop() })
	return s
}

var client = &http.Client{Timeout: 10 * time.Second}

func (s *serving) call(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+devKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{Timeout: 10 * time.Second, Transport: apitest.Transport(t, nil)}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, b
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	tests := []struct {
		args []string
		want error
	}{
		{[]string{"chargenet"}, errUsage},
		{[]string{"chargenet", "frobnicate"}, errUsage},
		{[]string{"chargenet", "serve", "--addr", "nonsense"}, errUsage},
		{[]string{"chargenet", "serve", "--database", "mysql://x"}, errUsage},
		{[]string{"chargenet", "serve", "--cursor-secret", "short"}, errUsage},
		{[]string{"chargenet", "serve", "--log-level", "loud"}, errUsage},
		{[]string{"chargenet", "serve", "--rate-limit", "many"}, errUsage},
		{[]string{"chargenet", "serve", "--rate-limit", "0/1m"}, errUsage},
		{[]string{"chargenet", "serve", "--no-such-flag"}, errUsage},
		{[]string{"chargenet", "serve", "--db-max-conns", "-1"}, errUsage},
		{[]string{"chargenet", "serve", "--read-header-timeout", "0s"}, errUsage},
		{[]string{"chargenet", "serve", "--db-connect-timeout", "-1s"}, errUsage},
		{[]string{"chargenet", "migrate", "--db-statement-timeout", "-5s"}, errUsage},
		{[]string{"chargenet", "serve", "--webhook-retry-schedule", "5s,soon"}, errUsage},
		{[]string{"chargenet", "serve", "--webhook-retry-schedule", "-5s"}, errUsage},
		{[]string{"chargenet", "serve", "--webhook-timeout", "0s"}, errUsage},
		{[]string{"chargenet", "serve", "--webhook-poll", "0s"}, errUsage},
		{[]string{"chargenet", "serve", "--webhook-concurrency", "0"}, errUsage},
		{[]string{"chargenet", "serve", "--event-retention", "0s"}, errUsage},
		{[]string{"chargenet", "serve", "--event-retention", "-1h"}, errUsage},
		{[]string{"chargenet", "serve", "--event-retention", "a month"}, errUsage},
		{[]string{"chargenet", "serve", "--read-cache-mb", "-1"}, errUsage},
		{[]string{"chargenet", "serve", "--read-cache-mb", "9007199254740993"}, errUsage},
		{[]string{"chargenet", "serve", "--commit-wait", "-1ms"}, errUsage},
		{[]string{"chargenet", "serve", "--commit-wait", "2s"}, errUsage},
		{[]string{"chargenet", "serve", "--admin-addr", "9090"}, errUsage},
		{[]string{"chargenet", "serve", "--addr", "127.0.0.1:8080", "--admin-addr", "127.0.0.1:8080"}, errUsage},
		{[]string{"chargenet", "serve", "--ocpp-addr", "9000"}, errUsage},
		{[]string{"chargenet", "serve", "--addr", "127.0.0.1:8080", "--ocpp-addr", "127.0.0.1:8080"}, errUsage},
		{[]string{"chargenet", "serve", "--ocpp-addr", ":9000", "--ocpp-tls-cert", "cert.pem"}, errUsage},
		{[]string{"chargenet", "serve", "--ocpp-addr", ":9000", "--ocpp-heartbeat", "0s"}, errUsage},
		{[]string{"chargenet", "serve", "--ocpp-addr", ":9000", "--ocpp-offline-after", "10ms"}, errUsage},
		{[]string{"chargenet", "serve", "--ocpp-authorize", "maybe"}, errUsage},
		{[]string{"chargenet", "chargebox"}, errUsage},
		{[]string{"chargenet", "chargebox", "create"}, errUsage},
		{[]string{"chargenet", "chargebox", "create", "--id", "0"}, errUsage},
		{[]string{"chargenet", "chargebox", "create", "--id", "501", "--identity", "a/b"}, errUsage},
		{[]string{"chargenet", "chargebox", "revoke"}, errUsage},
		{[]string{"chargenet", "backup"}, errUsage},
		{[]string{"chargenet", "backup", "--database", "postgres://u@h/db", "out.db"}, errUsage},
		{[]string{"chargenet", "import"}, errUsage},
		{[]string{"chargenet", "apikey"}, errUsage},
		{[]string{"chargenet", "apikey", "create"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "--scope", "root"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "--scope", "inventory:read", "--scope", "admin"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "env"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "chargebox:1"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "--expires", "yesterday"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "--expires", "-2h"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "--expires", "2020-01-01T00:00:00Z"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "--rate-limit", "many"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "--rate-limit", "10/500ms"}, errUsage},
		{[]string{"chargenet", "apikey", "create", "--name", "x", "extra"}, errUsage},
		{[]string{"chargenet", "apikey", "rotate"}, errUsage},
		{[]string{"chargenet", "apikey", "rotate", "--name", "x", "--overlap", "-1s"}, errUsage},
		{[]string{"chargenet", "apikey", "list", "extra"}, errUsage},
		{[]string{"chargenet", "apikey", "delete"}, errUsage},
		{[]string{"chargenet", "apikey", "revoke"}, errUsage},
		{[]string{"chargenet", "help"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := run(context.Background(), tt.args, env(nil), &out, &errOut)
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
	assert.Contains(t, out.String(), "chargenet serve")
	err := run(context.Background(), []string{"chargenet", "serve"}, env(map[string]string{"CHARGENET_API_KEYS": "short"}), &out, &errOut)
	assert.ErrorIs(t, err, errUsage, "development keys shorter than 16 characters are refused")
}

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	tuneGC(env(map[string]string{"GOGC": "50"}))
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment is left to the runtime")
	tuneGC(env(map[string]string{"GOMEMLIMIT": "1GiB"}))
	assert.Equal(t, 100, debug.SetGCPercent(100), "so is GOMEMLIMIT")
	tuneGC(env(nil))
	assert.Equal(t, gcPercent, debug.SetGCPercent(100), "serve's default")
	assert.Equal(t, int64(gcMemoryLimit), debug.SetMemoryLimit(-1), "with the soft limit")
}

func TestParseSchedule(t *testing.T) {
	got, err := parseSchedule("5s, 5m,30m,2h")
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}, got)
	got, err = parseSchedule("")
	require.NoError(t, err)
	assert.Empty(t, got, "an empty schedule means no retries")
	_, err = parseSchedule("5s,,5m")
	assert.Error(t, err)
}

func TestServeRestartKeepsDataAndCursors(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "data", "chargenet.db")
	vars := map[string]string{"CHARGENET_API_KEYS": devKey, "CHARGENET_DATABASE": db}
	s := startServe(t, vars, "--demo")
	res, body := s.call(t, http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxElectricPower": 11}`)
	require.Equal(t, 200, res.StatusCode, string(body))
	_, body = s.call(t, http.MethodGet, "/v1/locations?limit=50", "")
	var page gen.LocationPage
	require.NoError(t, json.Unmarshal(body, &page))
	require.NotNil(t, page.Pagination.NextCursor)
	res, _ = s.call(t, http.MethodGet, "/v1/locations", "")
	assert.Equal(t, 200, res.StatusCode)
	require.NoError(t, s.stop(), "SIGTERM-like cancellation drains and returns nil")
	assert.Contains(t, s.out.String(), `"msg":"request"`, "structured request log")
	assert.Contains(t, s.out.String(), `"status":200`)
	assert.NotContains(t, s.out.String(), devKey, "the log never contains keys")

	s2 := startServe(t, vars, "--demo")
	res, body = s2.call(t, http.MethodGet, "/v2/evses/1001", "")
	require.Equal(t, 200, res.StatusCode)
	var e gen.EVSE
	require.NoError(t, json.Unmarshal(body, &e))
	assert.Equal(t, 11.0, e.Connectors[0].MaxElectricPower, "the update survived the restart")
	res, body = s2.call(t, http.MethodGet, "/v1/locations?limit=50&cursor="+url.QueryEscape(*page.Pagination.NextCursor), "")
	require.Equal(t, 200, res.StatusCode, "a cursor from before the restart is still valid: %s", body)
	var page2 gen.LocationPage
	require.NoError(t, json.Unmarshal(body, &page2))
	assert.Equal(t, "LOC-0051", page2.Data[0].Id)
	_, body = s2.call(t, http.MethodGet, "/v1/locations?limit=100&cursor="+url.QueryEscape(*page2.Pagination.NextCursor), "")
	var page3 gen.LocationPage
	require.NoError(t, json.Unmarshal(body, &page3))
	assert.Len(t, page3.Data, 20, "--demo on a non-empty database loads nothing twice")
}

func writeFile(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "inventory.json")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

func demoFile(t *testing.T) map[string]any {
	t.Helper()
	inv := chargenet.DemoInventory(time.Now())
	var locs []gen.Location
	for i := range inv.Locations {
		l := wire.Location(&inv.Locations[i])
		l.Version = nil // records not yet stored have none
		locs = append(locs, l)
	}
	var evses []gen.EVSE
	for i := range inv.EVSEs {
		e := wire.EVSE(&inv.EVSEs[i])
		e.Version = nil
		evses = append(evses, e)
	}
	return map[string]any{"locations": locs, "evses": evses}
}

func TestImport(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "chargenet.db")
	vars := map[string]string{"CHARGENET_DATABASE": db, "CHARGENET_API_KEYS": devKey}

	bad := demoFile(t)
	evses := bad["evses"].([]gen.EVSE)
	evses[2].EvseId = "not-an-evse-id"
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"chargenet", "import", writeFile(t, bad)}, env(vars), &out, &errOut)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "evses[2].evseId")

	bad = demoFile(t)
	evses = bad["evses"].([]gen.EVSE)
	evses[4].Connectors[0].Standard = "CHADEMO" // on an AC connector
	err = run(context.Background(), []string{"chargenet", "import", writeFile(t, bad)}, env(vars), &out, &errOut)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "evses[4]", "the first bad record is named")

	require.NoError(t, run(context.Background(), []string{"chargenet", "import", writeFile(t, demoFile(t))}, env(vars), &out, &errOut))
	assert.Contains(t, out.String(), "imported 120 locations and 40 EVSEs")
	err = run(context.Background(), []string{"chargenet", "import", writeFile(t, demoFile(t))}, env(vars), &out, &errOut)
	require.Error(t, err, "importing the same records twice conflicts")
	assert.Contains(t, err.Error(), "nothing imported")

	s := startServe(t, vars)
	_, body := s.call(t, http.MethodGet, "/v1/locations?limit=100", "")
	var page gen.LocationPage
	require.NoError(t, json.Unmarshal(body, &page))
	assert.Len(t, page.Data, 100)
	assert.True(t, page.Pagination.HasMore)
}

func TestAPIKeyCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chargenet.db")
	vars := map[string]string{"CHARGENET_DATABASE": "sqlite:" + path}
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"chargenet", "migrate"}, env(vars), &out, &errOut))
	assert.Contains(t, out.String(), "up to date")
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"chargenet", "apikey", "create", "--name", "partner-a"}, env(vars), &out, &errOut))
	key := strings.TrimSpace(out.String())
	require.True(t, strings.HasPrefix(key, "cn_"), key)
	err := run(context.Background(), []string{"chargenet", "apikey", "create", "--name", "partner-a"}, env(vars), &out, &errOut)
	assert.ErrorIs(t, err, chargenet.ErrConflict, "names are unique")

	s := startServe(t, vars)
	req, _ := http.NewRequest(http.MethodGet, s.base+"/v1/locations", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 200, res.StatusCode, "the created key works")
	require.NoError(t, s.stop())

	raw := readAll(t, filepath.Dir(path))
	assert.NotContains(t, raw, key, "only the hash of a key is stored")

	require.NoError(t, run(context.Background(), []string{"chargenet", "apikey", "revoke", "partner-a"}, env(vars), &out, &errOut))
	err = run(context.Background(), []string{"chargenet", "apikey", "revoke", "partner-a"}, env(vars), &out, &errOut)
	assert.ErrorIs(t, err, chargenet.ErrNotFound)
	s = startServe(t, vars)
	req, _ = http.NewRequest(http.MethodGet, s.base+"/v1/locations", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err = client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 403, res.StatusCode, "a revoked key is refused")
	require.NoError(t, s.stop())
}

// TestChargeboxCommands registers a charge box, replaces its password and revokes it
// through the command line.
func TestChargeboxCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chargenet.db")
	vars := map[string]string{"CHARGENET_DATABASE": "sqlite:" + path}
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"chargenet", "chargebox", "create", "--id", "501"}, env(vars), &out, &errOut))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	first := lines[len(lines)-1]
	assert.Regexp(t, `^[A-Za-z0-9]{32}$`, first, "the password alone on the last line of standard output")
	assert.Contains(t, errOut.String(), `identity "501"`, "the identity defaults to the id")
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"chargenet", "chargebox", "create", "--id", "501", "--identity", "CB-501"}, env(vars), &out, &errOut))
	second := strings.TrimSpace(out.String())
	assert.NotEqual(t, first, second, "create again replaces the password")
	store, err := openStore(context.Background(), &config{Database: "sqlite:" + path}, nil, 0)
	require.NoError(t, err)
	c, err := store.Chargebox(context.Background(), 501)
	require.NoError(t, err)
	assert.Equal(t, "CB-501", c.Identity)
	assert.True(t, c.CheckPassword(second))
	assert.False(t, c.CheckPassword(first))
	require.NoError(t, store.Close())
	assert.NotContains(t, readAll(t, filepath.Dir(path)), second, "only the hash of a password is stored")

	err = run(context.Background(), []string{"chargenet", "chargebox", "create", "--id", "502", "--identity", "CB-501"}, env(vars), &out, &errOut)
	assert.ErrorIs(t, err, chargenet.ErrConflict, "identities are unique")
	require.NoError(t, run(context.Background(), []string{"chargenet", "chargebox", "revoke", "--id", "501"}, env(vars), &out, &errOut))
	err = run(context.Background(), []string{"chargenet", "chargebox", "revoke", "--id", "501"}, env(vars), &out, &errOut)
	assert.ErrorIs(t, err, chargenet.ErrNotFound)
}

// readAll concatenates every file of the database directory (main file, WAL, SHM).
func readAll(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var all strings.Builder
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		all.Write(b)
	}
	require.Greater(t, all.Len(), 0, fmt.Sprintf("database files in %s", dir))
	return all.String()
}

func TestEventRetentionConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want time.Duration
		err  bool
	}{
		{"default", nil, nil, 720 * time.Hour, false},
		{"environment", nil, map[string]string{"CHARGENET_EVENT_RETENTION": "48h"}, 48 * time.Hour, false},
		{"flag over environment", []string{"--event-retention", "90m"}, map[string]string{"CHARGENET_EVENT_RETENTION": "48h"}, 90 * time.Minute, false},
		{"environment not a duration", nil, map[string]string{"CHARGENET_EVENT_RETENTION": "a month"}, 0, true},
		{"zero", []string{"--event-retention", "0"}, nil, 0, true},
		{"negative", []string{"--event-retention", "-24h"}, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			cfg, _, err := parse("serve", tt.args, env(tt.vars), &errOut, true, nil)
			if tt.err {
				require.ErrorIs(t, err, errUsage)
				assert.Contains(t, err.Error(), "--event-retention")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.EventRetention)
		})
	}
}

// testClock is a clock that moves only when the test moves it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestAPIKeyLifecycleCommands creates a key with scopes, an expiry and a rate limit,
// lists it, rotates it with and without an overlap, and checks each against a running
// server. The commands and the server read one clock that the test moves, so that a key
// expires when the test says, however slow the machine.
func TestAPIKeyLifecycleCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chargenet.db")
	vars := map[string]string{"CHARGENET_DATABASE": "sqlite:" + path}
	clock := &testClock{t: time.Now().UTC().Truncate(time.Second)}
	apikey := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		require.NoError(t, runClock(context.Background(), append([]string{"chargenet", "apikey"}, args...), env(vars), &out, &errOut, clock.now), errOut.String())
		return out.String()
	}
	lastLine := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		return lines[len(lines)-1]
	}
	reader := lastLine(apikey("create", "--name", "emsp-acme", "--scope", "inventory:read", "--scope", "webhooks",
		"--expires", "90d", "--rate-limit", "2/1m"))
	require.Regexp(t, `^cn_[A-Za-z0-9_-]{43}$`, reader)
	short := lastLine(apikey("create", "--name", "short-lived", "--expires", "2s"))

	list := apikey("list")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	require.Len(t, lines, 3, list)
	assert.Regexp(t, `^NAME +SCOPES +CREATED +EXPIRES +RATE LIMIT +LAST USED +OLD SECRET UNTIL$`, lines[0])
	assert.Regexp(t, `^emsp-acme +inventory:read,webhooks +\S+Z +\S+Z +2/1m0s +never +-$`, lines[1])
	assert.Regexp(t, `^short-lived +partner +\S+Z +\S+Z +default +never +-$`, lines[2])
	assert.NotContains(t, list, reader, "list shows no secret")

	get := func(s *serving, key, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	s := startServeClock(t, vars, clock.now)
	status, body := get(s, short, "/v1/locations")
	assert.Equal(t, 200, status, "the short-lived key works until it expires: %s", body)
	status, _ = get(s, reader, "/v1/locations")
	assert.Equal(t, 200, status, "the key reads")
	status, body = get(s, reader, "/emsp/v1/events")
	assert.Equal(t, 403, status)
	assert.Contains(t, body, `"scope":"events:read"`, "it holds no other scope")
	status, _ = get(s, reader, "/v1/locations")
	assert.Equal(t, 200, status)
	status, body = get(s, reader, "/v1/locations")
	assert.Equal(t, 429, status, "its own rate limit: 2 per minute (the refusal of the scope did not count)")
	assert.Contains(t, body, "rate_limited")
	clock.advance(2 * time.Second)
	status, body = get(s, short, "/v1/locations")
	assert.Equal(t, 403, status, "the short-lived key expires 2 s after its creation")
	assert.Contains(t, body, `"code":"key_expired"`)
	require.NoError(t, s.stop(), "stopping writes the uses noted")

	list = apikey("list")
	assert.Regexp(t, `(?m)^emsp-acme .* \d{4}-\d\d-\d\dT\d\d:\d\d:00Z +-$`, list, "the last use, to the minute")
	assert.Regexp(t, `(?m)^short-lived .*\(expired\)`, list)

	var out, errOut bytes.Buffer
	require.NoError(t, runClock(context.Background(), []string{"chargenet", "apikey", "rotate", "--name", "emsp-acme", "--overlap", "1h"},
		env(vars), &out, &errOut, clock.now))
	rotated := lastLine(out.String())
	require.Regexp(t, `^cn_[A-Za-z0-9_-]{43}$`, rotated, "the new key alone on the last line")
	assert.Equal(t, rotated, strings.TrimSpace(out.String()), "stdout holds the key alone")
	assert.Contains(t, errOut.String(), "old secret works until")
	assert.Regexp(t, `(?m)^emsp-acme .* \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, apikey("list"), "the overlap shows")

	s = startServeClock(t, vars, clock.now)
	status, _ = get(s, rotated, "/v1/locations")
	assert.Equal(t, 200, status, "the new secret works")
	status, _ = get(s, reader, "/v1/locations")
	assert.Equal(t, 200, status, "the old one too, during the overlap")
	require.NoError(t, s.stop())

	third := lastLine(apikey("rotate", "--name", "emsp-acme", "--overlap", "0s"))
	clock.advance(time.Second)
	s = startServeClock(t, vars, clock.now)
	status, body = get(s, rotated, "/v1/locations")
	assert.Equal(t, 403, status, "no overlap: the replaced secret stops at once")
	assert.Contains(t, body, `"code":"key_expired"`)
	status, body = get(s, reader, "/v1/locations")
	assert.Equal(t, 403, status, "the secret before it is unknown")
	assert.Contains(t, body, `"code":"unauthorized"`)
	status, _ = get(s, third, "/v1/locations")
	assert.Equal(t, 200, status)
	require.NoError(t, s.stop())

	err := run(context.Background(), []string{"chargenet", "apikey", "rotate", "--name", "nobody"}, env(vars), &out, &errOut)
	assert.ErrorIs(t, err, chargenet.ErrNotFound)
}
