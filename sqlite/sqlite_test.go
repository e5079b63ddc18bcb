package sqlite_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/chargenet/chargenet/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MustOpenDB opens a store on a new database file in a temporary directory and closes
// it when tb ends. The file starts as a copy of a migrated one (sqlitetest.NewFile).
func MustOpenDB(tb testing.TB) *sqlite.Store {
	tb.Helper()
	return openDB(tb)
}

// openDB is MustOpenDB with opts.
func openDB(tb testing.TB, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	return mustOpen(tb, sqlitetest.NewFile(tb), opts...)
}

// memoryImage is the image of an in-memory database that Open created and migrated,
// made once per test process: MustOpenMemoryDB starts each database from it, as
// sqlitetest does for files.
var memoryImage struct {
	once  sync.Once
	image []byte
	err   error
}

// MustOpenMemoryDB opens a store on a new in-memory database and closes it when tb ends.
// The database starts as a copy of a migrated one.
func MustOpenMemoryDB(tb testing.TB) *sqlite.Store {
	tb.Helper()
	return openMemoryDB(tb)
}

// openMemoryDB is MustOpenMemoryDB with opts.
func openMemoryDB(tb testing.TB, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	memoryImage.once.Do(func() {
		ctx := context.Background()
		s, err := sqlite.Open(ctx, ":memory:")
		if err != nil {
			memoryImage.err = err
			return
		}
		memoryImage.image, err = s.SerializeForTest(ctx)
		memoryImage.err = errors.Join(err, s.Close())
	})
	require.NoError(tb, memoryImage.err, "making the migrated in-memory database")
	src := filepath.Join(tb.TempDir(), "migrated.db")
	require.NoError(tb, os.WriteFile(src, memoryImage.image, 0o600))
	s, err := sqlite.OpenMemoryCopyForTest(context.Background(), src, opts...)
	require.NoError(tb, err)
	closeWhenDone(tb, s, ":memory:")
	return s
}

func mustOpen(tb testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), path, opts...)
	require.NoError(tb, err)
	closeWhenDone(tb, s, path)
	return s
}

func closeWhenDone(tb testing.TB, s *sqlite.Store, path string) {
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("closing %s: %v", path, err)
		}
	})
}

// TestMigratedCopies checks that MustOpenDB and MustOpenMemoryDB open what Open makes
// of a new database of their kind: the same schema, the same migrations, no other rows,
// the same journal mode and page size; and that each copy is a database of its own.
func TestMigratedCopies(t *testing.T) {
	tests := []struct {
		name          string
		fresh, copied func(testing.TB) *sqlite.Store
	}{
		{"file", func(tb testing.TB) *sqlite.Store { return mustOpen(tb, filepath.Join(tb.TempDir(), "chargenet.db")) }, MustOpenDB},
		{"memory", func(tb testing.TB) *sqlite.Store { return mustOpen(tb, ":memory:") }, MustOpenMemoryDB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := describeDB(t, tt.fresh(t))
			require.NotEmpty(t, want.migrations)
			copied := tt.copied(t)
			want.assertEqual(t, describeDB(t, copied), "a copy")

			require.NoError(t, copied.Import(t.Context(), chargenet.DemoInventory(time.Now())))
			want.assertEqual(t, describeDB(t, tt.copied(t)), "a copy made after another was written to")
		})
	}
}

// dbDescription is what a test can see of a database besides the times its migrations
// were applied.
type dbDescription struct {
	schema, migrations []string
	rows               map[string]int // of each table but migrations
	journal, pageSize  string
}

func (d dbDescription) assertEqual(t *testing.T, got dbDescription, what string) {
	t.Helper()
	assert.Equal(t, d.schema, got.schema, "schema of %s", what)
	assert.Equal(t, d.migrations, got.migrations, "migrations of %s", what)
	assert.Equal(t, d.rows, got.rows, "rows of %s", what)
	assert.Equal(t, d.journal, got.journal, "journal mode of %s", what)
	assert.Equal(t, d.pageSize, got.pageSize, "page size of %s", what)
}

func describeDB(t *testing.T, s *sqlite.Store) dbDescription {
	t.Helper()
	ctx := t.Context()
	d := dbDescription{rows: map[string]int{}}
	var err error
	d.schema, err = s.SchemaForTest(ctx)
	require.NoError(t, err)
	for _, entry := range d.schema {
		if name, ok := strings.CutPrefix(entry, "table "); ok {
			name, _, _ = strings.Cut(name, " ")
			if name != "migrations" {
				d.rows[name], err = s.CountForTest(ctx, name)
				require.NoError(t, err)
			}
		}
	}
	ms, err := s.Migrations(ctx)
	require.NoError(t, err)
	for _, m := range ms {
		d.migrations = append(d.migrations, m.Name)
	}
	d.journal, _, err = s.PragmaForTest(ctx, "journal_mode")
	require.NoError(t, err)
	d.pageSize, _, err = s.PragmaForTest(ctx, "page_size")
	require.NoError(t, err)
	return d
}

func TestStore(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t testing.TB, o storetest.Options) chargenet.Store { return openDB(t, options(o)...) })
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t testing.TB, o storetest.Options) chargenet.Store { return openMemoryDB(t, options(o)...) })
	})
}

