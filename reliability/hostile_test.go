package reliability

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostile is one request of the hostile-input corpus.
type hostile struct {
	name   string
	method string
	path   string // escaped path and query
	body   []byte
	header []string // name, value pairs; a value "" removes the header; a name may repeat
	noKey  bool     // send no Authorization header unless header adds one
	status int      // the documented answer
}

// leaks are what no response body may contain: SQL, driver names, Go internals.
var leaks = regexp.MustCompile(`(?i)\b(select|insert|update\s+\w+\s+set|sqlite|pgx|pq:|postgres|goroutine|panic|runtime\.)\b`)

// TestHostileInput sends a corpus of hostile requests to a live server over SQLite:
// every answer must be the documented 4xx with an Error body that says what is wrong,
// nothing may leak, and afterwards the database files are byte for byte what they were.
func TestHostileInput(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "chargenet.db")

	// A first run loads the demo inventory; its clean stop checkpoints the WAL.
	srv := serve(t, db)
	evseCursor := secondEVSEPage(t, srv.Base)
	require.NoError(t, srv.Stop(10*time.Second))
	before := files(t, dir)

	srv = serve(t, db)
	corpus := hostileCorpus(t, evseCursor)
	statuses := &histogram{}
	hc := &http.Client{Timeout: 15 * time.Second}
	for _, h := range corpus {
		t.Run(h.name, func(t *testing.T) {
			req := h.request(t, srv.Base)
			res, err := hc.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			statuses.add(res.StatusCode)

			assert.Equal(t, h.status, res.StatusCode, "%s", body)
			apitest.Check(t, req, res.StatusCode, res.Header, body)
			var e chargenet.Error
			require.NoError(t, json.Unmarshal(body, &e), "an Error body: %s", body)
			assert.NotEmpty(t, e.Message)
			assert.NotRegexp(t, leaks, string(body), "no internals in the body")
			assert.NotContains(t, string(body), key)
			assert.Empty(t, res.Header.Get("Server"), "no Server header")
		})
	}
	transport := transportCorpus(t, srv.Addr, statuses)

	require.NoError(t, srv.Stop(10*time.Second))
	assert.NotContains(t, srv.Log(), key, "the log never holds a key")
	assert.NotRegexp(t, regexp.MustCompile(`(?i)\b(select|insert into)\b`), srv.Log(), "the log holds no SQL")
	after := files(t, dir)
	assert.Equal(t, before, after, "the database files are byte for byte unchanged")

	// The comparison can fail: one accepted PATCH changes the files.
	srv = serve(t, db)
	res, err := newAPI(srv.Base, true).do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxVoltage": 501}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status)
	require.NoError(t, srv.Stop(10*time.Second))
	assert.NotEqual(t, after, files(t, dir), "an accepted PATCH changes the database files")

	t.Logf("hostile input: %d requests (%d at the HTTP level), answers %s; database files unchanged: %v",
		len(corpus)+transport, transport, statuses, assert.ObjectsAreEqual(before, after))
}

// request is h as a request to the REST API at base.
func (h hostile) request(t *testing.T, base string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(h.method, base+h.path, bytes.NewReader(h.body))
	require.NoError(t, err)
	if !h.noKey {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if h.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(h.header); i += 2 {
		switch {
		case h.header[i+1] == "":
			req.Header.Del(h.header[i])
		case i > 0 && h.header[i] == h.header[i-2]:
			req.Header.Add(h.header[i], h.header[i+1])
		default:
			req.Header.Set(h.header[i], h.header[i+1])
		}
	}
	return req
}

// secondEVSEPage returns the cursor of the second page of EVSEs served at base.
func secondEVSEPage(t *testing.T, base string) string {
	t.Helper()
	res, err := newAPI(base, true).do(http.MethodGet, "/v2/evses?limit=1", "")
	require.NoError(t, err)
	var page struct {
		Pagination struct {
			NextCursor string `json:"next_cursor"`
		} `json:"pagination"`
	}
	require.NoError(t, json.Unmarshal(res.body, &page))
	return page.Pagination.NextCursor
}

// files hashes every file of dir.
func files(t *testing.T, dir string) map[string][sha256.Size]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	sums := map[string][sha256.Size]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		sums[e.Name()] = sha256.Sum256(b)
	}
	return sums
}

