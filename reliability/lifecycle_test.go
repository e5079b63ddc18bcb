package reliability

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const lifeLocation = `{"name": "Hafen Depot", "address": "Kai 7", "city": "Hamburg", "postalCode": "20457",
	"country": "DEU", "coordinates": {"latitude": 53.54, "longitude": 9.98}, "timeZone": "Europe/Berlin"}`

// createBody is the body of POST /v2/evses for an EVSE with evseId DE*CNT*E<n> at
// location HAFEN-1.
func createBody(n int) string {
	return fmt.Sprintf(`{"evseId": "DE*CNT*E%d", "chargeboxId": 901, "locationId": "HAFEN-1", "connectors": [{"id": 1,
		"standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", "maxElectricPower": 22,
		"maxAmperage": 32, "maxVoltage": 400}]}`, n)
}

// putHafen creates location HAFEN-1.
func putHafen(t *testing.T, a *api) {
	t.Helper()
	res, err := a.do(http.MethodPut, "/v1/locations/HAFEN-1", lifeLocation)
	require.NoError(t, err)
	require.Contains(t, []int{http.StatusCreated, http.StatusOK}, res.status, "%s", res.body)
}

// hafenEVSEs returns the uids at location HAFEN-1.
func hafenEVSEs(t *testing.T, a *api) []int64 {
	t.Helper()
	res, err := a.do(http.MethodGet, "/v1/locations/HAFEN-1", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var l struct {
		EvseUids []int64 `json:"evseUids"`
	}
	require.NoError(t, json.Unmarshal(res.body, &l))
	return l.EvseUids
}

type created struct {
	UID    int64  `json:"uid"`
	EvseID string `json:"evseId"`
}

// TestIdempotentCreate sends 32 concurrent POSTs with one Idempotency-Key through two
// servers on one database: exactly one EVSE is created, and every answer is either that
// EVSE (201, the first or a replay) or 409 idempotency_key_in_use.
func TestIdempotentCreate(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db := b.database(t)
			one := serve(t, db)
			two := serve(t, db)
			apis := []*api{newAPI(one.Base, true), newAPI(two.Base, true)}
			putHafen(t, apis[0])
			var (
				mu      sync.Mutex
				bodies  = map[string]int{}
				codes   histogram
				wg      sync.WaitGroup
				release = make(chan struct{})
			)
			for i := range 32 {
				wg.Go(func() {
					<-release
					res, err := apis[i%2].do(http.MethodPost, "/v2/evses", createBody(7001), "Idempotency-Key", "one-key-for-all")
					if !assert.NoError(t, err) {
						return
					}
					codes.add(res.status)
					switch res.status {
					case http.StatusCreated:
						mu.Lock()
						bodies[string(res.body)]++
						mu.Unlock()
					case http.StatusConflict:
						assert.Contains(t, string(res.body), "idempotency_key_in_use")
					default:
						t.Errorf("status %d: %s", res.status, res.body)
					}
				})
			}
			close(release)
			wg.Wait()
			assert.Len(t, hafenEVSEs(t, apis[0]), 1, "exactly one EVSE created (answers: %s)", &codes)
			assert.Len(t, bodies, 1, "every 201 carries the same EVSE")
			t.Logf("%s: 32 concurrent POSTs with one key through two servers: %s", b.name, &codes)
		})
	}
}

// TestCreateCrash kills the server with SIGKILL while 4 clients create EVSEs, each
// request with its own Idempotency-Key, restarts it, and has each client retry the
// request that was in flight, with its key. Every acknowledged create is present once;
// the retry of a request whose create was committed before the kill gets that EVSE
// back (the key was committed with it), never a second EVSE nor a "taken" conflict.
func TestCreateCrash(t *testing.T) {
	rounds := 3
	if long() {
		rounds = 10
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db := b.database(t)
			srv := serve(t, db)
			putHafen(t, newAPI(srv.Base, true))
			require.NoError(t, srv.Stop(10*time.Second))
			want := map[string]int64{} // evseId -> uid of every acknowledged create
			next := 10000
			replayed := 0
			for round := range rounds {
				srv := serve(t, db)
				a := newAPI(srv.Base, true)
				a.check = false // a response cut by the kill is not the server's answer
				type client struct {
					acked    map[int]int64 // evseId number -> uid of each acknowledged create
					inflight int           // the create that failed (0: none)
				}
				clients := make([]*client, 4)
				var wg sync.WaitGroup
				for i := range clients {
					c := &client{acked: map[int]int64{}}
					clients[i] = c
					first := next + i*1000
					wg.Go(func() {
						for n := first; n < first+1000; n++ {
							res, err := a.do(http.MethodPost, "/v2/evses", createBody(n), "Idempotency-Key", fmt.Sprintf("create-%d", n))
							if err != nil || res.status != http.StatusCreated {
								c.inflight = n
								return
							}
							var e created
							if json.Unmarshal(res.body, &e) != nil {
								c.inflight = n
								return
							}
							c.acked[n] = e.UID
						}
					})
				}
				time.Sleep(time.Duration(150+rand.IntN(300)) * time.Millisecond)
				srv.Kill()
				wg.Wait()
				<-srv.Done()
				next += 4 * 1000

				srv = serve(t, db)
				check := newAPI(srv.Base, true)
				for _, c := range clients {
					for n, uid := range c.acked {
						want[fmt.Sprintf("DE*CNT*E%d", n)] = uid
					}
					if c.inflight == 0 {
						continue
					}
					res, err := check.do(http.MethodPost, "/v2/evses", createBody(c.inflight), "Idempotency-Key", fmt.Sprintf("create-%d", c.inflight))
					require.NoError(t, err)
					require.Equal(t, http.StatusCreated, res.status, "round %d: the retry of create %d: %s", round, c.inflight, res.body)
					if res.header.Get("Idempotent-Replayed") == "true" {
						replayed++
					}
					var e created
					require.NoError(t, json.Unmarshal(res.body, &e))
					want[e.EvseID] = e.UID
				}
				require.NoError(t, srv.Stop(10*time.Second))
			}
			srv = serve(t, db)
			a := newAPI(srv.Base, true)
			uids := hafenEVSEs(t, a)
			assert.Len(t, uids, len(want), "every acknowledged or retried create once, nothing else")
			got := map[string]int64{}
			for _, uid := range uids {
				res, err := a.do(http.MethodGet, fmt.Sprintf("/v2/evses/%d", uid), "")
				require.NoError(t, err)
				var e created
				require.NoError(t, json.Unmarshal(res.body, &e))
				_, twice := got[e.EvseID]
				assert.False(t, twice, "%s present twice", e.EvseID)
				got[e.EvseID] = e.UID
			}
			assert.Equal(t, want, got)
			assert.Positive(t, len(want))
			t.Logf("%s: %d kill -9 rounds, %d creates verified present once; %d in-flight creates had committed and were replayed on retry",
				b.name, rounds, len(want), replayed)
		})
	}
}