// options returns the options of Open that o asks for.
func options(o storetest.Options) []sqlite.Option {
	return []sqlite.Option{sqlite.WithHooks(o.Hooks), sqlite.WithCommitWait(o.CommitWait, o.CommitWaitTarget)}
}

func TestMigrations(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "db", "chargenet.db") // the directory does not exist yet
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	first, err := s.Migrations(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, first)
	assert.Equal(t, "0001_init.sql", first[0].Name)
	for i, m := range first {
		assert.WithinDuration(t, time.Now(), m.AppliedAt, time.Minute, m.Name)
		if i > 0 {
			assert.Less(t, first[i-1].Name, m.Name, "each migration once, in order")
		}
	}

	require.NoError(t, s.Migrate(ctx), "migrating again")
	again, err := s.Migrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, first, again, "migrating again is a no-op")
	require.NoError(t, s.Close())

	s = mustOpen(t, path)
	reopened, err := s.Migrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, first, reopened, "reopening applies nothing again")
}

// TestOpenConcurrently opens one new database file from several stores at once, as
// replicas or a server and an import command would: the migrations are applied once
// and every store works.
func TestOpenConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chargenet.db")
	const n = 4
	stores := make([]*sqlite.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = sqlite.Open(t.Context(), path)
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		t.Cleanup(func() { assert.NoError(t, stores[i].Close()) })
	}
	want, err := stores[0].Migrations(t.Context())
	require.NoError(t, err)
	for i := range n {
		got, err := stores[i].Migrations(t.Context())
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	inv := chargenet.DemoInventory(time.Now())
	require.NoError(t, stores[1].Import(t.Context(), inv))
	e, err := stores[2].EVSE(t.Context(), 1001)
	require.NoError(t, err)
	assert.Equal(t, inv.EVSEs[0].EvseID, e.EvseID, "one store reads what another wrote")
}

// TestReopen checks that everything written survives closing and reopening the file.
func TestReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chargenet.db")
	s, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Import(ctx, chargenet.DemoInventory(time.Now())))
	updated, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(62.5)}, `"1"`, "", time.Now())
	require.NoError(t, err)
	key := chargenet.APIKey{Name: "k", Hash: chargenet.HashAPIKey("secret"), Scopes: []string{chargenet.ScopeIngest}, CreatedAt: time.Now().UTC()}
	require.NoError(t, s.CreateAPIKey(ctx, key))
	secret, err := s.Setting(ctx, "cursor-secret", "abc")
	require.NoError(t, err)
	evses, err := s.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 100})
	require.NoError(t, err)
	locs, err := s.ListLocations(ctx, chargenet.Seek[string]{Limit: 200})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = mustOpen(t, path)
	got, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, updated, got)
	evses2, err := s.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 100})
	require.NoError(t, err)
	assert.Equal(t, evses, evses2)
	locs2, err := s.ListLocations(ctx, chargenet.Seek[string]{Limit: 200})
	require.NoError(t, err)
	assert.Equal(t, locs, locs2)
	k, err := s.APIKeyByHash(ctx, key.Hash)
	require.NoError(t, err)
	assert.Equal(t, &key, k)
	secret2, err := s.Setting(ctx, "cursor-secret", "other")
	require.NoError(t, err)
	assert.Equal(t, secret, secret2)
}

// TestPragmas checks the settings that durability and concurrency rely on, on the write
// connection and on a read connection.
func TestPragmas(t *testing.T) {
	busy := strconv.Itoa(10_000)
	tests := []struct {
		name        string
		open        func(testing.TB) *sqlite.Store
		pragma      string
		write, read string
	}{
		{"file", MustOpenDB, "journal_mode", "wal", "wal"},
		{"file", MustOpenDB, "synchronous", "2", "2"}, // FULL
		{"file", MustOpenDB, "foreign_keys", "1", "1"},
		{"file", MustOpenDB, "busy_timeout", busy, busy},
		{"file", MustOpenDB, "query_only", "0", "1"},
		{"memory", MustOpenMemoryDB, "synchronous", "2", "2"},
		{"memory", MustOpenMemoryDB, "foreign_keys", "1", "1"},
		{"memory", MustOpenMemoryDB, "busy_timeout", busy, busy},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.pragma, func(t *testing.T) {
			s := tt.open(t)
			w, r, err := s.PragmaForTest(t.Context(), tt.pragma)
			require.NoError(t, err)
			assert.Equal(t, tt.write, w, "write connection")
			assert.Equal(t, tt.read, r, "read connection")
		})
	}
}

// TestOpenPath opens a file whose path holds characters that SQLite URIs escape.
func TestOpenPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir %41", "chargenet.db")
	s := mustOpen(t, path)
	require.NoError(t, s.Import(t.Context(), chargenet.DemoInventory(time.Now())))
	_, err := os.Stat(path)
	assert.NoError(t, err, "the database is at the path given, unescaped")
}