func hostileCorpus(t *testing.T, evseCursor string) []hostile {
	t.Helper()
	require.NotEmpty(t, evseCursor)
	// A well-formed cursor signed under another secret.
	other := chargenet.NewCursorCodec([]byte("another-server-secret-0123456789abcdef"))
	page, err := chargenet.Paginate(context.Background(), other, chargenet.ListLocations, "", 1,
		func(context.Context, chargenet.Seek[string]) ([]string, error) {
			return []string{"LOC-0001", "LOC-0002"}, nil
		},
		func(s *string) string { return *s })
	require.NoError(t, err)
	require.NotEmpty(t, page.Next)
	foreign := page.Next

	patch := "/v2/evses/1002/connectors/1"
	evses := "/v2/evses"
	hooks, ingest := "/emsp/v1/webhooks", "/internal/v1/chargeboxes/501/status-notifications"
	sub := `{"type": "evse.status.changed"}`
	ok := []byte(`{"maxVoltage": 500}`)
	longKey := strings.Repeat("k", 4000)
	deep := []byte(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))
	deepObj := []byte(strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000))
	huge := append(append([]byte(`{"maxVoltage": 500, "pad": "`), bytes.Repeat([]byte("x"), 10<<20)...), `"}`...)
	return []hostile{
		// methods
		{name: "PUT an EVSE", method: "PUT", path: "/v2/evses/1001", body: ok, status: 405},
		{name: "DELETE the EVSE list", method: "DELETE", path: "/v2/evses", status: 405},
		{name: "PUT the locations", method: "PUT", path: "/v1/locations", body: ok, status: 405},
		{name: "POST a connector", method: "POST", path: patch, body: ok, status: 405},
		{name: "TRACE", method: "TRACE", path: "/v2/evses/1001", status: 405},
		{name: "unknown path", method: "GET", path: "/v3/evses", status: 404},
		{name: "path traversal", method: "GET", path: "/v1/locations/..%2F..%2Fetc%2Fpasswd", status: 404},
		// authorization
		{name: "no Authorization", method: "GET", path: "/v1/locations", noKey: true, status: 403},
		{name: "empty Authorization", method: "GET", path: "/v1/locations", header: []string{"Authorization", " "}, status: 403},
		{name: "two Authorization headers", method: "GET", path: "/v1/locations",
			header: []string{"Authorization", "Bearer " + key, "Authorization", "Bearer " + key}, status: 403},
		{name: "Bearer without key", method: "GET", path: "/v1/locations", header: []string{"Authorization", "Bearer"}, status: 403},
		{name: "Bearer with two spaces", method: "GET", path: "/v1/locations", header: []string{"Authorization", "Bearer  " + key}, status: 403},
		{name: "key with spaces", method: "GET", path: "/v1/locations", header: []string{"Authorization", "Bearer " + key + " extra"}, status: 403},
		{name: "Unicode key", method: "GET", path: "/v1/locations", header: []string{"Authorization", "Bearer ключ-🔑-0123456789"}, status: 403},
		{name: "very long key", method: "GET", path: "/v1/locations", header: []string{"Authorization", "Bearer " + longKey}, status: 403},
		{name: "Basic scheme", method: "GET", path: "/v1/locations", header: []string{"Authorization", "Basic dXNlcjpwYXNz"}, status: 403},
		{name: "key as query parameter", method: "GET", path: "/v1/locations?api_key=" + key, noKey: true, status: 403},
		{name: "PATCH without key", method: "PATCH", path: patch, body: ok, noKey: true, status: 403},
		// path parameters
		{name: "uid -1", method: "GET", path: "/v2/evses/-1", status: 400},
		{name: "uid 0", method: "GET", path: "/v2/evses/0", status: 400},
		{name: "uid 1e309", method: "GET", path: "/v2/evses/1e309", status: 400},
		{name: "uid beyond int64", method: "GET", path: "/v2/evses/999999999999999999999", status: 400},
		{name: "uid 1.5", method: "GET", path: "/v2/evses/1.5", status: 400},
		{name: "uid NUL", method: "GET", path: "/v2/evses/%00", status: 400},
		{name: "uid with NUL", method: "GET", path: "/v2/evses/1001%00", status: 400},
		{name: "uid unknown", method: "GET", path: "/v2/evses/999999", status: 404},
		{name: "location id NUL", method: "GET", path: "/v1/locations/%00", status: 400},
		{name: "location id quote", method: "GET", path: "/v1/locations/%27%20OR%201=1--", status: 400},
		{name: "location id too long", method: "GET", path: "/v1/locations/" + strings.Repeat("A", 300), status: 400},
		{name: "connector -1", method: "PATCH", path: "/v2/evses/1002/connectors/-1", body: ok, status: 400},
		{name: "connector beyond int64", method: "PATCH", path: "/v2/evses/1002/connectors/999999999999999999999", body: ok, status: 400},
		// bodies
		{name: "not JSON", method: "PATCH", path: patch, body: []byte("maxVoltage=500"), status: 400},
		{name: "truncated JSON", method: "PATCH", path: patch, body: []byte(`{"maxVoltage": 5`), status: 400},
		{name: "duplicate keys", method: "PATCH", path: patch, body: []byte(`{"maxVoltage": 500, "maxVoltage": 600}`), status: 400},
		{name: "deep array nesting", method: "PATCH", path: patch, body: deep, status: 400},
		{name: "deep object nesting", method: "PATCH", path: patch, body: deepObj, status: 400},
		{name: "10 MB body", method: "PATCH", path: patch, body: huge, status: 413},
		{name: "NaN", method: "PATCH", path: patch, body: []byte(`{"maxVoltage": NaN}`), status: 400},
		{name: "number 1e309", method: "PATCH", path: patch, body: []byte(`{"maxVoltage": 1e309}`), status: 400},
		{name: "invalid UTF-8", method: "PATCH", path: patch, body: []byte("{\"standard\": \"\xff\xfe\"}"), status: 400},
		{name: "empty body", method: "PATCH", path: patch, body: []byte{}, status: 400},
		{name: "text/plain", method: "PATCH", path: patch, body: ok, header: []string{"Content-Type", "text/plain"}, status: 415},
		{name: "no Content-Type", method: "PATCH", path: patch, body: ok, header: []string{"Content-Type", ""}, status: 415},
		{name: "multipart", method: "PATCH", path: patch, body: ok, header: []string{"Content-Type", "multipart/form-data; boundary=x"}, status: 415},
		{name: "stale If-Match", method: "PATCH", path: patch, body: ok, header: []string{"If-Match", `"0"`}, status: 412},
		{name: "garbage If-Match", method: "PATCH", path: patch, body: ok, header: []string{"If-Match", `W/"1", "x`}, status: 412},
		{name: "deleted connector", method: "PATCH", path: "/v2/evses/1004/connectors/4", body: ok, status: 409},
		// query strings
		{name: "limit=0", method: "GET", path: "/v1/locations?limit=0", status: 400},
		{name: "limit=101", method: "GET", path: "/v1/locations?limit=101", status: 400},
		{name: "limit=-1", method: "GET", path: "/v1/locations?limit=-1", status: 400},
		{name: "limit=abc", method: "GET", path: "/v1/locations?limit=abc", status: 400},
		{name: "limit=1.5", method: "GET", path: "/v1/locations?limit=1.5", status: 400},
		{name: "limit twice", method: "GET", path: "/v2/evses?limit=1&limit=2", status: 400},
		{name: "cursor of another list", method: "GET", path: "/v1/locations?cursor=" + evseCursor, status: 400},
		{name: "cursor of another secret", method: "GET", path: "/v1/locations?cursor=" + foreign, status: 400},
		{name: "cursor tampered", method: "GET", path: "/v2/evses?cursor=" + tamper(evseCursor), status: 400},
		{name: "cursor garbage", method: "GET", path: "/v2/evses?cursor=%00%ff", status: 400},
		{name: "cursor empty", method: "GET", path: "/v2/evses?cursor=", status: 400},
		// webhooks: nothing refused may create a subscription
		{name: "webhook to loopback", method: "POST", path: hooks, body: hook("https://127.0.0.1:8080/v2/evses", sub), status: 400},
		{name: "webhook to cloud metadata", method: "POST", path: hooks, body: hook("https://169.254.169.254/latest/meta-data/", sub), status: 400},
		{name: "webhook to localhost", method: "POST", path: hooks, body: hook("https://localhost./x", sub), status: 400},
		{name: "webhook to IPv6 mapped private", method: "POST", path: hooks, body: hook("https://[::ffff:192.168.1.1]/x", sub), status: 400},
		{name: "webhook over http", method: "POST", path: hooks, body: hook("http://emsp.example.com/x", sub), status: 400},
		{name: "webhook file URL", method: "POST", path: hooks, body: hook("file:///etc/passwd", sub), status: 400},
		{name: "webhook gopher URL", method: "POST", path: hooks, body: hook("gopher://emsp.example.com:70/", sub), status: 400},
		{name: "webhook javascript URL", method: "POST", path: hooks, body: hook("javascript:alert(1)", sub), status: 400},
		{name: "webhook credentials in URL", method: "POST", path: hooks, body: hook("https://admin:admin@emsp.example.com/", sub), status: 400},
		{name: "webhook URL over 2048", method: "POST", path: hooks, body: hook("https://emsp.example.com/"+strings.Repeat("a", 3000), sub), status: 400},
		{name: "webhook unknown type", method: "POST", path: hooks, body: hook("https://emsp.example.com/x", `{"type": "evse.*"}`), status: 400},
		{name: "webhook 51 types", method: "POST", path: hooks, body: hook("https://emsp.example.com/x", strings.TrimSuffix(strings.Repeat(sub+",", 51), ",")), status: 400},
		{name: "webhook with its own secret", method: "POST", path: hooks, body: []byte(`{"url": "https://emsp.example.com/x", "secret": "whsec_AAAA", "event_types": [` + sub + `]}`), status: 400},
		{name: "webhook duplicate url key", method: "POST", path: hooks, body: []byte(`{"url": "https://emsp.example.com/x", "url": "https://127.0.0.1/", "event_types": [` + sub + `]}`), status: 400},
		{name: "webhook id traversal", method: "GET", path: hooks + "/wh_..%2F..%2Fevents", status: 404},
		{name: "webhook id injection", method: "DELETE", path: hooks + "/wh_%27%20OR%201=1--", status: 400},
		{name: "webhook unknown", method: "DELETE", path: hooks + "/wh_01JD2Q4X7P3N5M8K6R2T9W1Y0Z", status: 404},
		{name: "webhook patch unknown", method: "PATCH", path: hooks + "/wh_01JD2Q4X7P3N5M8K6R2T9W1Y0Z", body: []byte(`{"enabled": true}`), status: 404},
		{name: "deliveries with an EVSE cursor", method: "GET", path: hooks + "/wh_01JD2Q4X7P3N5M8K6R2T9W1Y0Z/deliveries?cursor=" + evseCursor, status: 400},
		// the inventory's life: nothing refused may create, change or remove anything
		{name: "EVSE create unknown field", method: "POST", path: evses, body: evseBody(`"color": "red", `), status: 400},
		{name: "EVSE create with uid zero", method: "POST", path: evses, body: evseBody(`"uid": 0, `), status: 400},
		{name: "EVSE create with uid not a number", method: "POST", path: evses, body: evseBody(`"uid": "1001", `), status: 400},
		{name: "EVSE create REMOVED", method: "POST", path: evses, body: evseBody(`"status": "REMOVED", `), status: 400},
		{name: "EVSE create missing location", method: "POST", path: evses, body: []byte(strings.Replace(string(evseBody("")), "LOC-0001", "NOWHERE", 1)), status: 400},
		{name: "EVSE create taken evseId", method: "POST", path: evses, body: []byte(strings.Replace(string(evseBody("")), "E7777", "E1001*1", 1)), status: 409},
		{name: "EVSE create bad evseId", method: "POST", path: evses, body: []byte(strings.Replace(string(evseBody("")), "DE*CNT*E7777", "'; DROP TABLE evses;--", 1)), status: 400},
		{name: "EVSE create 25 connectors", method: "POST", path: evses, body: evseWith(25), status: 400},
		{name: "EVSE create no connector", method: "POST", path: evses, body: evseWith(0), status: 400},
		{name: "EVSE create NUL tariff", method: "POST", path: evses, body: []byte(strings.Replace(string(evseBody("")), `"tariffIds": []`, `"tariffIds": ["a\u0000b"]`, 1)), status: 400},
		{name: "EVSE create duplicate connector ids", method: "POST", path: evses, body: []byte(strings.Replace(string(evseWith(2)), `"id": 2`, `"id": 1`, 1)), status: 400},
		{name: "EVSE create key over 255", method: "POST", path: evses, body: evseBody(""), header: []string{"Idempotency-Key", strings.Repeat("k", 256)}, status: 400},
		{name: "EVSE patch empty", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{}`), status: 400},
		{name: "EVSE patch null status", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{"status": null}`), status: 400},
		{name: "EVSE patch back to PLANNED", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{"status": "PLANNED"}`), status: 409},
		{name: "EVSE patch to CHARGING", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{"status": "CHARGING"}`), status: 409},
		{name: "EVSE patch missing location", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{"locationId": "NOWHERE"}`), status: 400},
		{name: "EVSE patch stale If-Match", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{"status": "INOPERATIVE"}`), header: []string{"If-Match", `"0"`}, status: 412},
		{name: "EVSE remove stale If-Match", method: "DELETE", path: "/v2/evses/1001", header: []string{"If-Match", `"0"`}, status: 412},
		{name: "EVSE remove unknown", method: "DELETE", path: "/v2/evses/999999", status: 404},
		{name: "connector add DC on AC", method: "POST", path: "/v2/evses/1001/connectors", body: []byte(`{"standard": "CHADEMO", "format": "CABLE", "powerType": "AC_3_PHASE", "maxElectricPower": 50, "maxAmperage": 125, "maxVoltage": 500}`), status: 400},
		{name: "connector add stale version", method: "POST", path: "/v2/evses/1001/connectors", body: []byte(`{"id": 9, "version": 99, "standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", "maxElectricPower": 22, "maxAmperage": 32, "maxVoltage": 400}`), status: 412},
		{name: "connector add version zero", method: "POST", path: "/v2/evses/1001/connectors", body: []byte(`{"version": 0, "standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", "maxElectricPower": 22, "maxAmperage": 32, "maxVoltage": 400}`), status: 400},
		{name: "connector delete unknown", method: "DELETE", path: "/v2/evses/1001/connectors/99", status: 404},
		{name: "connector delete stale If-Match", method: "DELETE", path: "/v2/evses/1001/connectors/1", header: []string{"If-Match", `"0"`}, status: 412},
		{name: "location delete in use", method: "DELETE", path: "/v1/locations/LOC-0001", status: 409},
		{name: "location delete unknown", method: "DELETE", path: "/v1/locations/NOWHERE", status: 404},
		{name: "location put id mismatch", method: "PUT", path: "/v1/locations/LOC-0001", body: locationBody(`"id": "LOC-0002", `), status: 400},
		{name: "location put evseUids not a list", method: "PUT", path: "/v1/locations/LOC-0001", body: locationBody(`"evseUids": 1, `), status: 400},
		{name: "location put stale version", method: "PUT", path: "/v1/locations/LOC-0001", body: locationBody(`"evseUids": [1], "version": 99, `), status: 412},
		{name: "EVSE patch stale version", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{"status": "INOPERATIVE", "version": 99}`), status: 412},
		{name: "EVSE patch another evseId", method: "PATCH", path: "/v2/evses/1001", body: []byte(`{"status": "INOPERATIVE", "evseId": "DE*CNT*E9999*1"}`), status: 400},
		{name: "location put NUL name", method: "PUT", path: "/v1/locations/LOC-0001", body: []byte(strings.Replace(string(locationBody("")), "Hafen", "Ha\u0000fen", 1)), status: 400},
		{name: "location put unknown zone", method: "PUT", path: "/v1/locations/LOC-0001", body: []byte(strings.Replace(string(locationBody("")), "Europe/Berlin", "../../etc/localtime", 1)), status: 400},
		{name: "location put latitude 91", method: "PUT", path: "/v1/locations/LOC-0001", body: []byte(strings.Replace(string(locationBody("")), "53.5", "91", 1)), status: 400},
		{name: "location put bad id", method: "PUT", path: "/v1/locations/%27%20OR%201=1--", body: locationBody(""), status: 400},
		// change lists, the event log, webhook test and replay
		{name: "updated_since not a time", method: "GET", path: "/v2/evses?updated_since=yesterday", status: 400},
		{name: "updated_since year 99999", method: "GET", path: "/v1/locations?updated_since=99999-01-01T00:00:00Z", status: 400},
		{name: "updated_since with NUL", method: "GET", path: "/v1/locations?updated_since=2026-11-22T00:00:00Z%00", status: 400},
		{name: "plain cursor with updated_since", method: "GET", path: "/v2/evses?updated_since=2026-11-22T00:00:00Z&cursor=" + evseCursor, status: 400},
		{name: "foreign cursor on a change list", method: "GET", path: "/v1/locations?updated_since=2026-11-22T00:00:00Z&cursor=" + foreign, status: 400},
		{name: "events of type webhook.ping", method: "GET", path: "/emsp/v1/events?type=webhook.ping", status: 400},
		{name: "events of an unknown type", method: "GET", path: "/emsp/v1/events?type=%27%20OR%201=1--", status: 400},
		{name: "events type too long", method: "GET", path: "/emsp/v1/events?type=" + strings.Repeat("a", 101), status: 400},
		{name: "events 51 types", method: "GET", path: "/emsp/v1/events?" + strings.Repeat("type=evse.created&", 51), status: 400},
		{name: "events api_version 9.9", method: "GET", path: "/emsp/v1/events?api_version=9.9", status: 400},
		{name: "events api_version not a version", method: "GET", path: "/emsp/v1/events?api_version=latest", status: 400},
		{name: "events since not a time", method: "GET", path: "/emsp/v1/events?since=%00", status: 400},
		{name: "events with an EVSE cursor", method: "GET", path: "/emsp/v1/events?cursor=" + evseCursor, status: 400},
		{name: "events with an altered cursor", method: "GET", path: "/emsp/v1/events?cursor=" + tamper(evseCursor), status: 400},
		{name: "event id malformed", method: "GET", path: "/emsp/v1/events/evt_%27--", status: 400},
		{name: "event unknown", method: "GET", path: "/emsp/v1/events/evt_00000000000000000000000000", status: 404},
		{name: "event DELETE", method: "DELETE", path: "/emsp/v1/events/evt_00000000000000000000000000", status: 405},
		{name: "test an unknown webhook", method: "POST", path: hooks + "/wh_00000000000000000000000000/test", status: 404},
		{name: "test a malformed webhook id", method: "POST", path: hooks + "/wh_%00/test", status: 400},
		{name: "GET the test", method: "GET", path: hooks + "/wh_00000000000000000000000000/test", status: 405},
		{name: "replay to an unknown webhook", method: "POST", path: hooks + "/wh_00000000000000000000000000/replay", body: []byte(`{"since": "2026-11-22T00:00:00Z"}`), status: 404},
		{name: "replay until before since", method: "POST", path: hooks + "/wh_00000000000000000000000000/replay", body: []byte(`{"since": "2026-11-22T00:00:00Z", "until": "2026-11-21T00:00:00Z"}`), status: 400},
		{name: "replay without since", method: "POST", path: hooks + "/wh_00000000000000000000000000/replay", body: []byte(`{"types": ["evse.created"]}`), status: 400},
		{name: "replay empty types", method: "POST", path: hooks + "/wh_00000000000000000000000000/replay", body: []byte(`{"since": "2026-11-22T00:00:00Z", "types": []}`), status: 400},
		{name: "replay unknown field", method: "POST", path: hooks + "/wh_00000000000000000000000000/replay", body: []byte(`{"since": "2026-11-22T00:00:00Z", "from": 1}`), status: 400},
		{name: "replay not JSON", method: "POST", path: hooks + "/wh_00000000000000000000000000/replay", body: []byte(`since=yesterday`), status: 400},
		// ingestion takes only ingest keys
		{name: "status notification with a partner key", method: "POST", path: ingest, body: []byte(`{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure"}`), status: 403},
		{name: "status notification without key", method: "POST", path: ingest, body: []byte(`{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure"}`), noKey: true, status: 403},
	}
}