// TestLifecycleWebhooks subscribes to every inventory event type, walks a location and
// an EVSE through their whole life and checks that one verified event per change
// arrives, with the EVSE version each change produced.
func TestLifecycleWebhooks(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			rcv := startReceiver(t)
			srv := serve(t, b.database(t), webhookArgs...)
			a := newAPI(srv.Base, true)
			types := []string{"location.created", "location.updated", "location.deleted", "evse.created", "evse.removed",
				"evse.status.changed", "evse.updated", "evse.connector.created", "evse.connector.deleted"}
			subscribe(t, a, rcv, "/life", types...)

			type change struct {
				typ     string
				version int64 // of the EVSE; 0 for location events
			}
			var want []change
			step := func(method, path, body string, status int, events ...string) int64 {
				t.Helper()
				res, err := a.do(method, path, body)
				require.NoError(t, err)
				require.Equal(t, status, res.status, "%s %s: %s", method, path, res.body)
				var v int64
				if etag := res.header.Get("ETag"); etag != "" {
					v = version(t, etag)
				}
				for _, typ := range events {
					want = append(want, change{typ, v})
				}
				return v
			}
			step(http.MethodPut, "/v1/locations/HAFEN-1", lifeLocation, http.StatusCreated, "location.created")
			step(http.MethodPut, "/v1/locations/HAFEN-1", lifeLocation, http.StatusOK) // unchanged: no event
			step(http.MethodPut, "/v1/locations/HAFEN-1", `{"name": "Hafen Nord", "address": "Kai 7", "city": "Hamburg",
				"country": "DEU", "coordinates": {"latitude": 53.54, "longitude": 9.98}, "timeZone": "Europe/Berlin"}`, http.StatusOK, "location.updated")
			res, err := a.do(http.MethodPost, "/v2/evses", createBody(8001))
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
			var e created
			require.NoError(t, json.Unmarshal(res.body, &e))
			want = append(want, change{"evse.created", 1})
			path := fmt.Sprintf("/v2/evses/%d", e.UID)
			step(http.MethodPatch, path, `{"status": "AVAILABLE"}`, http.StatusOK, "evse.status.changed")
			step(http.MethodPatch, path, `{"chargeboxId": 8002}`, http.StatusOK, "evse.updated")
			step(http.MethodPatch, path, `{"chargeboxId": 8002}`, http.StatusOK) // again: no event
			step(http.MethodPost, path+"/connectors", `{"standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE",
				"maxElectricPower": 11, "maxAmperage": 16, "maxVoltage": 400}`, http.StatusCreated, "evse.connector.created")
			step(http.MethodDelete, path+"/connectors/2", "", http.StatusOK, "evse.connector.deleted")
			step(http.MethodDelete, path+"/connectors/2", "", http.StatusOK) // again: no event
			step(http.MethodDelete, path, "", http.StatusOK, "evse.status.changed", "evse.removed")
			step(http.MethodDelete, "/v1/locations/HAFEN-1", "", http.StatusOK, "location.deleted")

			var rs []receipt
			require.Eventually(t, func() bool {
				rs = at(rcv.receipts(t), "/life")
				return len(acked(rs, "/life")) >= len(want)
			}, 15*time.Second, 20*time.Millisecond, "every event delivered")
			time.Sleep(200 * time.Millisecond) // room for an extra one to show
			rs = at(rcv.receipts(t), "/life")
			var got []change
			for _, r := range rs {
				assert.True(t, r.Verified, r.Error)
				v := r.Data.Version
				if r.Data.LocationID != "" {
					v = 0
					assert.Equal(t, "HAFEN-1", r.Data.LocationID)
				} else {
					assert.Equal(t, e.UID, r.Data.UID)
				}
				if r.Type == "evse.status.changed" {
					assert.Equal(t, "operator", r.Data.Source, "subscribed at the latest")
				}
				got = append(got, change{r.Type, v})
			}
			cmp := func(a, b change) int {
				if a.typ != b.typ {
					if a.typ < b.typ {
						return -1
					}
					return 1
				}
				return int(a.version - b.version)
			}
			slices.SortFunc(want, cmp)
			slices.SortFunc(got, cmp)
			assert.Equal(t, want, got, "one event per change, no more")
		})
	}
}
