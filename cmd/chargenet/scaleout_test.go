package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cnclient "github.com/chargenet/chargenet/client"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { proctest.Main(m) }

// replicas starts two `chargenet serve` processes on one fresh PostgreSQL database with
// one API key, as a scaled-out deployment runs them, giving each the cursor secret of
// secrets (an empty one leaves CHARGENET_CURSOR_SECRET unset). The first loads the demo
// inventory; the second starts once the first is ready.
func replicas(t *testing.T, secrets [2]string) (a, b *cnclient.Client) {
	t.Helper()
	db := proctest.PostgresDatabase(t)
	key := "scale-out-key-" + randomHex(8)
	hc := &http.Client{Transport: apitest.Transport(t, nil), Timeout: 10 * time.Second}
	var clients [2]*cnclient.Client
	for i, secret := range secrets {
		opts := proctest.Options{Database: db, Keys: []string{key}, Env: []string{"CHARGENET_RATE_LIMIT=0"}}
		if secret != "" {
			opts.Env = append(opts.Env, "CHARGENET_CURSOR_SECRET="+secret)
		}
		if i == 0 {
			opts.Args = []string{"--demo"}
		}
		srv := proctest.Start(t, opts)
		var err error
		clients[i], err = cnclient.New(srv.Base, cnclient.WithAPIKey(key), cnclient.WithHTTPClient(hc))
		require.NoError(t, err)
	}
	return clients[0], clients[1]
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestScaleOut runs two replicas against one PostgreSQL: a write through one is read
// through the other, cursors from one are honoured by the other, and concurrent writes
// through both lose nothing.
func TestScaleOut(t *testing.T) {
	secret := randomHex(32)
	a, b := replicas(t, [2]string{secret, secret})
	ctx := t.Context()

	t.Run("a PATCH through one replica is visible through the other", func(t *testing.T) {
		power := 123.5
		patched, etag, err := a.UpdateConnector(ctx, 1002, 1, cnclient.ConnectorPatch{MaxElectricPower: &power})
		require.NoError(t, err)
		require.Equal(t, power, patched.Connector(1).MaxElectricPower)

		read, readETag, err := b.EVSE(ctx, 1002)
		require.NoError(t, err)
		assert.Equal(t, power, read.Connector(1).MaxElectricPower)
		assert.Equal(t, etag, readETag, "both replicas describe the same version")

		// The ETag from one replica guards a write through the other.
		stale := 99.0
		_, _, err = b.UpdateConnector(ctx, 1002, 1, cnclient.ConnectorPatch{MaxElectricPower: &stale}, cnclient.IfMatch(`"1"`))
		assert.ErrorIs(t, err, cnclient.ErrPreconditionFailed)
		_, _, err = b.UpdateConnector(ctx, 1002, 1, cnclient.ConnectorPatch{MaxElectricPower: &stale}, cnclient.IfMatch(etag))
		assert.NoError(t, err)
	})

	for _, size := range []int{1, 7, 25, 100} {
		t.Run(fmt.Sprintf("a walk alternating between replicas returns every location once, limit %d", size), func(t *testing.T) {
			var want []string
			for loc, err := range a.Locations(ctx, cnclient.ListOptions{PageSize: cnclient.MaxPageSize}) {
				require.NoError(t, err)
				want = append(want, loc.ID)
			}
			require.Len(t, want, 120, "the demo inventory")

			forward, last := walk(t, []*cnclient.Client{a, b}, size, nil, func(p *cnclient.LocationPage) string { return p.NextCursor })
			assert.Equal(t, want, slices.Concat(forward...), "forward, alternating replicas")

			// Back from the last page: the pages before it, in reverse order.
			backward, _ := walk(t, []*cnclient.Client{b, a}, size, last, func(p *cnclient.LocationPage) string { return p.PreviousCursor })
			slices.Reverse(backward)
			assert.Equal(t, want[:len(want)-len(last.Items)], slices.Concat(backward...), "backward from the last page, alternating replicas")
		})
	}

	t.Run("concurrent PATCHes through both replicas lose no update", func(t *testing.T) {
		testConcurrentReplicaWrites(t, a, b)
	})
}

// TestScaleOutCursorSecret shows what replicas must share besides the database: the
// cursor secret. Left unset everywhere, every replica uses the one generated once and
// kept in the database; set differently, one replica refuses the other's cursors.
func TestScaleOutCursorSecret(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets [2]string
		shared  bool
	}{
		{"unset on both: the secret kept in the database", [2]string{"", ""}, true},
		{"different secrets", [2]string{randomHex(32), randomHex(32)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := replicas(t, tc.secrets)
			first, err := a.LocationsPage(t.Context(), cnclient.PageRequest{Limit: 10})
			require.NoError(t, err)
			require.NotEmpty(t, first.NextCursor)
			second, err := b.LocationsPage(t.Context(), cnclient.PageRequest{Cursor: first.NextCursor, Limit: 10})
			if tc.shared {
				require.NoError(t, err)
				require.NotEmpty(t, second.Items)
				assert.Equal(t, "LOC-0011", second.Items[0].ID)
				return
			}
			assert.ErrorIs(t, err, cnclient.ErrInvalid)
			var apiErr *cnclient.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "invalid_cursor", apiErr.Code)
		})
	}
}

