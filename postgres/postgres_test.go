package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/chargenet/chargenet/postgres"
	"github.com/chargenet/chargenet/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests need a PostgreSQL server: CHARGENET_TEST_POSTGRES is the URL of a database
// on it whose user may create databases (scripts/pg-test-cluster.sh starts one). Each
// store the tests open lives in a schema of its own, in a database that this process
// creates with a linguistic default collation where the server has ICU, so that the
// tests show that the store orders location ids byte by byte regardless.

var testDB struct {
	once  sync.Once
	admin *pgxpool.Pool // on CHARGENET_TEST_POSTGRES
	pool  *pgxpool.Pool // on the database of this process
	url   string        // of the database of this process
	name  string
	note  string // which default collation it has
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testDB.pool != nil {
		testDB.pool.Close()
	}
	if testDB.admin != nil {
		_, _ = testDB.admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+testDB.name+` WITH (FORCE)`)
		testDB.admin.Close()
	}
	os.Exit(code)
}

// adminURL returns CHARGENET_TEST_POSTGRES, skipping tb if it is unset.
func adminURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("CHARGENET_TEST_POSTGRES")
	if u == "" {
		tb.Skip("CHARGENET_TEST_POSTGRES not set")
	}
	return u
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// withDatabase returns the connection URL u with the database name replaced, or for a
// key=value connection string with dbname appended.
func withDatabase(tb testing.TB, u, name string) string {
	tb.Helper()
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		parsed, err := url.Parse(u)
		require.NoError(tb, err)
		parsed.Path = "/" + name
		return parsed.String()
	}
	return u + " dbname=" + name
}

// withParam returns u with one more run-time parameter.
func withParam(u, key, value string) string {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		return u + sep + url.QueryEscape(key) + "=" + url.QueryEscape(value)
	}
	return u + " " + key + "=" + value
}

// createDatabase creates an empty database on the admin connection, with an ICU en-US
// default collation if the server supports it, and returns its name and a note on its
// collation.
func createDatabase(ctx context.Context, admin *pgxpool.Pool, name string) (string, error) {
	_, err := admin.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8' `+
		`LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.utf8'`)
	if err == nil {
		return "ICU en-US", nil
	}
	if _, err2 := admin.Exec(ctx, `CREATE DATABASE `+name); err2 != nil {
		return "", fmt.Errorf("%w (with ICU: %v)", err2, err)
	}
	return "the server's default (no ICU: " + err.Error() + ")", nil
}

// processDB returns the pool and URL of this process's test database, creating it on
// first use.
func processDB(tb testing.TB) (*pgxpool.Pool, string) {
	tb.Helper()
	admin := adminURL(tb)
	testDB.once.Do(func() {
		ctx := context.Background()
		if testDB.admin, testDB.err = pgxpool.New(ctx, admin); testDB.err != nil {
			return
		}
		testDB.name = randomName("chargenet_t_")
		if testDB.note, testDB.err = createDatabase(ctx, testDB.admin, testDB.name); testDB.err != nil {
			return
		}
		testDB.url = withDatabase(tb, admin, testDB.name)
		testDB.pool, testDB.err = pgxpool.New(ctx, testDB.url)
	})
	require.NoError(tb, testDB.err, "creating the test database")
	return testDB.pool, testDB.url
}

// NewSchemaURL returns the URL of a fresh, empty schema of the test database, first in
// the search path, dropped when tb ends.
func NewSchemaURL(tb testing.TB) string {
	tb.Helper()
	pool, u := processDB(tb)
	name := randomName("s_")
	_, err := pool.Exec(tb.Context(), `CREATE SCHEMA `+name)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_, err := pool.Exec(context.Background(), `DROP SCHEMA `+name+` CASCADE`)
		assert.NoError(tb, err, "dropping schema %s", name)
	})
	return withParam(u, "search_path", name)
}

// NewDatabaseURL returns the URL of a fresh, empty database, dropped when tb ends.
func NewDatabaseURL(tb testing.TB) string {
	tb.Helper()
	processDB(tb)
	name := randomName("chargenet_t_")
	_, err := createDatabase(tb.Context(), testDB.admin, name)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_, err := testDB.admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		assert.NoError(tb, err, "dropping database %s", name)
	})
	return withDatabase(tb, adminURL(tb), name)
}