// TestClosed checks that a closed store reports itself unavailable.
func TestClosed(t *testing.T) {
	for _, open := range []func(testing.TB) *sqlite.Store{MustOpenDB, MustOpenMemoryDB} {
		s := open(t)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "closing twice")
		_, err := s.EVSE(t.Context(), 1001)
		assert.ErrorIs(t, err, chargenet.ErrUnavailable)
		_, err = s.UpdateConnector(t.Context(), 1001, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, "", "", time.Now())
		assert.ErrorIs(t, err, chargenet.ErrUnavailable)
		assert.ErrorIs(t, s.Ping(t.Context()), chargenet.ErrUnavailable)
	}
}

// TestCrash kills, with SIGKILL, a process that is updating a connector as fast as it
// can, and checks that every update the process saw acknowledged is in the database.
func TestCrash(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("in the child")
	}
	path := sqlitetest.NewFile(t)
	s := mustOpen(t, path)
	require.NoError(t, s.Import(t.Context(), chargenet.DemoInventory(time.Now())))
	require.NoError(t, s.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(out)
	var acked int64
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
			acked, err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			if acked >= 100 {
				break
			}
		}
	}
	require.NoError(t, cmd.Process.Kill())
	for lines.Scan() { // acknowledgements written before the kill
		if v, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
			acked, err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
		}
	}
	_ = cmd.Wait()
	require.GreaterOrEqual(t, acked, int64(100), "the child acknowledged updates")

	s = mustOpen(t, path)
	e, err := s.EVSE(t.Context(), 1002)
	require.NoError(t, err)
	t.Logf("last acknowledged version %d, stored version %d", acked, e.Version)
	assert.GreaterOrEqual(t, e.Version, acked, "every acknowledged update survived")
	assert.LessOrEqual(t, e.Version, acked+1, "at most the update in flight at the kill is there besides")
	assert.Equal(t, float64(e.Version), e.Connector(1).MaxElectricPower, "the stored value belongs to the stored version")
}

const crashChildEnv = "CHARGENET_CRASH_CHILD_DB"

// TestCrashChild is TestCrash's child process: it updates a connector until it is
// killed, printing "ack VERSION" after each update returns. Each update sets
// MaxElectricPower to the version it creates.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run by TestCrash")
	}
	s, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	for {
		e, err := s.EVSE(context.Background(), 1002)
		require.NoError(t, err)
		p := chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(e.Version + 1))}
		e, err = s.UpdateConnector(context.Background(), 1002, 1, p, e.ETag(), "", time.Now())
		require.NoError(t, err)
		fmt.Printf("ack %d\n", e.Version)
	}
}

func TestOpenMemoryIsolated(t *testing.T) {
	a, b := mustOpen(t, ":memory:"), mustOpen(t, ":memory:")
	require.NoError(t, a.Import(t.Context(), chargenet.DemoInventory(time.Now())))
	_, err := b.EVSE(t.Context(), 1001)
	assert.ErrorIs(t, err, chargenet.ErrNotFound, "a second in-memory store is a separate database")
}

func TestOpenErrors(t *testing.T) {
	_, err := sqlite.Open(t.Context(), "")
	assert.Error(t, err)

	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, []byte("x"), 0o600))
	_, err = sqlite.Open(t.Context(), filepath.Join(notADir, "chargenet.db"))
	assert.Error(t, err, "parent is a file")

	notADB := filepath.Join(t.TempDir(), "garbage.db")
	require.NoError(t, os.WriteFile(notADB, []byte("this is not an SQLite database, not at all, really not"), 0o600))
	_, err = sqlite.Open(t.Context(), notADB)
	assert.Error(t, err, "not a database")
}

// TestImportLarge imports many locations in one go, as `chargenet import` does with a
// large file. CHARGENET_IMPORT_LOCATIONS sets the number (default 5,000; the target is
// 1,000,000 in well under 60 s).
func TestImportLarge(t *testing.T) {
	n := 5_000
	if v := os.Getenv("CHARGENET_IMPORT_LOCATIONS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	if testing.Short() {
		n = min(n, 1000)
	}
	s := MustOpenDB(t)
	inv := largeInventory(n)
	start := time.Now()
	require.NoError(t, s.Import(t.Context(), inv))
	t.Logf("imported %d locations in %v", n, time.Since(start))
	l, err := s.ListLocations(t.Context(), chargenet.Seek[string]{Backward: true, Limit: 1})
	require.NoError(t, err)
	require.Len(t, l, 1)
	assert.Equal(t, inv.Locations[n-1].ID, l[0].ID)
}

func largeInventory(n int) *chargenet.Inventory {
	ts := time.Now().UTC()
	inv := &chargenet.Inventory{Locations: make([]chargenet.Location, n)}
	for i := range inv.Locations {
		inv.Locations[i] = chargenet.Location{
			ID: fmt.Sprintf("L%08d", i), Name: "Site", Address: "Street 1", City: "Berlin", PostalCode: "10115",
			Country: "DEU", Latitude: 52.5, Longitude: 13.4, TimeZone: "Europe/Berlin", LastUpdated: ts,
		}
	}
	return inv
}

