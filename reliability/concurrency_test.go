package reliability

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fields = []string{"maxElectricPower", "maxAmperage", "maxVoltage"}

// ack is one acknowledged PATCH: the field and value it set and the EVSE version its
// response carried.
type ack struct {
	field   string
	value   float64
	version int64
}

// TestConcurrentWriters has 64 clients PATCH the same connector, each one field, for a
// while (2 s, or 10 s in the long mode). Every response is logged. The EVSE version
// orders the acknowledged PATCHes: each must have its own version, the final version
// must count them all, and every field must end at the value of its last acknowledged
// PATCH in that order; no acknowledged write is lost or reordered.
func TestConcurrentWriters(t *testing.T) {
	const clients, uid, connector = 64, 1003, 1
	duration := 2 * time.Second
	if long() {
		duration = 10 * time.Second
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.database(t))
			a := newAPI(srv.Base, true)
			_, start := a.getEVSE(t, uid)

			var (
				mu   sync.Mutex
				acks []ack
				wg   sync.WaitGroup
			)
			statuses := &histogram{}
			deadline := time.Now().Add(duration)
			for c := range clients {
				wg.Go(func() {
					field := fields[c%len(fields)]
					for seq := 0; time.Now().Before(deadline); seq++ {
						// Unique per client and request, within every field's bounds.
						value := float64(1+seq%1000) + float64(c)/100
						res, err := a.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/%d", uid, connector), patchBody(field, value))
						if err != nil {
							statuses.add(0)
							assert.NoError(t, err)
							return
						}
						statuses.add(res.status)
						if !assert.Equal(t, http.StatusOK, res.status, "%s", res.body) {
							return
						}
						v := version(t, res.header.Get("ETag"))
						mu.Lock()
						acks = append(acks, ack{field, value, v})
						mu.Unlock()
					}
				})
			}
			wg.Wait()

			final, end := a.getEVSE(t, uid)
			seen := map[int64]bool{}
			last := map[string]ack{}
			for _, k := range acks {
				assert.False(t, seen[k.version], "version %d acknowledged twice", k.version)
				seen[k.version] = true
				if k.version > last[k.field].version {
					last[k.field] = k
				}
			}
			assert.Equal(t, start+int64(len(acks)), end, "the version counts every acknowledged PATCH once")
			for _, f := range fields {
				require.NotZero(t, last[f].version, "no acknowledged PATCH of %s", f)
				assert.Equal(t, last[f].value, final.field(connector, f), "%s holds its last acknowledged value", f)
			}
			t.Logf("%s: %d clients for %s: %d PATCHes acknowledged (%.0f/s), answers %s; version %d -> %d",
				b.name, clients, duration, len(acks), float64(len(acks))/duration.Seconds(), statuses, start, end)
		})
	}
}

// TestIfMatchRaces has 16 clients PATCH one connector at once, all with the same
// If-Match: exactly one wins each round and the others get 412.
func TestIfMatchRaces(t *testing.T) {
	const racers, uid = 16, 1005
	rounds := 20
	if long() {
		rounds = 200
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.database(t))
			a := newAPI(srv.Base, true)
			total := &histogram{}
			for round := range rounds {
				_, v := a.getEVSE(t, uid)
				etag := fmt.Sprintf(`"%d"`, v)
				statuses := &histogram{}
				var wg sync.WaitGroup
				start := make(chan struct{})
				for r := range racers {
					wg.Go(func() {
						<-start
						res, err := a.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", uid),
							patchBody("maxVoltage", float64(100+r+round)), "If-Match", etag)
						if !assert.NoError(t, err) {
							statuses.add(0)
							total.add(0)
							return
						}
						statuses.add(res.status)
						total.add(res.status)
					})
				}
				close(start)
				wg.Wait()
				assert.Equal(t, 1, statuses.n[http.StatusOK], "round %d: one winner (%s)", round, statuses)
				assert.Equal(t, racers-1, statuses.n[http.StatusPreconditionFailed], "round %d: the rest 412 (%s)", round, statuses)
				_, after := a.getEVSE(t, uid)
				assert.Equal(t, v+1, after, "round %d: one write", round)
			}
			t.Logf("%s: %d rounds of %d racers on one ETag: %s", b.name, rounds, racers, total)
		})
	}
}
