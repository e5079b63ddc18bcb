package reliability

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// receipt is one request the receiver got (see scripts/webhook-receiver.mjs).
type receipt struct {
	Path       string  `json:"path"`
	ID         string  `json:"id"`
	ReceivedAt float64 `json:"receivedAt"` // ms since the epoch
	Verified   bool    `json:"verified"`
	Error      string  `json:"error"`
	Type       string  `json:"type"`
	EventTime  string  `json:"eventTime"`
	Status     int     `json:"status"` // -1: held open
	Data       struct {
		UID        int64  `json:"uid"`
		Version    int64  `json:"version"`
		Status     string `json:"status"`
		LocationID string `json:"id"` // location events
		Source     string `json:"source"`
	} `json:"data"`
}

// receiver is the Node webhook receiver, verifying with the npm standardwebhooks package.
type receiver struct {
	base, log string
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "tools/node_modules/standardwebhooks")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tools/node_modules/standardwebhooks is missing: run `make tools-npm` (%v)", err)
		}
		t.Skip("tools/node_modules/standardwebhooks is missing: run `make tools-npm` to run the webhook proof")
	}
	log := filepath.Join(t.TempDir(), "receipts.jsonl")
	cmd := exec.Command("node", filepath.Join(root, "scripts/webhook-receiver.mjs"), log)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the receiver did not print its port")
	return &receiver{base: "http://127.0.0.1:" + strings.TrimSpace(line), log: log}
}

// secret registers the secret of the webhook that delivers to path.
func (r *receiver) secret(t *testing.T, path, secret string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, r.base+"/_secret"+path, strings.NewReader(secret))
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
}

func (r *receiver) receipts(t *testing.T) []receipt {
	t.Helper()
	b, err := os.ReadFile(r.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	// The receiver may be appending a line right now: read complete lines only.
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	var out []receipt
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var rc receipt
		require.NoError(t, json.Unmarshal([]byte(line), &rc), line)
		out = append(out, rc)
	}
	return out
}

// at returns the receipts of path.
func at(rs []receipt, path string) []receipt {
	var out []receipt
	for _, r := range rs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// acked returns the ids path answered 2xx, each once.
func acked(rs []receipt, path string) map[string]receipt {
	out := map[string]receipt{}
	for _, r := range at(rs, path) {
		if r.Status >= 200 && r.Status < 300 {
			out[r.ID] = r
		}
	}
	return out
}

type createdWebhook struct {
	ID       string `json:"id"`
	Secret   string `json:"secret"`
	Enabled  bool   `json:"enabled"`
	Disabled string `json:"disabled_reason"`
}

// subscribe creates a webhook delivering types to the receiver's path.
func subscribe(t *testing.T, a *api, rcv *receiver, path string, types ...string) createdWebhook {
	t.Helper()
	w := createWebhook(t, a, rcv.base+path, types...)
	rcv.secret(t, path, w.Secret)
	return w
}

// createWebhook creates a webhook delivering types to url.
func createWebhook(t *testing.T, a *api, url string, types ...string) createdWebhook {
	t.Helper()
	subs := make([]string, len(types))
	for i, typ := range types {
		subs[i] = fmt.Sprintf(`{"type": %q}`, typ)
	}
	res, err := a.do(http.MethodPost, "/emsp/v1/webhooks", fmt.Sprintf(`{"url": %q, "event_types": [%s]}`, url, strings.Join(subs, ",")))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	var w createdWebhook
	require.NoError(t, json.Unmarshal(res.body, &w))
	return w
}

// patched PATCHes connector 1 of EVSE 1002 and returns the EVSE version it produced.
func patched(t *testing.T, a *api, power float64) int64 {
	t.Helper()
	res, err := a.do(http.MethodPatch, "/v2/evses/1002/connectors/1", patchBody("maxElectricPower", power))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	return version(t, res.header.Get("ETag"))
}

// webhookArgs makes retries and polling fast enough for a test.
var webhookArgs = []string{"--webhook-allow-insecure", "--webhook-retry-schedule", "100ms,100ms,100ms",
	"--webhook-poll", "50ms", "--webhook-timeout", "1s"}

// TestWebhookDelivery is the end-to-end proof of webhook delivery on the real binary:
// a receiver written with the npm standardwebhooks package verifies every delivery of a
// PATCH and a status notification, through a receiver that fails twice, one that
// answers 410, a server killed after the commit and before the delivery, and one killed
// while the delivery is in flight. Every event produced is delivered, verified.
func TestWebhookDelivery(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { testWebhookDelivery(t, b.database(t)) })
	}
}