// walk pages through the locations, starting with the page the cursor next picks from
// from, or with the first page when from is nil; it sends page i to
// replicas[i%len(replicas)] and stops when next gives no cursor. It returns the ids of
// each page received (from excluded) and the last page received.
func walk(t *testing.T, replicas []*cnclient.Client, size int, from *cnclient.LocationPage, next func(*cnclient.LocationPage) string) ([][]string, *cnclient.LocationPage) {
	t.Helper()
	var pages [][]string
	page := from
	for i := 0; ; i++ {
		req := cnclient.PageRequest{Limit: size}
		if page != nil {
			if req.Cursor = next(page); req.Cursor == "" {
				return pages, page
			}
		}
		var err error
		page, err = replicas[i%len(replicas)].LocationsPage(t.Context(), req)
		require.NoError(t, err, "page %d", i)
		require.LessOrEqual(t, len(page.Items), size)
		ids := make([]string, len(page.Items))
		for j, l := range page.Items {
			ids[j] = l.ID
		}
		pages = append(pages, ids)
		require.Less(t, i, 200, "the walk does not end")
	}
}

// testConcurrentReplicaWrites has six writers, each owning one field of one connector
// of EVSE 1003 and sending its PATCHes alternately through both replicas. At the end
// every field holds its writer's last acknowledged value, and the EVSE's version grew
// by exactly the number of acknowledged PATCHes: no write overwrote another.
func testConcurrentReplicaWrites(t *testing.T, a, b *cnclient.Client) {
	const uid, perWriter = 1003, 40
	ctx := t.Context()
	_, startETag, err := a.EVSE(ctx, uid)
	require.NoError(t, err)
	startVersion := etagVersion(t, startETag)

	type writer struct {
		connector int64
		field     string
		last      float64
		acked     int
	}
	var writers []*writer
	for _, c := range []int64{1, 2} {
		for _, f := range []string{"maxElectricPower", "maxAmperage", "maxVoltage"} {
			writers = append(writers, &writer{connector: c, field: f})
		}
	}
	var wg sync.WaitGroup
	for w, wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				v := float64(100 + w*perWriter + i)
				var p cnclient.ConnectorPatch
				switch wr.field {
				case "maxElectricPower":
					p.MaxElectricPower = &v
				case "maxAmperage":
					p.MaxAmperage = &v
				default:
					p.MaxVoltage = &v
				}
				via := []*cnclient.Client{a, b}[(w+i)%2]
				if _, _, err := via.UpdateConnector(ctx, uid, wr.connector, p); err != nil {
					assert.NoError(t, err, "writer %d, PATCH %d", w, i)
					continue
				}
				wr.last, wr.acked = v, wr.acked+1
			}
		}()
	}
	wg.Wait()

	evse, etag, err := b.EVSE(ctx, uid)
	require.NoError(t, err)
	total := 0
	for w, wr := range writers {
		total += wr.acked
		c := evse.Connector(wr.connector)
		require.NotNil(t, c)
		got := map[string]float64{"maxElectricPower": c.MaxElectricPower, "maxAmperage": c.MaxAmperage, "maxVoltage": c.MaxVoltage}[wr.field]
		assert.Equal(t, wr.last, got, "writer %d (%s of connector %d): its last acknowledged value is the final one", w, wr.field, wr.connector)
	}
	assert.Equal(t, len(writers)*perWriter, total, "every PATCH was acknowledged")
	assert.Equal(t, startVersion+int64(total), etagVersion(t, etag), "the version counts every acknowledged PATCH once")
	t.Logf("scale-out: %d concurrent PATCHes through 2 replicas, %d acknowledged, version %d -> %d",
		len(writers)*perWriter, total, startVersion, etagVersion(t, etag))
}

// etagVersion reads the EVSE version out of an ETag ("<version>").
func etagVersion(t *testing.T, etag string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(strings.Trim(etag, `"`), 10, 64)
	require.NoError(t, err, "ETag %q", etag)
	return v
}
