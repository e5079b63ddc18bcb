package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
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

// requireHit reads EVSE uid and fails unless the answer came from the cache and equals
// want.
func requireHit(t *testing.T, s *sqlite.Store, uid int64, want []byte, why string) {
	t.Helper()
	hits, _, _ := s.ReadCacheStatsForTest()
	doc, _, err := s.EVSEDoc(t.Context(), uid)
	require.NoError(t, err)
	after, _, _ := s.ReadCacheStatsForTest()
	assert.Equal(t, hits+1, after, "EVSE %d is served from the cache: %s", uid, why)
	assert.Equal(t, string(want), string(doc))
}

// TestReadCacheKeepsUntouched changes EVSE 1002 (and adds a location) in every way a
// commit can reach the database, while EVSE 1001 is cached: 1001 must stay cached, 1002
// must be read afresh, and the location pages must show the new location.
func TestReadCacheKeepsUntouched(t *testing.T) {
	cases := append(commitWays(), []commitWay{
		{"by plain SQL, as a program that knows nothing of the cache", func(t *testing.T, _ *sqlite.Store, path string) {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
			require.NoError(t, err)
			defer func() { _ = db.Close() }()
			for _, q := range []string{
				`UPDATE connectors SET max_electric_power = 777 WHERE evse_uid = 1002 AND id = 1`,
				`UPDATE evses SET version = version + 1 WHERE uid = 1002`,
				`INSERT INTO locations (id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated) ` +
					`VALUES ('LOC-9999', 'Added', '1 Road', 'Town', '1000', 'NLD', 0, 0, 'Europe/Amsterdam', '2026-01-01T00:00:00.000000000Z')`,
			} {
				_, err := db.ExecContext(t.Context(), q)
				require.NoError(t, err, q)
			}
		}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, path := openDemo(t)
			requireCacheOn(t, s)
			keep, _ := requireFresh(t, s, 1001)
			requireHit(t, s, 1001, keep, "read twice")
			_, before := requireFresh(t, s, 1002)
			seek := chargenet.Seek[string]{Key: "LOC-0120", HasKey: true, Limit: 5}
			page, err := s.ListLocationDocs(t.Context(), seek)
			require.NoError(t, err)
			require.Empty(t, page)

			c.change(t, s, path)

			requireHit(t, s, 1001, keep, "the commit did not touch it")
			doc, after := requireFresh(t, s, 1002)
			assert.Equal(t, before+1, after)
			assert.Contains(t, string(doc), `"maxElectricPower":777`)
			page, err = s.ListLocationDocs(t.Context(), seek)
			require.NoError(t, err)
			require.Len(t, page, 1, "a new location retires the cached pages")
			assert.Equal(t, "LOC-9999", page[0].ID)
			requireHit(t, s, 1001, keep, "still")
		})
	}
}

// requireFreshPage reads a page of locations and fails unless it is the JSON of the
// locations read fresh from the database; it returns the versions of the page's
// locations.
func requireFreshPage(t *testing.T, s *sqlite.Store, seek chargenet.Seek[string]) map[string]int64 {
	t.Helper()
	page, err := s.ListLocationDocs(t.Context(), seek)
	require.NoError(t, err)
	want, err := s.ListLocations(t.Context(), seek)
	require.NoError(t, err)
	require.Len(t, page, len(want))
	versions := map[string]int64{}
	for i := range want {
		doc, err := wire.EncodeLocation(&want[i])
		require.NoError(t, err)
		assert.Equal(t, want[i].ID, page[i].ID)
		assert.JSONEq(t, string(doc), string(page[i].JSON), "location %s", want[i].ID)
		versions[want[i].ID] = want[i].Version
	}
	return versions
}

