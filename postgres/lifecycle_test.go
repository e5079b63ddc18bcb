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
func openReplicas(tb testing.TB) [2]*postgres.Store {
	tb.Helper()
	u := NewSchemaURL(tb)
	var stores [2]*postgres.Store
	for i := range stores {
		s, err := postgres.Open(tb.Context(), u, postgres.Options{MaxConns: 8})
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