// MustOpenDB returns a new, empty, migrated store in a schema of its own, closed and
// dropped when tb ends. It skips tb when CHARGENET_TEST_POSTGRES is unset.
func MustOpenDB(tb testing.TB) *postgres.Store {
	tb.Helper()
	return mustOpenWith(tb, postgres.Options{MaxConns: 8})
}

// mustOpenWith is MustOpenDB with opts.
func mustOpenWith(tb testing.TB, opts postgres.Options) *postgres.Store {
	tb.Helper()
	u := NewSchemaURL(tb)
	s, err := postgres.Open(tb.Context(), u, opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// mustOpenDemo returns a store like MustOpenDB holding the demo inventory, and a pool
// on its schema for the plain SQL a test runs beside the store (closed when tb ends).
func mustOpenDemo(tb testing.TB) (*postgres.Store, *pgxpool.Pool) {
	tb.Helper()
	u := NewSchemaURL(tb)
	s, err := postgres.Open(tb.Context(), u, postgres.Options{})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	require.NoError(tb, s.Import(tb.Context(), chargenet.DemoInventory(time.Now())))
	db, err := pgxpool.New(tb.Context(), u)
	require.NoError(tb, err)
	tb.Cleanup(db.Close)
	return s, db
}

func TestStore(t *testing.T) {
	adminURL(t)
	storetest.Run(t, func(t testing.TB, o storetest.Options) chargenet.Store {
		return mustOpenWith(t, postgres.Options{MaxConns: 8, Hooks: o.Hooks, CommitWait: o.CommitWait, CommitWaitTarget: o.CommitWaitTarget})
	})
}

// migrationFiles returns the names of the embedded migrations, as the source tree has
// them.
func migrationFiles(t *testing.T) []string {
	paths, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	slices.Sort(names)
	return names
}

func migrationNames(ms []postgres.Migration) []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names
}

func TestMigrateIdempotent(t *testing.T) {
	u := NewSchemaURL(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, u, postgres.Options{})
	require.NoError(t, err)
	defer s.Close()
	first, err := s.Migrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, migrationFiles(t), migrationNames(first))

	require.NoError(t, s.Migrate(ctx), "migrating again")
	again, err := s.Migrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, first, again, "nothing applied twice")

	s2, err := postgres.Open(ctx, u, postgres.Options{})
	require.NoError(t, err, "opening a migrated database")
	defer s2.Close()
	reopened, err := s2.Migrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, first, reopened)
}

// TestOpenConcurrent opens 4 stores on one empty database at once, as replicas starting
// together do: all succeed, and each migration is applied once (a second application
// would fail on CREATE TABLE of an existing table, and so would a race on creating the
// migrations table).
func TestOpenConcurrent(t *testing.T) {
	const n = 4
	u := NewDatabaseURL(t)
	ctx := t.Context()
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(ctx, u, postgres.Options{})
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "store %d", i)
		defer stores[i].Close()
	}
	ms, err := stores[0].Migrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, migrationFiles(t), migrationNames(ms), "each migration recorded once")
	for i := 1; i < n; i++ {
		other, err := stores[i].Migrations(ctx)
		require.NoError(t, err)
		assert.Equal(t, ms, other)
	}
	require.NoError(t, stores[1].Import(ctx, chargenet.DemoInventory(time.Now())))
	l, err := stores[3].Location(ctx, "LOC-0001")
	require.NoError(t, err)
	assert.Equal(t, []int64{1001, 1002}, l.EvseUIDs, "the stores share the database")
}