// TestReadCacheKeepsPagesOfChangedLocations changes EVSEs of locations of a cached page
// (which changes those locations), through the store and through another store on the
// file: the sync after the commits encodes only them again, and the page is served from
// the cache showing them as they now are. A location deleted from a cached page, and one created
// within one, change which locations the pages hold: the pages are read again.
func TestReadCacheKeepsPagesOfChangedLocations(t *testing.T) {
	s, path := openDemo(t)
	requireCacheOn(t, s)
	ctx := t.Context()
	seek := chargenet.Seek[string]{Limit: 25}
	before := requireFreshPage(t, s, seek)
	hits, _, _ := s.ReadCacheStatsForTest()
	requireFreshPage(t, s, seek)
	hitsAfter, _, _ := s.ReadCacheStatsForTest()
	require.Equal(t, hits+1, hitsAfter, "the page is cached")

	reencoded := s.ReadCacheReencodedForTest()
	other := mustOpen(t, path)
	_, err := other.UpdateConnector(ctx, 1003, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(99.5)}, "", "", time.Now())
	require.NoError(t, err)
	require.NoError(t, other.Close())
	_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(11.5)}, "", "", time.Now())
	require.NoError(t, err)
	hits, _, _ = s.ReadCacheStatsForTest()
	after := requireFreshPage(t, s, seek)
	hitsAfter, _, _ = s.ReadCacheStatsForTest()
	assert.Equal(t, before["LOC-0001"]+1, after["LOC-0001"], "the location of EVSE 1001")
	assert.Equal(t, before["LOC-0002"]+1, after["LOC-0002"], "the location of EVSE 1003")
	assert.Equal(t, reencoded+2, s.ReadCacheReencodedForTest(), "the sync encoded the two changed locations again")
	assert.Equal(t, hits+1, hitsAfter, "the page is served from the cache")

	// A location of the page deleted, then one created within it.
	tail := chargenet.Seek[string]{Key: "LOC-0020", HasKey: true, Limit: 3}
	assert.Equal(t, map[string]int64{"LOC-0021": 1, "LOC-0022": 1, "LOC-0023": 1}, requireFreshPage(t, s, tail))
	_, err = s.DeleteLocation(ctx, "LOC-0022", "", time.Now())
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"LOC-0021": 1, "LOC-0023": 1, "LOC-0024": 1}, requireFreshPage(t, s, tail))
	l, err := s.Location(ctx, "LOC-0021")
	require.NoError(t, err)
	l.ID = "LOC-0021A"
	_, _, err = s.PutLocation(ctx, l, "", time.Now())
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"LOC-0021": 1, "LOC-0021A": 1, "LOC-0023": 1}, requireFreshPage(t, s, tail))
	requireFreshPage(t, s, seek)
}

// TestReadCachePagesUnderWrites reads a page while PATCHes change an EVSE of one of its
// locations: a read begun after a PATCH was acknowledged never shows the location older
// than that PATCH left it.
func TestReadCachePagesUnderWrites(t *testing.T) {
	s, _ := openDemo(t)
	requireCacheOn(t, s)
	ctx := t.Context()
	seek := chargenet.Seek[string]{Limit: 5}
	var acked atomic.Int64
	acked.Store(requireFreshPage(t, s, seek)["LOC-0001"])
	var wg sync.WaitGroup
	done := make(chan struct{})
	var stale, reads atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				floor := acked.Load()
				page, err := s.ListLocationDocs(ctx, seek)
				var l struct {
					Version int64 `json:"version"`
				}
				if err != nil || len(page) == 0 || json.Unmarshal(page[0].JSON, &l) != nil || l.Version < floor {
					stale.Add(1)
				}
				reads.Add(1)
			}
		})
	}
	for i := range 300 {
		_, err := s.UpdateConnector(ctx, 1001+int64(i%2), 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(i + 1))}, "", "", time.Now())
		require.NoError(t, err)
		l, err := s.Location(ctx, "LOC-0001")
		require.NoError(t, err)
		acked.Store(l.Version)
	}
	close(done)
	wg.Wait()
	assert.Zero(t, stale.Load(), "of %d reads, reads that failed or showed LOC-0001 older than a PATCH already acknowledged", reads.Load())
	assert.Positive(t, s.ReadCacheReencodedForTest(), "syncs encoded the changed location again")
	requireFreshPage(t, s, seek)
}

// TestReadCacheManyChanges changes more EVSEs between two reads than a sync drops one
// by one: the cache must start afresh and serve nothing it cached before.
func TestReadCacheManyChanges(t *testing.T) {
	sqlite.SetCacheSyncLimitForTest(t, 4)
	s, path := openDemo(t)
	requireCacheOn(t, s)
	_, before := requireFresh(t, s, 1001)
	_, _ = requireFresh(t, s, 1001) // cached

	other := mustOpen(t, path)                   // its own writer: s reads nothing in between
	for uid := int64(1001); uid <= 1006; uid++ { // six EVSEs moved: past the limit
		_, err := other.UpdateConnector(t.Context(), uid, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(555.0)}, "", "", time.Now())
		require.NoError(t, err)
	}
	require.NoError(t, other.Close())

	doc, after := requireFresh(t, s, 1001)
	assert.Equal(t, before+1, after, "the change is seen")
	assert.Contains(t, string(doc), `"maxElectricPower":555`)
}

