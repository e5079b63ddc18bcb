package ocpi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/client"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/outbox"
	"github.com/chargenet/chargenet/postgres"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/stretchr/testify/require"
)

const apiKey = "ocpi-test-key-0123456789"

// backends are the stores every proof runs on: SQLite, and PostgreSQL when
// CHARGENET_TEST_POSTGRES names a cluster.
var backends = []struct {
	name string
	open func(t *testing.T, hooks *chargenet.Hooks) chargenet.Store
}{
	{"sqlite", func(t *testing.T, hooks *chargenet.Hooks) chargenet.Store {
		s, err := sqlite.Open(t.Context(), sqlitetest.NewFile(t), sqlite.WithHooks(hooks))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T, hooks *chargenet.Hooks) chargenet.Store {
		s, err := postgres.Open(t.Context(), proctest.PostgresDatabase(t), postgres.Options{MaxConns: 8, Hooks: hooks})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
}

// forEachBackend runs test on each store, with the demo inventory loaded.
func forEachBackend(t *testing.T, test func(t *testing.T, cn *chargenetUnderTest)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			hooks := new(chargenet.Hooks)
			s := b.open(t, hooks)
			require.NoError(t, s.Import(t.Context(), chargenet.DemoInventory(time.Now().Add(-time.Hour))))
			test(t, start(t, s, hooks))
		})
	}
}

// chargenetUnderTest is chargenet serving the REST API and OCPI over one store, with
// the webhook dispatcher making the pushes.
type chargenetUnderTest struct {
	store  chargenet.Store
	svc    *ocpi.Service
	url    string
	rest   *client.Client
	ingest string // an ingest key
}

// retrySchedule is short, so that a test sees a partner that was down catch up.
var retrySchedule = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
	time.Second, time.Second, time.Second, time.Second, time.Second, time.Second}

// start serves store, opened with hooks, on a loopback port: OCPI as NL CNE, pushes
// allowed to loopback.
func start(t *testing.T, store chargenet.Store, hooks *chargenet.Hooks) *chargenetUnderTest {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cursors := chargenet.NewCursorCodec([]byte("0123456789abcdef0123456789abcdef"))
	svc, err := ocpi.New(ocpi.Config{Store: store, Party: ocpi.Party{CountryCode: "NL", PartyID: "CNE", Name: "chargenet test"},
		PublicURL: base, AllowInsecure: true, Cursors: cursors, Logger: logger})
	require.NoError(t, err)
	d, err := outbox.New(outbox.Config{Store: store, Schedule: retrySchedule, Jitter: -1, Timeout: 2 * time.Second,
		Poll: 50 * time.Millisecond, AllowInsecure: true, Pusher: svc, Logger: logger})
	require.NoError(t, err)
	api, err := ocpi.NewHTTP(svc)
	require.NoError(t, err)
	h, err := server.New(server.Config{Store: store, Keys: server.NewKeys(store, []string{apiKey}), Cursors: cursors,
		OCPI: api, Notify: d.Notify, Logger: logger})
	require.NoError(t, err)
	srv.Config.Handler = h
	srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	hooks.OnEvents(d.Notify)
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; srv.Close() })

	rest, err := client.New(base, client.WithAPIKey(apiKey),
		client.WithHTTPClient(&http.Client{Transport: apitest.Transport(t, nil)}))
	require.NoError(t, err)
	ingest := "ingest-" + chargenet.NewID("", time.Now())
	require.NoError(t, store.CreateAPIKey(t.Context(), chargenet.APIKey{Name: "ingest", Hash: chargenet.HashAPIKey(ingest),
		Scopes: []string{chargenet.ScopeIngest}, CreatedAt: time.Now()}))
	return &chargenetUnderTest{store: store, svc: svc, url: base, rest: rest, ingest: ingest}
}

// waitPushed waits until no push is pending.
func (cn *chargenetUnderTest) waitPushed(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, err := cn.store.OutboxStats(t.Context())
		require.NoError(t, err)
		if s.PendingPushes == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pushes still pending after %s", s.PendingPushes, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