func BenchmarkImportLocations(b *testing.B) {
	s := MustOpenDB(b)
	inv := largeInventory(b.N)
	b.ResetTimer()
	if err := s.Import(b.Context(), inv); err != nil {
		b.Fatal(err)
	}
}

func benchStore(b *testing.B) *sqlite.Store {
	s := MustOpenDB(b)
	if err := s.Import(b.Context(), chargenet.DemoInventory(time.Now())); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	return s
}

func BenchmarkEVSE(b *testing.B) {
	s := benchStore(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.EVSE(context.Background(), 1004); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkListEVSEs(b *testing.B) {
	s := benchStore(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.ListEVSEs(context.Background(), chargenet.Seek[int64]{Key: 1010, HasKey: true, Limit: 26}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkListLocations(b *testing.B) {
	s := benchStore(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.ListLocations(context.Background(), chargenet.Seek[string]{Limit: 101}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUpdateConnector measures the PATCH store transaction with GOMAXPROCS
// writers, and with 32 as under the load harness, where the single writer commits the
// updates waiting together in one transaction.
func BenchmarkUpdateConnector(b *testing.B) {
	for _, writers := range []int{runtime.GOMAXPROCS(0), 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			benchUpdates(b, benchStore(b), writers)
		})
	}
}

// benchUpdates runs b.N updates of one connector from about writers goroutines.
func benchUpdates(b *testing.B, s *sqlite.Store, writers int) {
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			p := chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(i%100 + 1))}
			if _, err := s.UpdateConnector(context.Background(), 1002, 1, p, "", "", time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// BenchmarkUpdateConnectorSubscribed is BenchmarkUpdateConnector with a webhook
// subscribed to evse.connector.updated: every update also writes its event and one
// outbox row in the same transaction.
func BenchmarkUpdateConnectorSubscribed(b *testing.B) {
	s := benchStore(b)
	w := storetest.NewWebhook("bench", time.Now(), chargenet.EventConnectorUpdated)
	if err := s.CreateWebhook(b.Context(), &w, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	benchUpdates(b, s, runtime.GOMAXPROCS(0))
}

// TestEventsKeptAfterDelivery checks that every event is stored, with or without a
// subscriber, and stays in the log when its deliveries settle or its webhook is
// deleted: only PruneEvents removes it.
func TestEventsKeptAfterDelivery(t *testing.T) {
	s := MustOpenDB(t)
	ctx := t.Context()
	require.NoError(t, s.Import(ctx, chargenet.DemoInventory(time.Now())))
	now := time.Now()
	count := func(table string) int {
		n, err := s.CountForTest(ctx, table)
		require.NoError(t, err)
		return n
	}
	_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(9.0)}, "", "", now)
	require.NoError(t, err)
	assert.Equal(t, 1, count("events"), "stored without a subscriber")
	assert.Equal(t, 0, count("outbox"))
	var hooks []string
	for range 2 {
		w := storetest.NewWebhook("p", now, chargenet.EventConnectorUpdated)
		require.NoError(t, s.CreateWebhook(ctx, &w, nil))
		hooks = append(hooks, w.ID)
	}
	for _, p := range []float64{10, 11} {
		_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(p)}, "", "", now)
		require.NoError(t, err)
	}
	assert.Equal(t, 3, count("events"))
	assert.Equal(t, 4, count("outbox"))
	ds, err := s.ClaimDeliveries(ctx, now, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 4)
	for i := range ds {
		if ds[i].Webhook.ID == hooks[0] {
			require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &ds[i], Attempt: &chargenet.DeliveryAttempt{
				Attempt: 1, AttemptedAt: now, Outcome: chargenet.OutcomeSucceeded, HTTPStatus: 200}}))
		}
	}
	assert.Equal(t, 2, count("outbox"), "the other webhook's deliveries are pending")
	require.NoError(t, s.DeleteWebhook(ctx, "p", hooks[1]))
	assert.Equal(t, 0, count("outbox"))
	assert.Equal(t, 3, count("events"), "delivered and dropped deliveries leave their events in the log")
	attempts, err := s.ListDeliveryAttempts(ctx, "p", hooks[0], chargenet.Seek[int64]{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, attempts, 2, "the attempts stay")
	_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(12.0)}, "", "", now)
	require.NoError(t, err)
	ds, err = s.ClaimDeliveries(ctx, now, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &ds[0], Attempt: &chargenet.DeliveryAttempt{
		Attempt: 1, AttemptedAt: now, Outcome: chargenet.OutcomeFailed, HTTPStatus: 500, Error: "x"}}))
	assert.Equal(t, 0, count("outbox"))
	assert.Equal(t, 4, count("events"), "given up: the event stays in the log")
}

