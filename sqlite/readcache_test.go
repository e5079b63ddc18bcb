package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openDemo opens a store on a new file holding the demo inventory.
func openDemo(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := sqlitetest.NewFile(t)
	s := mustOpen(t, path)
	require.NoError(t, s.Import(t.Context(), chargenet.DemoInventory(time.Now())))
	return s, path
}

// requireCacheOn fails unless the store's read cache works on this system.
func requireCacheOn(t *testing.T, s *sqlite.Store) {
	t.Helper()
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no read cache without mmap")
	}
	_, _, on := s.ReadCacheStatsForTest()
	require.True(t, on, "a store on a file has a read cache")
}

// requireFresh checks that EVSEDoc answers what the EVSE now is: the JSON of the EVSE
// read fresh from the database, and its version.
func requireFresh(t *testing.T, s *sqlite.Store, uid int64) (doc []byte, version int64) {
	t.Helper()
	doc, version, err := s.EVSEDoc(t.Context(), uid)
	require.NoError(t, err)
	e, err := s.EVSE(t.Context(), uid)
	require.NoError(t, err)
	want, err := wire.EncodeEVSE(e)
	require.NoError(t, err)
	assert.Equal(t, e.Version, version, "version of EVSE %d", uid)
	assert.JSONEq(t, string(want), string(doc), "JSON of EVSE %d", uid)
	return doc, version
}

func TestReadCacheServesUnchangedDatabase(t *testing.T) {
	s, _ := openDemo(t)
	requireCacheOn(t, s)

	first, v1 := requireFresh(t, s, 1002)
	hits, _, _ := s.ReadCacheStatsForTest()
	second, v2, err := s.EVSEDoc(t.Context(), 1002)
	require.NoError(t, err)
	hitsAfter, _, _ := s.ReadCacheStatsForTest()
	assert.Equal(t, hits+1, hitsAfter, "the second read of an unchanged EVSE is a hit")
	assert.Equal(t, v1, v2)
	assert.Equal(t, first, second)

	// The caller cannot write into the cache through the slice it got.
	_ = append(second, " trailing"...)
	third, _, err := s.EVSEDoc(t.Context(), 1002)
	require.NoError(t, err)
	assert.Equal(t, first, third, "appending to an answer leaves the cached JSON alone")

	page, err := s.ListLocationDocs(t.Context(), chargenet.Seek[string]{Limit: 5})
	require.NoError(t, err)
	page[0].ID = "changed by the caller"
	again, err := s.ListLocationDocs(t.Context(), chargenet.Seek[string]{Limit: 5})
	require.NoError(t, err)
	assert.Equal(t, "LOC-0001", again[0].ID, "a page from the cache is the caller's copy")
}

// commitWay is one way a commit reaches the database of a cached store.
type commitWay struct {
	name   string
	change func(t *testing.T, s *sqlite.Store, path string)
}

// commitWays are the ways every read-cache test commits a change (patchAndAdd): through
// the store, through another store on the file, and from another process.
func commitWays() []commitWay {
	return []commitWay{
		{"through the store", func(t *testing.T, s *sqlite.Store, _ string) { patchAndAdd(t, s) }},
		{"through another store on the file", func(t *testing.T, _ *sqlite.Store, path string) {
			other := mustOpen(t, path)
			patchAndAdd(t, other)
			require.NoError(t, other.Close())
		}},
		{"from another process", func(t *testing.T, _ *sqlite.Store, path string) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestReadCacheChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), cacheChildEnv+"="+path)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "child: %s", out)
		}},
	}
}

