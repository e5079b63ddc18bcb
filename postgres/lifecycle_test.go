package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/postgres"
	"github.com/chargenet/chargenet/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdempotencyPrune checks that expired idempotency answers do not accumulate: each
// write that keeps an answer deletes up to 100 expired ones, oldest first, and none that
// has not expired.
func TestIdempotencyPrune(t *testing.T) {
	u := NewSchemaURL(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 4})
	require.NoError(t, err)
	defer s.Close()
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows := func() (n int) {
		t.Helper()
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n))
		return n
	}
	t0 := time.Now().UTC().Truncate(time.Microsecond).Add(-48 * time.Hour)
	create := func(key string, at time.Time) {
		t.Helper()
		w := storetest.NewWebhook("p", at, chargenet.EventEVSECreated)
		idem := &chargenet.Idempotency{Owner: "p", Key: key, Answer: func(any) ([]byte, error) { return []byte("{}"), nil }}
		require.NoError(t, s.CreateWebhook(ctx, &w, idem))
	}

	const old = 150
	for i := range old {
		create(fmt.Sprint("old-", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	require.Equal(t, old, rows())
	// Within the TTL nothing has expired: nothing is deleted.
	create("fresh-0", t0.Add(time.Hour))
	assert.Equal(t, old+1, rows())

	later := t0.Add(chargenet.IdempotencyTTL + time.Hour)
	create("fresh-1", later)
	assert.Equal(t, old+2-100, rows(), "100 expired answers deleted")
	var oldest string
	require.NoError(t, conn.QueryRow(ctx, `SELECT key FROM idempotency_keys WHERE key LIKE 'old-%' ORDER BY created_at LIMIT 1`).Scan(&oldest))
	assert.Equal(t, "old-100", oldest, "the oldest first")
	create("fresh-2", later)
	assert.Equal(t, 2, rows(), "the other expired ones, fresh-0 (expired too by then) included, deleted")
	for _, key := range []string{"fresh-1", "fresh-2"} {
		_, err := s.IdempotentAnswer(ctx, "p", key, later)
		assert.NoError(t, err, key)
	}
}

// TestCreateEVSEReplicas creates EVSEs through two stores on one database (two
// replicas) at once: every EVSE gets a uid of its own.
func TestCreateEVSEReplicas(t *testing.T) {
	ctx := t.Context()
	stores := openReplicas(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	inv := &chargenet.Inventory{}
	const n = 16
	for i := range n {
		inv.Locations = append(inv.Locations, chargenet.Location{ID: fmt.Sprintf("L%02d", i), Name: "Site", Address: "Street 1",
			City: "Berlin", Country: "DEU", Latitude: 52.5, Longitude: 13.4, TimeZone: "Europe/Berlin", LastUpdated: now})
	}
	require.NoError(t, stores[0].Import(ctx, inv))

	uids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		e := chargenet.EVSE{EvseID: fmt.Sprintf("DE*TST*ER%d", i), ChargeboxID: int64(i + 1), LocationID: fmt.Sprintf("L%02d", i),
			Connectors: []chargenet.Connector{{ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket,
				PowerType: chargenet.PowerAC3Phase, MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400}}}
		require.NoError(t, e.PrepareNew(now))
		wg.Go(func() {
			got, err := stores[i%2].CreateEVSE(ctx, &e, nil, "", now)
			if assert.NoError(t, err, "create %d", i) {
				uids[i] = got.UID
			}
		})
	}
	wg.Wait()
	slices.Sort(uids)
	for i, uid := range uids {
		assert.Equal(t, int64(i+1), uid, "uids 1..%d, each once", n)
	}
}

// openReplicas opens two stores on one new, empty schema, as two replicas of the
// service would, closed when tb ends.
func openReplicas(tb testing.TB, hooks ...*chargenet.Hooks) [2]*postgres.Store {
	tb.Helper()
	u := NewSchemaURL(tb)
	var stores [2]*postgres.Store
	for i := range stores {
		opts := postgres.Options{MaxConns: 8}
		if i < len(hooks) {
			opts.Hooks = hooks[i]
		}
		s, err := postgres.Open(tb.Context(), u, opts)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	return stores
}

// BenchmarkCreateEVSE creates EVSEs at one location in parallel, each with an
// Idempotency-Key, as POST /v2/evses does.
func BenchmarkCreateEVSE(b *testing.B) {
	s := benchStore(b, false)
	storetest.BenchCreateEVSE(b, s)
}

// TestLastUpdatedMigration migrates a database written before migration 0016: a
// location older than one of its EVSEs takes that EVSE's time and moves in the location
// change list, the other keeps its own; connectors read their EVSE's time; every
// location starts at version 1; the stored JSON of every row is written again, and no
// EVSE moves in its change list.
func TestLastUpdatedMigration(t *testing.T) {
	ctx := t.Context()
	u := NewSchemaURL(t)
	at := func(s int) time.Time { return time.Date(2026, 1, 1, 0, 0, s, 123456000, time.UTC) }
	row := func(id string, s int) string {
		return `INSERT INTO locations (id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated, ` +
			`doc, doc_uids) VALUES ('` + id + `', 'One', 'Street 1', 'Town', '12345', 'DEU', 52.5, 13.25, 'Europe/Berlin', '` +
			at(s).Format(time.RFC3339Nano) + `', '{"stale":true}', '{}')`
	}
	evse := func(uid, location string, s int) string {
		return `INSERT INTO evses (uid, evse_id, chargebox_id, location_id, status, last_updated, version, doc, doc_version) ` +
			`VALUES (` + uid + `, 'DE*CNT*E` + uid + `*1', 501, '` + location + `', 'AVAILABLE', '` + at(s).Format(time.RFC3339Nano) +
			`', 3, '{"stale":true}', 3)`
	}
	require.NoError(t, postgres.MigrateBeforeForTest(ctx, u, "0016",
		row("OLDER", 1), row("NEWER", 9), evse("1", "OLDER", 5), evse("2", "NEWER", 2),
		`INSERT INTO connectors (evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage) `+
			`VALUES (1, 1, 'IEC_62196_T2', 'SOCKET', 'AC_3_PHASE', 22, 32, 400)`,
		`UPDATE locations SET doc = '{"stale":true}'`, // the EVSEs' inserts cleared it
	))
	positions := func() map[int64]string {
		conn, err := pgx.Connect(ctx, u)
		require.NoError(t, err)
		defer func() { _ = conn.Close(ctx) }()
		rows, err := conn.Query(ctx, `SELECT uid, change_xid::text FROM evse_changes`)
		require.NoError(t, err)
		out := map[int64]string{}
		for rows.Next() {
			var uid int64
			var xid string
			require.NoError(t, rows.Scan(&uid, &xid))
			out[uid] = xid
		}
		require.NoError(t, rows.Err())
		return out
	}
	before := positions()
	s, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 4})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, before, positions(), "no EVSE moved in its change list")

	older, err := s.Location(ctx, "OLDER")
	require.NoError(t, err)
	assert.Equal(t, at(5), older.LastUpdated, "its EVSE's time")
	assert.Equal(t, int64(1), older.Version)
	newer, err := s.Location(ctx, "NEWER")
	require.NoError(t, err)
	assert.Equal(t, at(9), newer.LastUpdated, "its own, newer than its EVSE's")
	assert.Equal(t, int64(1), newer.Version)
	e, err := s.EVSE(ctx, 1)
	require.NoError(t, err)
	require.Len(t, e.Connectors, 1)
	assert.Equal(t, at(5), e.Connectors[0].LastUpdated, "a connector without its own time reads its EVSE's")
	for _, uid := range []int64{1, 2} {
		doc, _, err := s.EVSEDoc(ctx, uid)
		require.NoError(t, err)
		assert.NotContains(t, string(doc), "stale", "EVSE %d's JSON written again", uid)
	}
	docs, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Limit: 10})
	require.NoError(t, err)
	require.Len(t, docs, 2)
	for _, d := range docs {
		assert.NotContains(t, string(d.JSON), "stale", "location %s's JSON written again", d.ID)
	}
	require.Eventually(t, func() bool {
		locs, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Limit: 10})
		require.NoError(t, err)
		return len(locs) == 2 && locs[0].ID == "NEWER" && locs[1].ID == "OLDER"
	}, 10*time.Second, 10*time.Millisecond, "the location whose time moved comes last")

	updated, err := s.UpdateConnector(ctx, 1, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(230.0)}, "", "", at(0))
	require.NoError(t, err)
	assert.Equal(t, at(5).Add(time.Microsecond), updated.LastUpdated, "a clock behind the stored time moves one microsecond on")
	older, err = s.Location(ctx, "OLDER")
	require.NoError(t, err)
	assert.Equal(t, int64(2), older.Version)
	assert.Equal(t, updated.LastUpdated, older.LastUpdated)
}