// TestLocationDocs checks that ListLocationDocs answers, byte for byte, what
// wire.EncodeLocation makes of each location as read, after an import that adds EVSEs
// to an existing location: with the read cache (a miss, then a hit) and without it.
func TestLocationDocs(t *testing.T) {
	ctx := t.Context()
	s := MustOpenDB(t)
	inv := chargenet.DemoInventory(time.Now())
	require.NoError(t, s.Import(ctx, inv))
	extra := inv.EVSEs[0]
	extra.UID, extra.EvseID, extra.LocationID = 9001, "DE*CNT*E9001*1", "LOC-0007"
	require.NoError(t, s.Import(ctx, &chargenet.Inventory{EVSEs: []chargenet.EVSE{extra}}))
	l, err := s.Location(ctx, "LOC-0007")
	require.NoError(t, err)
	assert.Contains(t, l.EvseUIDs, int64(9001))

	check := func(t *testing.T) {
		docs, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Limit: 1000})
		require.NoError(t, err)
		locs, err := s.ListLocations(ctx, chargenet.Seek[string]{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, docs, len(locs))
		for i := range locs {
			want, err := wire.EncodeLocation(&locs[i])
			require.NoError(t, err)
			assert.Equal(t, locs[i].ID, docs[i].ID)
			assert.Equal(t, string(want), string(docs[i].JSON), locs[i].ID)
		}
		back, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Key: "LOC-0010", HasKey: true, Backward: true, Limit: 2})
		require.NoError(t, err)
		require.Len(t, back, 2)
		assert.Equal(t, []string{"LOC-0009", "LOC-0008"}, []string{back[0].ID, back[1].ID})
		none, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Limit: 0})
		require.NoError(t, err)
		assert.NotNil(t, none)
		assert.Empty(t, none)
	}
	t.Run("cached", func(t *testing.T) {
		check(t)
		check(t)
	})
	t.Run("uncached", func(t *testing.T) {
		s.SetReadCacheSize(0)
		check(t)
	})
}

// TestEVSEDocs checks that EVSEDoc answers, byte for byte, what wire.EncodeEVSE makes
// of the EVSE as read, after import (connectors given out of order), updates and status
// notifications: with the read cache (a miss, then a hit) and without it.
func TestEVSEDocs(t *testing.T) {
	ctx := t.Context()
	s := MustOpenDB(t)
	inv := chargenet.DemoInventory(time.Now())
	slices.Reverse(inv.EVSEs[3].Connectors) // 1004: 4, 3, 2, 1
	require.NoError(t, s.Import(ctx, inv))
	e, err := s.EVSE(ctx, 1004)
	require.NoError(t, err)
	want, err := wire.EncodeEVSE(e)
	require.NoError(t, err)
	doc, _, err := s.EVSEDoc(ctx, 1004)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(doc), "as imported, connectors in id order")
	_, err = s.UpdateConnector(ctx, 1002, 2, chargenet.ConnectorPatch{MaxVoltage: ptr(777.0)}, "", "", time.Now())
	require.NoError(t, err)
	_, err = s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 502, ConnectorID: 0, Status: "Faulted",
		ErrorCode: "GroundFailure", Info: "i", Timestamp: time.Now()}, "",
		time.Now())

	require.NoError(t, err)

	check := func(t *testing.T) {
		for uid := int64(1001); uid <= 1040; uid++ {
			e, err := s.EVSE(ctx, uid)
			require.NoError(t, err)
			want, err := wire.EncodeEVSE(e)
			require.NoError(t, err)
			doc, version, err := s.EVSEDoc(ctx, uid)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(doc), "EVSE %d", uid)
			assert.Equal(t, len(doc), cap(doc), "EVSE %d: appending copies", uid)
			assert.Equal(t, e.Version, version)
		}
		_, _, err := s.EVSEDoc(ctx, 999999)
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
		doc, _, err := s.EVSEDoc(ctx, 1002)
		require.NoError(t, err)
		assert.Contains(t, string(doc), `"maxVoltage":777`)
		doc, _, err = s.EVSEDoc(ctx, 1004)
		require.NoError(t, err)
		assert.Contains(t, string(doc), `"status":"OUTOFORDER"`)
	}
	t.Run("cached", func(t *testing.T) {
		check(t)
		check(t)
	})
	t.Run("uncached", func(t *testing.T) {
		s.SetReadCacheSize(0)
		check(t)
	})
}

// TestDropDocsMigration migrates a database written before migration 0017, whose rows
// carry their stored JSON (one of them out of date): the columns and their indexes are
// gone, the rows are intact, and reads answer what the rows say.
func TestDropDocsMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chargenet.db")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000000000Z07:00")
	require.NoError(t, sqlite.MigrateBeforeForTest(ctx, path, "0017",
		`INSERT INTO locations (id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated, doc) `+
			`VALUES ('LOC-1', 'One', 'Street 1', 'Town', '12345', 'DEU', 52.5, 13.25, 'Europe/Berlin', '`+at+`', '{"stale":true}')`,
		`INSERT INTO evses (uid, evse_id, chargebox_id, location_id, status, last_updated, version, doc, doc_version) `+
			`VALUES (1, 'DE*CNT*E1*1', 501, 'LOC-1', 'AVAILABLE', '`+at+`', 2, '{"stale":true}', 1)`,
		`INSERT INTO connectors (evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage) `+
			`VALUES (1, 1, 'IEC_62196_T2', 'SOCKET', 'AC_3_PHASE', 22, 32, 400)`,
	))
	s := mustOpen(t, path)
	for _, q := range []string{
		`pragma_table_info('locations') WHERE name = 'doc'`,
		`pragma_table_info('evses') WHERE name IN ('doc', 'doc_version')`,
		`sqlite_schema WHERE name IN ('locations_without_doc', 'evses_stale_doc')`,
	} {
		n, err := s.CountForTest(ctx, q)
		require.NoError(t, err)
		assert.Zero(t, n, q)
	}

	e, err := s.EVSE(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(2), e.Version)
	require.Len(t, e.Connectors, 1)
	want, err := wire.EncodeEVSE(e)
	require.NoError(t, err)
	doc, version, err := s.EVSEDoc(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(doc))
	assert.Equal(t, int64(2), version)

	l, err := s.Location(ctx, "LOC-1")
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, l.EvseUIDs)
	wantLoc, err := wire.EncodeLocation(l)
	require.NoError(t, err)
	docs, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Limit: 10})
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, string(wantLoc), string(docs[0].JSON))

	updated, err := s.UpdateConnector(ctx, 1, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(230.0)}, "", "", time.Now())
	require.NoError(t, err)
	assert.Equal(t, int64(3), updated.Version)
}