// TestReadCacheSeesEveryCommit changes the database in every way a commit can reach it
// (through the store, through another store on the file, from another process, after
// the WAL was checkpointed and restarted) between two reads of the same EVSE and page:
// the second read must show the change.
func TestReadCacheSeesEveryCommit(t *testing.T) {
	cases := append(commitWays(), []commitWay{
		{"after a checkpoint restarts the WAL", func(t *testing.T, _ *sqlite.Store, path string) {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
			require.NoError(t, err)
			defer func() { _ = db.Close() }()
			_, err = db.ExecContext(t.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`)
			require.NoError(t, err)
			other := mustOpen(t, path)
			patchAndAdd(t, other)
			require.NoError(t, other.Close())
		}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, path := openDemo(t)
			requireCacheOn(t, s)
			_, before := requireFresh(t, s, 1002)
			_, _ = requireFresh(t, s, 1002) // now cached
			pageBefore, err := s.ListLocationDocs(t.Context(), chargenet.Seek[string]{Key: "LOC-0120", HasKey: true, Limit: 5})
			require.NoError(t, err)
			require.Empty(t, pageBefore, "nothing after the last demo location yet")

			c.change(t, s, path)

			doc, after := requireFresh(t, s, 1002)
			assert.Equal(t, before+1, after, "the read after the commit has the new version")
			assert.Contains(t, string(doc), `"maxElectricPower":777`)
			page, err := s.ListLocationDocs(t.Context(), chargenet.Seek[string]{Key: "LOC-0120", HasKey: true, Limit: 5})
			require.NoError(t, err)
			require.Len(t, page, 1, "the location added by the commit is on the page")
			assert.Equal(t, "LOC-9999", page[0].ID)
		})
	}
}

// patchAndAdd sets connector 1 of EVSE 1002 to 777 kW and adds location LOC-9999.
func patchAndAdd(t testing.TB, s *sqlite.Store) {
	_, err := s.UpdateConnector(context.Background(), 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(777.0)}, "", "", time.Now())
	require.NoError(t, err)
	l := chargenet.Location{ID: "LOC-9999", Name: "Added", Address: "1 Road", City: "Town", PostalCode: "1000",
		Country: "NLD", TimeZone: "Europe/Amsterdam", LastUpdated: time.Now()}
	require.NoError(t, s.Import(context.Background(), &chargenet.Inventory{Locations: []chargenet.Location{l}}))
}

const cacheChildEnv = "CHARGENET_CACHE_CHILD_DB"

// TestReadCacheChild is the other process of TestReadCacheSeesEveryCommit: it runs
// patchAndAdd on the database it is given.
func TestReadCacheChild(t *testing.T) {
	path := os.Getenv(cacheChildEnv)
	if path == "" {
		t.Skip("run by TestReadCacheSeesEveryCommit")
	}
	s, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	patchAndAdd(t, s)
	require.NoError(t, s.Close())
}

// TestReadCacheUnderWrites reads while another goroutine updates: a read begun after an
// update was acknowledged never shows an older version, and the last read shows the
// last update.
func TestReadCacheUnderWrites(t *testing.T) {
	s, _ := openDemo(t)
	requireCacheOn(t, s)
	const updates = 300
	var acked atomic.Int64
	_, v0 := requireFresh(t, s, 1002)
	acked.Store(v0)
	ctx := t.Context()

	var wg sync.WaitGroup
	done := make(chan struct{})
	var stale atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				floor := acked.Load()
				_, v, err := s.EVSEDoc(ctx, 1002)
				if err != nil || v < floor {
					stale.Add(1)
				}
			}
		}()
	}
	for i := range updates {
		e, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(i + 1))}, "", "", time.Now())
		require.NoError(t, err)
		acked.Store(e.Version)
	}
	close(done)
	wg.Wait()
	assert.Zero(t, stale.Load(), "reads that failed or showed a version older than one already acknowledged")
	doc, v := requireFresh(t, s, 1002)
	assert.Equal(t, v0+updates, v)
	assert.Contains(t, string(doc), `"maxElectricPower":300`)
}

func TestReadCacheSize(t *testing.T) {
	s, _ := openDemo(t)
	requireCacheOn(t, s)

	s.SetReadCacheSize(0)
	requireFresh(t, s, 1002)
	requireFresh(t, s, 1002)
	hits, misses, _ := s.ReadCacheStatsForTest()
	assert.Zero(t, hits+misses, "a cache turned off is not consulted")

	// A bound that holds a few EVSEs: every answer stays right while entries come and go.
	s.SetReadCacheSize(16 << 10)
	for range 2 {
		for uid := int64(1001); uid <= 1040; uid++ {
			requireFresh(t, s, uid)
			requireFresh(t, s, uid)
		}
	}
	hits, misses, _ = s.ReadCacheStatsForTest()
	assert.Equal(t, uint64(80), hits, "the second read of each EVSE in a row is a hit")
	assert.Equal(t, uint64(80), misses, "40 EVSEs do not fit in 16 KiB: the first read of each misses every round")
}

// TestReadCacheSharedProbe opens two stores on one file: they share one mapping of the
// WAL index (closing a second descriptor of the file would drop the other store's
// locks), and the one left open keeps a working cache after the other closes.
func TestReadCacheSharedProbe(t *testing.T) {
	s, path := openDemo(t)
	requireCacheOn(t, s)
	other, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	assert.Equal(t, 2, s.ReadCacheProbeRefsForTest(), "two stores, one probe")
	require.NoError(t, other.Close())
	assert.Equal(t, 1, s.ReadCacheProbeRefsForTest())

	requireFresh(t, s, 1002)
	hits, _, _ := s.ReadCacheStatsForTest()
	requireFresh(t, s, 1002)
	hitsAfter, _, _ := s.ReadCacheStatsForTest()
	assert.Equal(t, hits+1, hitsAfter, "the cache still serves")
	patchAndAdd(t, s)
	_, v := requireFresh(t, s, 1002)
	assert.Equal(t, int64(2), v, "and still sees commits")
}

// TestReadCacheStaleProbe removes the WAL index file under an open store, as SQLite
// does when the last connection anywhere closes: the probe notices within its check
// interval and the cache stops serving, while the answers stay right.
func TestReadCacheStaleProbe(t *testing.T) {
	s, path := openDemo(t)
	requireCacheOn(t, s)
	requireFresh(t, s, 1002)
	require.NoError(t, os.Remove(path+"-shm"))
	time.Sleep(150 * time.Millisecond) // past walProbeCheckInterval
	hits, _, _ := s.ReadCacheStatsForTest()
	for range 3 {
		requireFresh(t, s, 1002)
	}
	hitsAfter, _, _ := s.ReadCacheStatsForTest()
	assert.Equal(t, hits, hitsAfter, "a probe whose file is gone serves nothing")
	patchAndAdd(t, s)
	_, v := requireFresh(t, s, 1002)
	assert.Equal(t, int64(2), v)
}

func TestReadCacheMemoryDatabase(t *testing.T) {
	s := MustOpenMemoryDB(t)
	_, _, on := s.ReadCacheStatsForTest()
	assert.False(t, on, "an in-memory database has no WAL index to watch")
}

// BenchmarkEVSEDoc reads an EVSE's JSON with the read cache on (every read after the
// first is a hit) and off (every read is a statement).
func BenchmarkEVSEDoc(b *testing.B) {
	benchCacheOnOff(b, func(s *sqlite.Store) error {
		_, _, err := s.EVSEDoc(context.Background(), 1002)
		return err
	})
}

// BenchmarkListLocationDocs reads a page of 26 locations' JSON with the read cache on
// and off.
func BenchmarkListLocationDocs(b *testing.B) {
	benchCacheOnOff(b, func(s *sqlite.Store) error {
		_, err := s.ListLocationDocs(context.Background(), chargenet.Seek[string]{Key: "LOC-0050", HasKey: true, Limit: 26})
		return err
	})
}

// benchCacheOnOff runs read in parallel on the demo inventory, with the default read
// cache and with none.
func benchCacheOnOff(b *testing.B, read func(*sqlite.Store) error) {
	for _, cache := range []int{sqlite.DefaultReadCacheSize, 0} {
		b.Run(fmt.Sprintf("cache=%d", cache), func(b *testing.B) {
			s := benchStore(b)
			s.SetReadCacheSize(cache)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := read(s); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