// TestLocationIDsCompareBytewise checks that lists order location ids as Go compares
// strings, byte by byte, in a database whose default collation (ICU en-US, where
// available) sorts "_x" and "a" before "B".
func TestLocationIDsCompareBytewise(t *testing.T) {
	s := MustOpenDB(t)
	ctx := t.Context()
	t.Logf("test database collation: %s", testDB.note)
	ids := []string{"a", "B", "_x", "-y", "9", "Z", "b_", "b-", "bA", "ba", "A-1", "A_1", "A1"}
	inv := &chargenet.Inventory{}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, id := range ids {
		inv.Locations = append(inv.Locations, chargenet.Location{ID: id, Name: "n", Address: "a", City: "c",
			Country: "DEU", TimeZone: "UTC", LastUpdated: now})
	}
	require.NoError(t, s.Import(ctx, inv))
	sorted := slices.Sorted(slices.Values(ids))

	read := func(seek chargenet.Seek[string]) []string {
		ls, err := s.ListLocations(ctx, seek)
		require.NoError(t, err)
		out := []string{}
		for _, l := range ls {
			out = append(out, l.ID)
		}
		return out
	}
	assert.Equal(t, sorted, read(chargenet.Seek[string]{Limit: 100}))
	reversed := slices.Clone(sorted)
	slices.Reverse(reversed)
	assert.Equal(t, reversed, read(chargenet.Seek[string]{Backward: true, Limit: 100}))
	for i, key := range sorted {
		assert.Equal(t, sorted[i+1:], read(chargenet.Seek[string]{Key: key, HasKey: true, Limit: 100}), "after %q", key)
		before := slices.Clone(sorted[:i])
		slices.Reverse(before)
		assert.Equal(t, before, read(chargenet.Seek[string]{Key: key, HasKey: true, Backward: true, Limit: 100}), "before %q", key)
	}
}

// TestKeysetReadsKeepAGenericPlan runs a location page reached through a cursor as the
// store sends it (from the cursor's own item on), as a prepared statement on one
// connection: PostgreSQL must come to run it on a
// cached generic plan instead of planning each read again with its values. The table
// holds 20,000 locations: on a few thousand, PostgreSQL takes the generic plan even
// for LIMIT $n, whose estimate grows with the table.
func TestKeysetReadsKeepAGenericPlan(t *testing.T) {
	ctx := t.Context()
	u := NewSchemaURL(t)
	s, err := postgres.Open(ctx, u, postgres.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	inv := &chargenet.Inventory{}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range 20000 {
		inv.Locations = append(inv.Locations, chargenet.Location{ID: fmt.Sprintf("L%05d", i), Name: "n", Address: "a",
			City: "c", Country: "DEU", TimeZone: "UTC", LastUpdated: now})
	}
	require.NoError(t, s.Import(ctx, inv))
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `ANALYZE locations`)
	require.NoError(t, err)

	query, args := postgres.LocationPageForTest(chargenet.Seek[string]{Key: "L19990", HasKey: true, Inclusive: true, Limit: 27})
	for range 8 {
		rows, err := conn.Query(ctx, query, args...)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
			var id string
			var doc []byte
			return id, row.Scan(&id, &doc)
		})
		require.NoError(t, err)
		require.Len(t, ids, 10)
		assert.Equal(t, "L19990", ids[0])
	}
	var generic, custom int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		query).Scan(&generic, &custom))
	assert.Positive(t, generic, "executions on the generic plan (custom plans: %d)", custom)
}

// TestListEVSEsSnapshot lists EVSEs while their connectors are updated: each EVSE read
// must show the connectors of its Version. Every update sets MaxVoltage to 100 +
// the Version it creates (through If-Match), so a read that mixed two versions breaks
// MaxVoltage == 100 + Version.
func TestListEVSEsSnapshot(t *testing.T) {
	s := MustOpenDB(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	inv := &chargenet.Inventory{}
	for uid := int64(1); uid <= 3; uid++ {
		inv.EVSEs = append(inv.EVSEs, chargenet.EVSE{UID: uid, EvseID: fmt.Sprintf("DE*TST*E%d", uid), ChargeboxID: 1,
			Status: chargenet.StatusAvailable, LastUpdated: now, Connectors: []chargenet.Connector{{
				ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
				MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 101,
			}}})
	}
	require.NoError(t, s.Import(ctx, inv))

	const updates = 150
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			uid := int64(w%3 + 1)
			for n := 0; n < updates; {
				e, err := s.EVSE(ctx, uid)
				if !assert.NoError(t, err) {
					return
				}
				v := float64(100 + e.Version + 1)
				_, err = s.UpdateConnector(ctx, uid, 1, chargenet.ConnectorPatch{MaxVoltage: &v}, e.ETag(), "", time.Now())
				if errors.Is(err, chargenet.ErrPreconditionFailed) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				n++
			}
		})
	}
	var reads int
	rg := sync.WaitGroup{}
	rg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			list, err := s.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 10})
			if !assert.NoError(t, err) {
				return
			}
			for _, e := range list {
				if !assert.Equal(t, float64(100+e.Version), e.Connectors[0].MaxVoltage, "EVSE %d at version %d", e.UID, e.Version) {
					return
				}
			}
			reads++
		}
	})
	wg.Wait()
	close(done)
	rg.Wait()
	t.Logf("%d list reads checked", reads)
	list, err := s.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 10})
	require.NoError(t, err)
	for _, e := range list {
		assert.Equal(t, int64(1+updates), e.Version)
	}
}