// TestReadCacheReadersWaitForOneSync holds a sync of the read cache after a commit and
// sends more readers of a cached EVSE meanwhile: they wait for that sync instead of each
// reading the database, and do not sync again after it.
func TestReadCacheReadersWaitForOneSync(t *testing.T) {
	s, _ := openDemo(t)
	requireCacheOn(t, s)
	ctx := t.Context()
	keep, _ := requireFresh(t, s, 1002)
	requireHit(t, s, 1002, keep, "read twice")
	_, err := s.UpdateConnector(ctx, 1040, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(55.5)}, "", "", time.Now())
	require.NoError(t, err)

	gate := make(chan struct{})
	syncs := s.GateCacheSyncForTest(gate)
	h0, m0, _ := s.ReadCacheStatsForTest()
	const readers = 5
	var wg sync.WaitGroup
	docs := make([][]byte, readers)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc, _, err := s.EVSEDoc(ctx, 1002)
			assert.NoError(t, err)
			docs[i] = doc
		}()
	}
	// Readers that did not wait would be done long before the sync is let go.
	time.Sleep(200 * time.Millisecond)
	close(gate)
	wg.Wait()
	h1, m1, _ := s.ReadCacheStatsForTest()
	assert.Equal(t, int64(1), syncs.Load(), "syncs after one commit")
	assert.Equal(t, uint64(readers), h1-h0, "reads served from the cache")
	assert.Zero(t, m1-m0, "reads sent to the database")
	for i, doc := range docs {
		assert.Equal(t, string(keep), string(doc), "reader %d", i)
	}
}

// BenchmarkReadCacheUnderWrites reads 40 EVSEs and 20 location pages in turn, from
// parallel readers, while PATCHes of other EVSEs commit about a thousand times a second
// (each commit retires only the EVSE it changed); it reports the share of reads served
// from the cache.
func BenchmarkReadCacheUnderWrites(b *testing.B) {
	s := mustOpen(b, sqlitetest.NewFile(b))
	ctx := context.Background()
	if err := s.Import(ctx, chargenet.DemoInventory(time.Now())); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			p := float64(i%400) + 1
			go func() { // not waiting: the commits come at the ticker's pace
				_, _ = s.UpdateConnector(ctx, int64(1003+i%38), 1, chargenet.ConnectorPatch{MaxElectricPower: &p}, "", "", time.Now())
			}()
		}
	}()
	h0, m0, _ := s.ReadCacheStatsForTest()
	var k atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := k.Add(1)
			if i%2 == 0 {
				_, _, _ = s.EVSEDoc(ctx, 1001+(i/2)%40)
			} else {
				_, _ = s.ListLocationDocs(ctx, chargenet.Seek[string]{Limit: 5 + int(i/2)%20})
			}
		}
	})
	close(stop)
	<-writerDone
	h1, m1, _ := s.ReadCacheStatsForTest()
	b.ReportMetric(float64(h1-h0)/float64(max(1, k.Load())), "hits/read")
	b.ReportMetric(float64(m1-m0)/float64(max(1, k.Load())), "misses/read")
}

// TestReadCacheRowsRemovedBySQL removes a cached EVSE's row, and then a location of a
// cached page, by plain SQL (the service never deletes either row): neither may be
// served afterwards.
func TestReadCacheRowsRemovedBySQL(t *testing.T) {
	s, path := openDemo(t)
	requireCacheOn(t, s)
	keep, _ := requireFresh(t, s, 1001)
	requireHit(t, s, 1001, keep, "read twice")
	_, _ = requireFresh(t, s, 1040)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	exec := func(q string) {
		_, err := db.ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}

	exec(`DELETE FROM evses WHERE uid = 1040`) // its connectors stay: no other trigger fires
	_, _, err = s.EVSEDoc(t.Context(), 1040)
	assert.ErrorIs(t, err, chargenet.ErrNotFound, "the deleted EVSE is not served from the cache")
	requireHit(t, s, 1001, keep, "the delete did not touch it")

	seek := chargenet.Seek[string]{Key: "LOC-0020", HasKey: true, Limit: 3} // locations without EVSEs
	page, err := s.ListLocationDocs(t.Context(), seek)
	require.NoError(t, err)
	require.NotEmpty(t, page)
	gone := page[0].ID
	require.Equal(t, "[]", string(mustEvseUIDs(t, page[0].JSON)), "the location holds no EVSE")
	exec(`DELETE FROM locations WHERE id = '` + gone + `' AND NOT EXISTS (SELECT 1 FROM evses WHERE location_id = '` + gone + `')`)
	page, err = s.ListLocationDocs(t.Context(), seek)
	require.NoError(t, err)
	require.NotEmpty(t, page)
	assert.NotEqual(t, gone, page[0].ID, "the deleted location is not served from the cached page")
}

// mustEvseUIDs returns the evseUids of a location's JSON.
func mustEvseUIDs(t *testing.T, doc []byte) json.RawMessage {
	t.Helper()
	var l struct {
		EvseUids json.RawMessage `json:"evseUids"`
	}
	require.NoError(t, json.Unmarshal(doc, &l))
	return l.EvseUids
}