// evseBody is a valid EVSE creation body with extra fields inserted first.
func evseBody(extra string) []byte {
	return []byte(`{` + extra + `"evseId": "DE*CNT*E7777", "chargeboxId": 950, "locationId": "LOC-0001", "connectors": [{"id": 1, ` +
		`"standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", "maxElectricPower": 22, "maxAmperage": 32, ` +
		`"maxVoltage": 400, "tariffIds": []}]}`)
}

// evseWith is an EVSE creation body with n connectors, ids 1..n.
func evseWith(n int) []byte {
	cs := make([]string, n)
	for i := range cs {
		cs[i] = fmt.Sprintf(`{"id": %d, "standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", `+
			`"maxElectricPower": 22, "maxAmperage": 32, "maxVoltage": 400}`, i+1)
	}
	return []byte(`{"evseId": "DE*CNT*E7778", "chargeboxId": 950, "locationId": "LOC-0001", "connectors": [` + strings.Join(cs, ", ") + `]}`)
}

// locationBody is a valid location body with extra fields inserted first.
func locationBody(extra string) []byte {
	return []byte(`{` + extra + `"name": "Hafen", "address": "Kai 7", "city": "Hamburg", "country": "DEU", ` +
		`"coordinates": {"latitude": 53.5, "longitude": 9.9}, "timeZone": "Europe/Berlin"}`)
}