// BenchmarkCreateEVSE measures POST /v2/evses in the store: the EVSE, its connector, its
// event, its location's JSON and the kept Idempotency-Key answer in one transaction.
func BenchmarkCreateEVSE(b *testing.B) {
	s := benchStore(b)
	storetest.BenchCreateEVSE(b, s)
}

// TestEventLogMigration upgrades a database of the version before the event log, with
// events and pending deliveries, to the event log: the events keep their rows in time
// order, numbered from 1, the deliveries still find them, and new events number after
// them.
func TestEventLogMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	at := func(s int) string {
		return time.Date(2026, 11, 1, 10, 0, s, 0, time.UTC).Format("2006-01-02T15:04:05.000000000Z")
	}
	require.NoError(t, sqlite.MigrateBeforeForTest(ctx, path, "0012",
		`INSERT INTO webhooks (id, owner, url, enabled, secret, created_at, updated_at) VALUES ('wh_1', 'p', 'https://x.example.com', 1, 's', '`+at(0)+`', '`+at(0)+`')`,
		`INSERT INTO webhook_event_types (webhook_id, type, api_version) VALUES ('wh_1', 'evse.connector.updated', '1.0')`,
		`INSERT INTO events (id, type, occurred_at, data) VALUES ('evt_B', 'evse.connector.updated', '`+at(2)+`', '{"uid":2}')`,
		`INSERT INTO events (id, type, occurred_at, data) VALUES ('evt_A', 'evse.connector.updated', '`+at(1)+`', '{"uid":1}')`,
		`INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) VALUES ('evt_B', 'wh_1', '1.0', '`+at(2)+`')`,
		`INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) VALUES ('evt_A', 'wh_1', '1.0', '`+at(1)+`')`,
	))
	s := mustOpen(t, path)
	ms, err := s.Migrations(ctx)
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(ms, func(m sqlite.Migration) bool { return m.Name == "0012_event_log.sql" }), "migrated through the event log")
	logged, err := s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 10}, nil, "")
	require.NoError(t, err)
	require.Len(t, logged, 2)
	assert.Equal(t, []string{"evt_A", "evt_B"}, []string{logged[0].ID, logged[1].ID}, "numbered in time order")
	assert.Equal(t, []int64{1, 2}, []int64{logged[0].Seq, logged[1].Seq})
	n, err := s.CountForTest(ctx, "pragma_foreign_key_check")
	require.NoError(t, err)
	assert.Zero(t, n, "the outbox references the new events table")
	ds, err := s.ClaimDeliveries(ctx, time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 2, "the pending deliveries survived")
	assert.Equal(t, "evt_A", ds[0].Event.ID)
	assert.JSONEq(t, `{"uid":1}`, string(ds[0].Event.Data))
	require.NoError(t, s.Import(ctx, chargenet.DemoInventory(time.Now())))
	_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(7.0)}, "", "", time.Now())
	require.NoError(t, err)
	logged, err = s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 10}, nil, "")
	require.NoError(t, err)
	require.Len(t, logged, 3)
	assert.Equal(t, int64(3), logged[2].Seq)
}

// BenchmarkLocationChanges reads 25-item pages of the change list of
// storetest.ScaleLocations locations (default 1,000,000, imported first): the first
// page, one deep in the list, and the first with a recent Since (see
// storetest.BenchLocationChanges).
func BenchmarkLocationChanges(b *testing.B) {
	n := storetest.ScaleLocations(b)
	s := MustOpenDB(b)
	at := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	if err := s.Import(b.Context(), storetest.ScaleInventory(n, at)); err != nil {
		b.Fatal(err)
	}
	storetest.BenchLocationChanges(b, s, n, at.Add(-time.Hour), at.Add(time.Minute))
}

// openDemoTwice returns two stores on one new file holding the demo inventory, as two
// processes would open it.
func openDemoTwice(t *testing.T) (a, b *sqlite.Store) {
	t.Helper()
	path := sqlitetest.NewFile(t)
	a, b = mustOpen(t, path), mustOpen(t, path)
	require.NoError(t, a.Import(t.Context(), chargenet.DemoInventory(time.Now())))
	return a, b
}