// TestStatementTimeout waits for a row lock longer than Options.StatementTimeout: the
// update fails promptly with ErrUnavailable, while reads, which take no row lock, go on.
func TestStatementTimeout(t *testing.T) {
	u := NewSchemaURL(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, u, postgres.Options{StatementTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Import(ctx, chargenet.DemoInventory(time.Now())))

	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM evses WHERE uid = 1001 FOR UPDATE`)
	require.NoError(t, err)

	patch := chargenet.ConnectorPatch{MaxVoltage: new(230.0)}
	start := time.Now()
	_, err = s.UpdateConnector(ctx, 1001, 1, patch, "", "", time.Now())
	requireUnavailable(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "57014", pe.Code, "query_canceled by statement_timeout")

	_, err = s.EVSE(ctx, 1001)
	require.NoError(t, err, "a read does not wait for the row lock")
	require.NoError(t, tx.Rollback(ctx))
	e, err := s.UpdateConnector(ctx, 1001, 1, patch, "", "", time.Now())
	require.NoError(t, err, "the lock is released")
	assert.Equal(t, int64(2), e.Version)
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	_, err := postgres.Open(ctx, "postgres://localhost:notaport/x", postgres.Options{})
	assert.Error(t, err, "a malformed URL")
	assert.NotErrorIs(t, err, chargenet.ErrUnavailable)
	_, err = postgres.Open(ctx, "postgres://localhost/x", postgres.Options{MinConns: 5, MaxConns: 2})
	assert.ErrorContains(t, err, "MinConns")
}

// requireUnavailable checks that err is the store's ErrUnavailable error.
func requireUnavailable(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, chargenet.ErrUnavailable, "got %v", err)
	var de *chargenet.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, chargenet.CodeUnavailable, de.Code)
	assert.Equal(t, "database unavailable", de.Message)
}

// TestOpenUnavailable opens a store on a port where no server listens. It needs no
// database.
func TestOpenUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	start := time.Now()
	_, err = postgres.Open(t.Context(), "postgres://postgres@"+addr+"/x?sslmode=disable", postgres.Options{})
	requireUnavailable(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestUnavailable stops the database under an open store: every method fails promptly
// with ErrUnavailable; once the database is back, the same store works again.
func TestUnavailable(t *testing.T) {
	adminURL(t)
	c := proctest.StartCluster(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, c.URL, postgres.Options{MaxConns: 8, ConnectTimeout: 3 * time.Second})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Import(ctx, chargenet.DemoInventory(time.Now())))
	want, err := s.EVSE(ctx, 1001)
	require.NoError(t, err)
	// concurrently reads want through several connections at once, all of which stay in
	// the pool.
	concurrently := func(t *testing.T) {
		t.Helper()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				got, err := s.EVSE(ctx, 1001)
				if assert.NoError(t, err) {
					assert.Equal(t, want, got)
				}
			})
		}
		wg.Wait()
	}
	concurrently(t)
	require.NoError(t, s.Ping(ctx))

	c.Stop(t)

	// The calls run without a deadline of their own: the store must not hang.
	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"Ping", func(ctx context.Context) error { return s.Ping(ctx) }},
		{"EVSE", func(ctx context.Context) error { _, err := s.EVSE(ctx, 1001); return err }},
		{"ListLocations", func(ctx context.Context) error {
			_, err := s.ListLocations(ctx, chargenet.Seek[string]{Limit: 10})
			return err
		}},
		{"UpdateConnector", func(ctx context.Context) error {
			_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxVoltage: new(230.0)}, "", "", time.Now())
			return err
		}},
		{"Setting", func(ctx context.Context) error { _, err := s.Setting(ctx, "k", "v"); return err }},
		{"Ping again", func(ctx context.Context) error { return s.Ping(ctx) }},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.call(ctx)
			elapsed := time.Since(start)
			requireUnavailable(t, err)
			assert.Less(t, elapsed, 5*time.Second, "failed after %v", elapsed)
			t.Logf("%v after %v", err, elapsed.Round(time.Millisecond))
		})
	}

	c.Start(t)
	// No retry: the pooled connections of before the restart must not fail a call.
	require.NoError(t, s.Ping(ctx), "Ping once the database is back, on the same store")
	concurrently(t)
}

// BenchmarkImport imports 1,000,000 locations and 100,000 EVSEs with two connectors
// each into an empty store, in one Import. Run it with -benchtime=1x: every iteration
// holds its data until the benchmark ends.
func BenchmarkImport(b *testing.B) {
	const locations, evses = 1_000_000, 100_000
	now := time.Now().UTC().Truncate(time.Microsecond)
	inv := &chargenet.Inventory{Locations: make([]chargenet.Location, locations), EVSEs: make([]chargenet.EVSE, evses)}
	for i := range inv.Locations {
		inv.Locations[i] = chargenet.Location{ID: fmt.Sprintf("LOC-%07d", i), Name: "Charging hub", Address: "Hauptstrasse 1",
			City: "Berlin", PostalCode: "10178", Country: "DEU", Latitude: 52.52, Longitude: 13.405,
			TimeZone: "Europe/Berlin", LastUpdated: now}
	}
	for i := range inv.EVSEs {
		inv.EVSEs[i] = chargenet.EVSE{UID: int64(i + 1), EvseID: fmt.Sprintf("DE*CNT*E%d", i+1), ChargeboxID: int64(i/2 + 1),
			LocationID: inv.Locations[i*7].ID, Status: chargenet.StatusAvailable, LastUpdated: now,
			Connectors: []chargenet.Connector{
				{ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
					MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{"AC"}},
				{ID: 2, Standard: chargenet.StandardIEC62196T2Combo, Format: chargenet.FormatCable, PowerType: chargenet.PowerDC,
					MaxElectricPower: 150, MaxAmperage: 375, MaxVoltage: 920, TariffIDs: []string{"DC", "ROAMING"}},
			}}
	}
	for range b.N {
		b.StopTimer()
		s := MustOpenDB(b)
		b.StartTimer()
		require.NoError(b, s.Import(b.Context(), inv))
	}
}

func benchStore(b *testing.B, subscribed bool) *postgres.Store {
	s := MustOpenDB(b)
	require.NoError(b, s.Import(b.Context(), chargenet.DemoInventory(time.Now())))
	if subscribed {
		w := storetest.NewWebhook("bench", time.Now(), chargenet.EventConnectorUpdated)
		require.NoError(b, s.CreateWebhook(b.Context(), &w, nil))
	}
	b.ResetTimer()
	return s
}

// BenchmarkEVSE reads one EVSE with its connectors, from parallel goroutines.
func BenchmarkEVSE(b *testing.B) {
	s := benchStore(b, false)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.EVSE(context.Background(), 1004); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUpdateConnector is the PATCH transaction (lock, read, update, version bump,
// commit), from parallel goroutines on different EVSEs; Subscribed adds the event and
// outbox rows a subscribed webhook causes.
func BenchmarkUpdateConnector(b *testing.B) {
	for _, subscribed := range []bool{false, true} {
		name := "unsubscribed"
		if subscribed {
			name = "subscribed"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, subscribed)
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				uid := 1001 + next.Add(1)%40 // one EVSE per goroutine: no lock waits between them
				i := 0
				for pb.Next() {
					i++
					p := chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(i%20 + 1))}
					if _, err := s.UpdateConnector(context.Background(), uid, 1, p, "", "", time.Now()); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
func ptr[T any](v T) *T { return &v }