// hook is a webhook creation body.
func hook(url, types string) []byte {
	return []byte(fmt.Sprintf(`{"url": %q, "event_types": [%s]}`, url, types))
}

// tamper flips one character of the cursor's payload.
func tamper(cursor string) string {
	b := []byte(cursor)
	if b[2] == 'A' {
		b[2] = 'B'
	} else {
		b[2] = 'A'
	}
	return string(b)
}

// transportCorpus sends requests the HTTP server itself refuses before the application
// sees them (over its header limit, a malformed request line): the answer is a 4xx and
// the connection is closed. It returns how many it sent.
func transportCorpus(t *testing.T, addr string, statuses *histogram) int {
	t.Helper()
	cases := []struct {
		name, raw string
		status    int
	}{
		{"headers over the limit", "GET /v1/locations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\nX-Big: " +
			strings.Repeat("a", 2<<20) + "\r\n\r\n", 431},
		{"malformed request line", "GET /v1/locations\r\nHost: x\r\n\r\n", 400},
		{"bad header name", "GET /v1/locations HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400},
		{"HTTP/0.9 style", "GET /\r\n\r\n", 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			_, _ = conn.Write([]byte(c.raw)) // the server may close before reading it all
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			res.Body.Close()
			statuses.add(res.StatusCode)
			assert.Equal(t, c.status, res.StatusCode)
		})
	}
	return len(cases)
}