// TestGroupCacheSeesOtherWrites checks that a group never starts from EVSEs the last
// group kept once something else wrote them: another store on the same file (another
// process), and a write of the same store outside its groups (ChangeEVSE). Each PATCH
// must keep what the other write set, and its version must follow the other's.
func TestGroupCacheSeesOtherWrites(t *testing.T) {
	ctx := t.Context()
	a, b := openDemoTwice(t)
	const uid = 1002
	patch := func(s *sqlite.Store, p chargenet.ConnectorPatch) *chargenet.EVSE {
		t.Helper()
		e, err := s.UpdateConnector(ctx, uid, 1, p, "", "", time.Now())
		require.NoError(t, err)
		return e
	}
	patch(a, chargenet.ConnectorPatch{MaxElectricPower: ptr(10.0)}) // a's groups now know the EVSE

	byOther := patch(b, chargenet.ConnectorPatch{MaxVoltage: ptr(401.0)})
	got := patch(a, chargenet.ConnectorPatch{MaxElectricPower: ptr(20.0)})
	assert.Equal(t, 401.0, got.Connector(1).MaxVoltage, "another process's write")
	assert.Equal(t, byOther.Version+1, got.Version)

	byChange, err := a.ChangeEVSE(ctx, uid, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		e.Connector(1).MaxAmperage = 333
		e.Version++
		return nil, nil
	}, nil, "",

		time.Now())

	require.NoError(t, err)
	got = patch(a, chargenet.ConnectorPatch{MaxElectricPower: ptr(30.0)})
	assert.Equal(t, 333.0, got.Connector(1).MaxAmperage, "the same store's write outside its groups")
	assert.Equal(t, byChange.Version+1, got.Version)

	again := patch(a, chargenet.ConnectorPatch{MaxElectricPower: ptr(40.0)})
	stored, err := b.EVSE(ctx, uid)
	require.NoError(t, err)
	assert.Equal(t, again, stored, "what the next group started from is what was stored")
}

// TestGroupCacheChargeboxes checks the charge boxes a group takes from the EVSEs the
// last groups kept: a notification older than the last one applied is refused, also
// when that one came from the cache, from another store on the same file, or reached an
// EVSE a PATCH read alone (without status times) just before.
func TestGroupCacheChargeboxes(t *testing.T) {
	ctx := t.Context()
	a, b := openDemoTwice(t)
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	note := func(s *sqlite.Store, box int64, status string, at time.Duration) *chargenet.StatusResult {
		t.Helper()
		res, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: box, ConnectorID: 1,
			Status: status, ErrorCode: "NoError", Timestamp: t0.Add(at)}, "",
			time.Now())

		require.NoError(t, err)
		return res
	}
	status := func(uid int64) chargenet.EvseStatus {
		t.Helper()
		e, err := b.EVSE(ctx, uid)
		require.NoError(t, err)
		return e.Status
	}
	// Charge box 501: connector 1 is connector 1 of EVSE 1001.
	require.True(t, note(a, 501, "Charging", 2*time.Minute).Applied)
	assert.False(t, note(a, 501, "Available", time.Minute).Applied, "older than the last, which the cache holds")
	assert.Equal(t, chargenet.StatusCharging, status(1001))

	require.True(t, note(b, 501, "Available", 4*time.Minute).Applied)
	assert.False(t, note(a, 501, "Charging", 3*time.Minute).Applied, "older than another store's")
	assert.Equal(t, chargenet.StatusAvailable, status(1001))

	_, err := a.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(21.0)}, "", "", time.Now())
	require.NoError(t, err)
	assert.True(t, note(a, 501, "Charging", 5*time.Minute).Applied, "newer, after a PATCH of the cached EVSE")
	e, err := b.EVSE(ctx, 1001)
	require.NoError(t, err)
	assert.Equal(t, chargenet.StatusCharging, e.Status)
	assert.Equal(t, 21.0, e.Connector(1).MaxElectricPower, "the PATCH kept")

	// Charge box 502: connector 1 is connector 1 of EVSE 1003. Another store notifies
	// it; this store's PATCH then reads EVSE 1003 alone, without its status times.
	require.True(t, note(b, 502, "Charging", 6*time.Minute).Applied)
	_, err = a.UpdateConnector(ctx, 1003, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(12.0)}, "", "", time.Now())
	require.NoError(t, err)
	assert.False(t, note(a, 502, "Available", 5*time.Minute).Applied, "older than the stored one, after a PATCH read the EVSE alone")
	assert.Equal(t, chargenet.StatusCharging, status(1003))

	for _, uid := range []int64{1001, 1002, 1003, 1004} {
		mine, err := a.EVSE(ctx, uid)
		require.NoError(t, err)
		stored, err := b.EVSE(ctx, uid)
		require.NoError(t, err)
		assert.Equal(t, stored, mine, "EVSE %d", uid)
	}
}