func testWebhookDelivery(t *testing.T, database string) {
	rcv := startReceiver(t)
	bin := proctest.Binary(t)
	out, err := exec.Command(bin, "apikey", "create", "--name", "ingest", "--scope", "ingest", "--database", database).Output()
	require.NoError(t, err)
	ingestKey := strings.TrimSpace(string(out))

	srv := serve(t, database, webhookArgs...)
	a := newAPI(srv.Base, true)
	ok := subscribe(t, a, rcv, "/ok/1", "evse.connector.updated", "evse.status.changed")
	flaky := subscribe(t, a, rcv, "/flaky/1", "evse.connector.updated")
	gone := subscribe(t, a, rcv, "/gone/1", "evse.connector.updated")

	// Every change, with the EVSE version it produced: the events that must arrive.
	type change struct {
		typ     string
		uid     int64
		version int64
	}
	var changes []change
	changes = append(changes, change{"evse.connector.updated", 1002, patched(t, a, 101)})

	res, err := a.do(http.MethodPost, "/internal/v1/chargeboxes/501/status-notifications",
		`{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure", "info": "ground fault"}`, "Authorization", "Bearer "+ingestKey)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var sn struct {
		Evses []struct {
			UID     int64  `json:"uid"`
			Status  string `json:"status"`
			Version int64  `json:"version"`
		} `json:"evses"`
	}
	require.NoError(t, json.Unmarshal(res.body, &sn))
	require.Len(t, sn.Evses, 1)
	assert.Equal(t, "OUTOFORDER", sn.Evses[0].Status, "Faulted turns the EVSE OUTOFORDER")
	changes = append(changes, change{"evse.status.changed", 1001, sn.Evses[0].Version})
	res, err = a.do(http.MethodGet, "/v2/evses/1001", "")
	require.NoError(t, err)
	assert.Contains(t, string(res.body), `"status":"OUTOFORDER"`)

	waitFor := func(what string, timeout time.Duration, cond func([]receipt) bool) []receipt {
		t.Helper()
		var rs []receipt
		deadline := time.Now().Add(timeout)
		for {
			rs = rcv.receipts(t)
			if cond(rs) {
				return rs
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: %d receipts so far: %+v\nserver log:\n%s", what, len(rs), rs, srv.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rs := waitFor("the first deliveries", 10*time.Second, func(rs []receipt) bool {
		return len(acked(rs, "/ok/1")) == 2 && len(acked(rs, "/flaky/1")) == 1 && len(at(rs, "/gone/1")) == 1
	})
	flakyFirst := at(rs, "/flaky/1")
	require.Len(t, flakyFirst, 3, "fails twice, then succeeds")
	assert.Equal(t, []int{503, 503, 204}, []int{flakyFirst[0].Status, flakyFirst[1].Status, flakyFirst[2].Status})
	assert.Equal(t, flakyFirst[0].ID, flakyFirst[2].ID, "retries carry the same webhook-id")

	// 410 disabled the subscription.
	var goneNow createdWebhook
	require.Eventually(t, func() bool {
		res, err := a.do(http.MethodGet, "/emsp/v1/webhooks/"+gone.ID, "")
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(res.body, &goneNow))
		return !goneNow.Enabled
	}, 5*time.Second, 20*time.Millisecond, "the 410 disables the subscription")
	assert.Contains(t, goneNow.Disabled, "410")

	// The delivery record of the flaky receiver shows the three attempts, newest first.
	// (The attempt is recorded just after the receiver's answer: wait for the record.)
	var attempts struct {
		Data []struct {
			Attempt    int    `json:"attempt"`
			Outcome    string `json:"outcome"`
			HTTPStatus int    `json:"http_status"`
		} `json:"data"`
	}
	require.Eventually(t, func() bool {
		res, err := a.do(http.MethodGet, "/emsp/v1/webhooks/"+flaky.ID+"/deliveries", "")
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(res.body, &attempts))
		return len(attempts.Data) == 3
	}, 5*time.Second, 20*time.Millisecond, "three attempts recorded")
	assert.Equal(t, "succeeded", attempts.Data[0].Outcome)
	assert.Equal(t, 3, attempts.Data[0].Attempt)
	assert.Equal(t, "failed", attempts.Data[2].Outcome)
	assert.Equal(t, 503, attempts.Data[2].HTTPStatus)

	changes = append(changes, change{"evse.connector.updated", 1002, patched(t, a, 102)})
	waitFor("the third event", 10*time.Second, func(rs []receipt) bool {
		return len(acked(rs, "/ok/1")) == 3 && len(acked(rs, "/flaky/1")) == 2
	})

	// kill -9 after the commit, before any delivery: a server that does not dispatch
	// commits the change and dies; the next server delivers it.
	srv.Kill()
	srv = serve(t, database, append([]string{"--webhook-dispatch=false"}, webhookArgs...)...)
	a = newAPI(srv.Base, true)
	changes = append(changes, change{"evse.connector.updated", 1002, patched(t, a, 103)})
	srv.Kill()
	srv = serve(t, database, webhookArgs...)
	a = newAPI(srv.Base, true)
	waitFor("the event committed before kill -9", 10*time.Second, func(rs []receipt) bool {
		return len(acked(rs, "/ok/1")) == 4 && len(acked(rs, "/flaky/1")) == 3
	})

	// kill -9 while a delivery is in flight: the receiver holds the request open, the
	// server dies, and the restarted server delivers again once the lease has expired.
	hang := subscribe(t, a, rcv, "/hang/1", "evse.connector.updated")
	changes = append(changes, change{"evse.connector.updated", 1002, patched(t, a, 104)})
	waitFor("the held delivery", 10*time.Second, func(rs []receipt) bool { return len(at(rs, "/hang/1")) == 1 })
	srv.Kill()
	srv = serve(t, database, webhookArgs...)
	a = newAPI(srv.Base, true)
	rs = waitFor("the delivery after kill -9", 30*time.Second, func(rs []receipt) bool {
		return len(acked(rs, "/hang/1")) == 1 && len(acked(rs, "/ok/1")) == 5 && len(acked(rs, "/flaky/1")) == 4
	})
	hangs := at(rs, "/hang/1")
	assert.Equal(t, hangs[0].ID, hangs[len(hangs)-1].ID, "the same event, again")

	// Accounting: every change arrived at /ok, verified, as exactly one event id; the
	// 410 receiver got its one request and nothing after it.
	for _, r := range rs {
		assert.True(t, r.Verified, "%s %s: %s", r.Path, r.ID, r.Error)
	}
	okAcked := acked(rs, "/ok/1")
	require.Len(t, okAcked, len(changes), "events produced = events delivered")
	var got, want []string
	for _, r := range okAcked {
		got = append(got, fmt.Sprintf("%s %d v%d", r.Type, r.Data.UID, r.Data.Version))
	}
	for _, c := range changes {
		want = append(want, fmt.Sprintf("%s %d v%d", c.typ, c.uid, c.version))
	}
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got)
	assert.Len(t, at(rs, "/gone/1"), 1, "a disabled subscription gets nothing more")
	okAll := at(rs, "/ok/1")
	t.Logf("deliveries to /ok: %d requests for %d events (duplicates, allowed by at-least-once, share a webhook-id)", len(okAll), len(okAcked))

	// Throughput and latency: 1,000 changes, delivered to one receiver.
	for _, id := range []string{flaky.ID, hang.ID} {
		res, err := a.do(http.MethodDelete, "/emsp/v1/webhooks/"+id, "")
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, res.status)
	}
	_ = ok
	const n, writers = 1000, 16
	produce := func(a *api) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += writers {
					res, err := a.do(http.MethodPatch, "/v2/evses/1002/connectors/1", patchBody("maxElectricPower", float64(200+i%100)))
					if assert.NoError(t, err) {
						assert.Equal(t, http.StatusOK, res.status)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	// fresh returns the receipts at /ok/1 that are not in seen, and adds them to it.
	seen := map[string]bool{}
	for id := range okAcked {
		seen[id] = true
	}
	fresh := func(rs []receipt) []receipt {
		var out []receipt
		for id, r := range acked(rs, "/ok/1") {
			if !seen[id] {
				seen[id] = true
				out = append(out, r)
			}
		}
		return out
	}
	target := len(seen) + n

	// Latency while the changes happen: commit to receipt.
	start := time.Now()
	committed := produce(a)
	rs = waitFor("1,000 deliveries", 60*time.Second, func(rs []receipt) bool { return len(acked(rs, "/ok/1")) == target })
	var lat []float64
	var last float64
	for _, r := range fresh(rs) {
		ev, err := time.Parse(time.RFC3339Nano, r.EventTime)
		require.NoError(t, err)
		lat = append(lat, r.ReceivedAt-float64(ev.UnixNano())/1e6)
		last = max(last, r.ReceivedAt)
	}
	require.Len(t, lat, n)
	slices.Sort(lat)
	span := last - float64(start.UnixNano())/1e6
	t.Logf("1,000 events while %d writers PATCH: commits took %v; all delivered %.0f ms after the first commit; latency commit→receipt p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		writers, committed.Round(time.Millisecond), span, lat[n/2], lat[n*99/100], lat[n-1])

	// Dispatcher throughput: 1,000 events committed while no dispatcher runs, then
	// drained by one.
	srv.Kill()
	srv = serve(t, database, append([]string{"--webhook-dispatch=false"}, webhookArgs...)...)
	produce(newAPI(srv.Base, true))
	srv.Kill()
	target += n
	srv = serve(t, database, webhookArgs...)
	rs = waitFor("1,000 queued deliveries", 60*time.Second, func(rs []receipt) bool { return len(acked(rs, "/ok/1")) == target })
	first, last := 0.0, 0.0
	for _, r := range fresh(rs) {
		if first == 0 || r.ReceivedAt < first {
			first = r.ReceivedAt
		}
		last = max(last, r.ReceivedAt)
	}
	t.Logf("dispatcher throughput: 1,000 queued events delivered in %.0f ms from the first receipt to the last (%.0f events/s)",
		last-first, n/((last-first)/1000))
}

// TestWebhookReplicas runs two replicas on one PostgreSQL database, both dispatching:
// every event is delivered, and, with a receiver that never fails, exactly once —
// each delivery is claimed by one dispatcher at a time.
func TestWebhookReplicas(t *testing.T) {
	database := proctest.PostgresDatabase(t)
	rcv := startReceiver(t)
	one := serve(t, database, webhookArgs...)
	two := serve(t, database, webhookArgs...)
	a, b := newAPI(one.Base, true), newAPI(two.Base, true)
	subscribe(t, a, rcv, "/ok/replicas", "evse.connector.updated")

	const n = 400
	versions := make(chan int64, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			via := a
			if w%2 == 1 {
				via = b
			}
			for i := w; i < n; i += 8 {
				res, err := via.do(http.MethodPatch, "/v2/evses/1002/connectors/1", patchBody("maxElectricPower", float64(300+i)))
				if assert.NoError(t, err) && assert.Equal(t, http.StatusOK, res.status) {
					versions <- version(t, res.header.Get("ETag"))
				}
			}
		}()
	}
	wg.Wait()
	close(versions)
	deadline := time.Now().Add(30 * time.Second)
	var rs []receipt
	for time.Now().Before(deadline) {
		if rs = at(rcv.receipts(t), "/ok/replicas"); len(rs) >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for a duplicate to show
	rs = at(rcv.receipts(t), "/ok/replicas")
	ids := map[string]int{}
	got := map[int64]bool{}
	for _, r := range rs {
		assert.True(t, r.Verified, r.Error)
		ids[r.ID]++
		got[r.Data.Version] = true
	}
	assert.Len(t, rs, n, "one request per event: no event was claimed by both replicas")
	assert.Len(t, ids, n)
	for v := range versions {
		assert.True(t, got[v], "the change to version %d was delivered", v)
	}
}