// TestIdempotencyAnswerMigration upgrades a database holding an answer kept in the
// columns before 0018 (status, header, body): the answer comes back as the one value the
// server reads, {"status", "header", "body"}, with the body's JSON as it was sent.
func TestIdempotencyAnswerMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chargenet.db")
	kept := time.Now().UTC().Add(-time.Hour)
	body := `{"uid":1041,"evseId":"DE*TST*E9001","connectors":[{"id":1,"maxElectricPower":22.5}],"url":"https://x.example.com/a?b=1\u0026c=\u003c2\u003e","f":[7.4,1e-7,-0,12345678901234567890]}`
	require.NoError(t, sqlite.MigrateBeforeForTest(ctx, path, "0018",
		`INSERT INTO idempotency_keys (owner, key, fingerprint, status, header, body, created_at) VALUES `+
			`('partner', 'key-1', x'0102', 201, '{"ETag":"\"1\"","Location":"/v2/evses/1041"}', CAST('`+body+"\n"+`' AS BLOB), '`+
			kept.Format("2006-01-02T15:04:05.000000000Z07:00")+`')`,
	))
	s := mustOpen(t, path)
	a, err := s.IdempotentAnswer(ctx, "partner", "key-1", time.Now())
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2}, a.Fingerprint[:2])
	assert.JSONEq(t, `{"status":201,"header":{"ETag":"\"1\"","Location":"/v2/evses/1041"},"body":`+body+`}`, string(a.Answer))
	var answer struct{ Body json.RawMessage }
	require.NoError(t, json.Unmarshal(a.Answer, &answer))
	assert.Equal(t, body, string(answer.Body), "the body byte for byte")
	n, err := s.CountForTest(ctx, `pragma_table_info('idempotency_keys') WHERE name IN ('status', 'header', 'body')`)
	require.NoError(t, err)
	assert.Zero(t, n, "the old columns are gone")
}

// TestLastUpdatedMigration migrates a database written before migration 0019: a
// location older than one of its EVSEs takes that EVSE's time and moves to the end of
// the location change list, the other keeps its own; connectors read their EVSE's time;
// every location starts at version 1; no EVSE moves in its change list; times read to
// the microsecond.
func TestLastUpdatedMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chargenet.db")
	at := func(s int) string {
		return time.Date(2026, 1, 1, 0, 0, s, 123456789, time.UTC).Format("2006-01-02T15:04:05.000000000Z")
	}
	row := func(id string, s int) string {
		return `INSERT INTO locations (id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated) ` +
			`VALUES ('` + id + `', 'One', 'Street 1', 'Town', '12345', 'DEU', 52.5, 13.25, 'Europe/Berlin', '` + at(s) + `')`
	}
	evse := func(uid, location string, s int) string {
		return `INSERT INTO evses (uid, evse_id, chargebox_id, location_id, status, last_updated, version) ` +
			`VALUES (` + uid + `, 'DE*CNT*E` + uid + `*1', 501, '` + location + `', 'AVAILABLE', '` + at(s) + `', 3)`
	}
	require.NoError(t, sqlite.MigrateBeforeForTest(ctx, path, "0019",
		row("OLDER", 1), row("NEWER", 9), evse("1", "OLDER", 5), evse("2", "NEWER", 2),
		`INSERT INTO connectors (evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage) `+
			`VALUES (1, 1, 'IEC_62196_T2', 'SOCKET', 'AC_3_PHASE', 22, 32, 400)`,
	))
	s := mustOpen(t, path)
	us := func(sec int) time.Time { return time.Date(2026, 1, 1, 0, 0, sec, 123456000, time.UTC) }

	older, err := s.Location(ctx, "OLDER")
	require.NoError(t, err)
	assert.Equal(t, us(5), older.LastUpdated, "its EVSE's time, to the microsecond")
	assert.Equal(t, int64(1), older.Version)
	newer, err := s.Location(ctx, "NEWER")
	require.NoError(t, err)
	assert.Equal(t, us(9), newer.LastUpdated, "its own, newer than its EVSE's")
	assert.Equal(t, int64(1), newer.Version)
	e, err := s.EVSE(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, us(5), e.LastUpdated)
	require.Len(t, e.Connectors, 1)
	assert.Equal(t, us(5), e.Connectors[0].LastUpdated, "a connector without its own time reads its EVSE's")

	locs, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"NEWER", "OLDER"}, []string{locs[0].ID, locs[1].ID}, "the location whose time moved comes last")
	evses, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 10})
	require.NoError(t, err)
	require.Len(t, evses, 2)
	assert.Equal(t, []int64{2, 1}, []int64{evses[0].UID, evses[1].UID})
	assert.Equal(t, []uint64{2, 3}, []uint64{evses[0].ChangePos, evses[1].ChangePos},
		"the positions the inserts gave them (1's connector moved it to 3): the migration moved no EVSE")

	updated, err := s.UpdateConnector(ctx, 1, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(230.0)}, "", "", us(0))
	require.NoError(t, err)
	assert.Equal(t, us(5).Add(time.Microsecond), updated.LastUpdated, "a clock behind the stored time moves one microsecond on")
	older, err = s.Location(ctx, "OLDER")
	require.NoError(t, err)
	assert.Equal(t, int64(2), older.Version)
	assert.Equal(t, updated.LastUpdated, older.LastUpdated)
}
