package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/ocpienv"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/labstack/echo/v4"
)

// fuzzEnv is the service over an in-memory SQLite database holding the demo inventory,
// shared by the executions of one fuzzing process, with a twin serving OCPI that
// receives every request too (see serve).
type fuzzEnv struct {
	e     *echo.Echo
	store *sqlite.Store
	state [sha256.Size]byte // snapshot of the store after the last accepted change
	ocpi  *ocpienv.Env
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	// No rate limit: a fuzzer sends more than any key may, and 429 is not what it tests.
	e, store := demoService(f, ":memory:", server.Config{RateLimit: &server.RateLimit{}})
	v := &fuzzEnv{e: e, store: store, ocpi: ocpienv.New(f, ":memory:")}
	v.state = v.snapshot(f)
	return v
}

// demoService is the service over a new SQLite database at path (":memory:" for a
// private in-memory one) holding the demo inventory, accepting devKey. cfg adds to the
// configuration (logger, rate limit); its store, keys and cursors are set here.
func demoService(tb testing.TB, path string, cfg server.Config) (*echo.Echo, *sqlite.Store) {
	tb.Helper()
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	if err := store.Import(context.Background(), chargenet.DemoInventory(time.Now())); err != nil {
		tb.Fatal(err)
	}
	cfg.Store, cfg.Keys, cfg.Cursors = store, server.NewKeys(store, []string{devKey}), chargenet.NewCursorCodec([]byte(testSecret))
	e, err := server.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e, store
}

// snapshot hashes every location, EVSE and webhook (of devKey) of the store, versions
// included.
func (v *fuzzEnv) snapshot(tb testing.TB) [sha256.Size]byte {
	tb.Helper()
	ctx := context.Background()
	h := sha256.New()
	enc := json.NewEncoder(h)
	locs, err := v.store.ListLocations(ctx, chargenet.Seek[string]{Limit: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	evses, err := v.store.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	if err := enc.Encode(locs); err != nil {
		tb.Fatal(err)
	}
	if err := enc.Encode(evses); err != nil {
		tb.Fatal(err)
	}
	hooks, err := v.store.ListWebhooks(ctx, "env", chargenet.Seek[string]{Limit: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	if err := enc.Encode(hooks); err != nil {
		tb.Fatal(err)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// serve sends req and checks the fuzzing properties: never a 5xx, every exchange as the
// contract documents it (a 4xx with a valid Error body), and a write that is not
// answered 2xx changes nothing in the store. The same request, as the OCPI interface
// receives it (apitest.OCPITwins), goes to the OCPI twin, which checks the same of its
// answers; there, a write other than a registration is refused.
func (v *fuzzEnv) serve(t *testing.T, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	for _, twin := range apitest.OCPITwins(req, body, devKey, ocpienv.TokenC, ocpienv.TokenA) {
		rec, _ := v.ocpi.Serve(t, twin)
		if twin.Method != http.MethodGet && twin.URL.Path != "/ocpi/2.2.1/credentials" && rec.Code < 400 {
			t.Fatalf("%s %s answered %d: OCPI's Locations are read-only", twin.Method, twin.URL, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	v.e.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s answered %d: %s", req.Method, req.URL, rec.Code, rec.Body.String())
	}
	if err := apitest.CheckExchange(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	if req.Method == http.MethodGet {
		return rec // reads write nothing; FuzzPatchBody checks that rejected writes do not
	}
	after := v.snapshot(t)
	if rec.Code >= 300 && after != v.state {
		t.Fatalf("%s %s answered %d but changed the store", req.Method, req.URL, rec.Code)
	}
	v.state = after
	return rec
}

// FuzzPatchBody sends arbitrary PATCH bodies, content types and path parameters through
// the whole Echo stack (authentication, request validation, handler, store).
func FuzzPatchBody(f *testing.F) {
	v := newFuzzEnv(f)
	seeds := []struct {
		uid, connector, contentType, body string
	}{
		{"1002", "1", "application/json", `{"maxElectricPower": 300}`},
		{"1002", "1", "application/json", `{"standard": "IEC_62196_T2", "format": "SOCKET"}`},
		{"1001", "1", "application/json", `{"maxVoltage": 1500, "maxAmperage": 3000}`},
		{"1004", "4", "application/json", `{"maxVoltage": 400}`},
		{"1002", "1", "application/json", `{}`},
		{"1002", "1", "application/json", `{"maxElectricPower": null}`},
		{"1002", "1", "application/json", `{"maxElectricPower": 1e309}`},
		{"1002", "1", "application/json", `{"maxElectricPower": 1, "maxElectricPower": 2}`},
		{"1002", "1", "application/json", `{"unknown": 1}`},
		{"1002", "1", "application/json", `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`},
		{"1002", "1", "application/json", `{"maxElectricPower": 30`},
		{"1002", "1", "text/plain", `{"maxElectricPower": 300}`},
		{"1002", "1", "application/json; charset=utf-16", `{"maxElectricPower": 300}`},
		{"-1", "1", "application/json", `{"maxElectricPower": 300}`},
		{"999999999999999999999", "1", "application/json", `{"maxElectricPower": 300}`},
		{"1e309", "0", "application/json", `{"maxElectricPower": 300}`},
		{"1002", "%00", "application/json", `{"maxElectricPower": 300}`},
	}
	for _, s := range seeds {
		f.Add(s.uid, s.connector, s.contentType, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, uid, connector, contentType string, body []byte) {
		target := "/v2/evses/" + url.PathEscape(uid) + "/connectors/" + url.PathEscape(connector)
		req := httptest.NewRequest(http.MethodPatch, target, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+devKey)
		req.Header.Set("Content-Type", contentType)
		rec := v.serve(t, req)
		if rec.Code == http.StatusOK && !json.Valid(body) {
			t.Fatalf("PATCH %s accepted a body that is not JSON: %q", target, body)
		}
	})
}

// FuzzStatusNotification sends arbitrary status notification bodies and charge box ids
// with an ingest key.
func FuzzStatusNotification(f *testing.F) {
	v := newFuzzEnv(f)
	const ingest = "fuzz-ingest-key-0123456789"
	if err := v.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "ingest", Hash: chargenet.HashAPIKey(ingest),
		Scopes: []string{chargenet.ScopeIngest}, CreatedAt: time.Now()}); err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct{ box, body string }{
		{"501", `{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure", "info": "x", "vendorErrorCode": "E1"}`},
		{"501", `{"connectorId": 0, "status": "Available", "errorCode": "NoError", "timestamp": "2030-01-01T00:00:00Z"}`},
		{"502", `{"connectorId": 7, "status": "Charging", "errorCode": "NoError"}`},
		{"501", `{"connectorId": 99, "status": "Charging", "errorCode": "NoError"}`},
		{"9999", `{"connectorId": 1, "status": "Charging", "errorCode": "NoError"}`},
		{"501", `{"connectorId": -1, "status": "Charging", "errorCode": "NoError"}`},
		{"501", `{"connectorId": 1, "status": "Sleeping", "errorCode": "NoError"}`},
		{"501", `{"connectorId": 1, "status": "Charging", "errorCode": "NoError", "timestamp": "1999-13-01"}`},
		{"0", `{}`},
	} {
		f.Add(s.box, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, box string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/internal/v1/chargeboxes/"+url.PathEscape(box)+"/status-notifications", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ingest)
		req.Header.Set("Content-Type", "application/json")
		v.serve(t, req)
	})
}

// FuzzWebhookCreate sends arbitrary webhook creation bodies. An accepted one must
// name an https URL on a public host (the fuzz service has no development flag); it is
// deleted again so that the store stays small.
func FuzzWebhookCreate(f *testing.F) {
	v := newFuzzEnv(f)
	for _, body := range []string{
		`{"url": "https://emsp.example.com/hooks", "event_types": [{"type": "evse.connector.updated"}]}`,
		`{"url": "https://8.8.8.8/h", "description": "d", "event_types": [{"type": "evse.status.changed", "api_version": "1.0"}]}`,
		`{"url": "https://127.0.0.1/h", "event_types": [{"type": "evse.status.changed"}]}`,
		`{"url": "https://[::ffff:10.0.0.1]/h", "event_types": [{"type": "evse.status.changed"}]}`,
		`{"url": "http://emsp.example.com/h", "event_types": [{"type": "evse.status.changed"}]}`,
		`{"url": "https://emsp.example.com/h", "event_types": [{"type": "evse.status.changed", "api_version": "latest"}, {"type": "evse.status.changed"}]}`,
		`{"url": "https://emsp.example.com/h", "event_types": []}`,
		`{"url": "https://u:p@emsp.example.com/h", "event_types": [{"type": "evse.status.changed"}]}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/emsp/v1/webhooks", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+devKey)
		req.Header.Set("Content-Type", "application/json")
		rec := v.serve(t, req)
		if rec.Code != http.StatusCreated {
			return
		}
		var w struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		if err := chargenet.CheckWebhookURL(w.URL, false); err != nil {
			t.Fatalf("accepted a webhook URL the rules refuse: %q: %v", w.URL, err)
		}
		if err := v.store.DeleteWebhook(context.Background(), "env", w.ID); err != nil {
			t.Fatal(err)
		}
		v.state = v.snapshot(t)
	})
}

// FuzzListQuery sends arbitrary query strings to both list endpoints (plain and change
// lists) and to the event log.
func FuzzListQuery(f *testing.F) {
	v := newFuzzEnv(f)
	for _, q := range []string{
		"", "limit=1", "limit=100", "limit=0", "limit=101", "limit=-1", "limit=abc", "limit=1.5",
		"limit=25&limit=26", "cursor=", "cursor=abc", "cursor=%00", "limit=10&cursor=eyJ4IjoxfQ.AAAA",
		"limit=99999999999999999999", "other=1", "cursor[]=1", "%zz",
		"updated_since=2026-11-22T00:00:00Z", "updated_since=2026-11-22T00:00:00Z&limit=1", "updated_since=2026-11-22T00:00:00%2B01:00",
		"updated_since=2026-11-22T00:00:00+01:00", "updated_since=", "updated_since=0000-01-01T00:00:00Z&cursor=abc",
		"type=evse.created&type=evse.removed", "type=webhook.ping", "type=", "api_version=1.0", "api_version=1.1&type=evse.status.changed",
		"api_version=9.9", "since=2026-11-22T00:00:00Z&limit=3", "since=yesterday",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		for _, path := range []string{"/v1/locations", "/v2/evses", "/emsp/v1/events"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.URL.RawQuery = query
			req.Header.Set("Authorization", "Bearer "+devKey)
			rec := v.serve(t, req)
			if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
				t.Fatalf("GET %s?%s answered %d, want 200 or 400", path, query, rec.Code)
			}
		}
	})
}

// FuzzWebhookTools sends arbitrary replay bodies, and tests, to an enabled webhook of
// the caller, to an unknown one and to a malformed id: never a 5xx, a refusal changes
// nothing, and an accepted replay had until after since.
func FuzzWebhookTools(f *testing.F) {
	v := newFuzzEnv(f)
	now := time.Now().UTC().Truncate(time.Microsecond)
	w := &chargenet.Webhook{ID: chargenet.NewID("wh_", now), Owner: "env", URL: "https://emsp.example.com/hooks",
		Subscriptions: []chargenet.Subscription{{Type: chargenet.EventStatusChanged, APIVersion: "1.0"}, {Type: chargenet.EventEVSERemoved, APIVersion: "1.0"}},
		Enabled:       true, Secret: chargenet.NewWebhookSecret(), CreatedAt: now, UpdatedAt: now}
	if err := v.store.CreateWebhook(context.Background(), w, nil); err != nil {
		f.Fatal(err)
	}
	v.state = v.snapshot(f)
	for _, seed := range []struct {
		target uint8
		test   bool
		body   string
	}{
		{0, false, `{"since": "2026-11-22T00:00:00Z"}`},
		{0, false, `{"since": "2026-11-22T00:00:00Z", "until": "2026-11-23T00:00:00Z", "types": ["evse.removed"]}`},
		{0, false, `{"since": "2026-11-22T00:00:00Z", "until": "2026-11-22T00:00:00Z"}`},
		{0, false, `{"since": "2026-11-22T00:00:00Z", "types": ["location.created"]}`},
		{0, false, `{"since": "2026-11-22T00:00:00Z", "types": []}`},
		{0, false, `{"since": "2026-11-22T00:00:00+14:00", "until": "2026-11-21T23:00:00-12:00"}`},
		{0, false, `{"until": "2026-11-22T00:00:00Z"}`},
		{1, false, `{"since": "2026-11-22T00:00:00Z"}`},
		{2, false, `{"since": "2026-11-22T00:00:00Z"}`},
		{0, true, ``},
		{1, true, ``},
	} {
		f.Add(seed.target, seed.test, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, target uint8, test bool, body []byte) {
		id := []string{w.ID, "wh_00000000000000000000000000", "wh_%00"}[int(target)%3]
		path := "/emsp/v1/webhooks/" + id + "/replay"
		if test {
			path = "/emsp/v1/webhooks/" + id + "/test"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+devKey)
		if len(body) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := v.serve(t, req)
		if rec.Code != http.StatusAccepted {
			return
		}
		if id != w.ID {
			t.Fatalf("POST %s accepted for a webhook that is not the caller's", path)
		}
		if test {
			return
		}
		var r struct {
			Since time.Time  `json:"since"`
			Until *time.Time `json:"until"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("accepted a replay body that is not JSON: %q", body)
		}
		if r.Until != nil && !r.Until.After(r.Since) {
			t.Fatalf("accepted a replay with until %s not after since %s", r.Until, r.Since)
		}
	})
}

// FuzzImport decodes arbitrary import files and imports those that decode into a store
// holding the demo inventory: decoding and importing never panic, every failure is an
// ErrInvalid or ErrConflict *chargenet.Error naming what is wrong, and a failed import
// changes nothing.
func FuzzImport(f *testing.F) {
	v := newFuzzEnv(f)
	demo, err := json.Marshal(map[string]any{"locations": []any{}, "evses": []any{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo)
	f.Add([]byte(`{"locations": [{"id": "LOC-9001", "name": "Depot", "address": "Hafenstr. 1", "city": "Hamburg", ` +
		`"postalCode": "20457", "country": "DEU", "coordinates": {"latitude": 53.54, "longitude": 9.99}, ` +
		`"timeZone": "Europe/Berlin", "evseUids": [], "lastUpdated": "2026-01-01T00:00:00Z"}], "evses": []}`))
	f.Add([]byte(`{"locations": [{"id": "LOC-0001"}], "evses": []}`))
	f.Add([]byte(`{"locations": [], "evses": [{"uid": 1001}]}`))
	f.Add([]byte(`{"locations": null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"locations": [], "evses": [], "extra": 1}`))
	f.Add([]byte(`{"locations": [{"id": "X", "timeZone": "Mars/Olympus"}], "evses": []}`))
	f.Fuzz(func(t *testing.T, file []byte) {
		inv, err := server.DecodeInventory(bytes.NewReader(file))
		if err != nil {
			requireDomainError(t, err, chargenet.ErrInvalid)
			return
		}
		if err := v.store.Import(context.Background(), inv); err != nil {
			requireDomainError(t, err, chargenet.ErrInvalid, chargenet.ErrConflict)
			if v.snapshot(t) != v.state {
				t.Fatalf("a failed import changed the store: %v", err)
			}
			return
		}
		v.state = v.snapshot(t)
	})
}

// requireDomainError fails t unless err is a *chargenet.Error of one of kinds with a
// message.
func requireDomainError(t *testing.T, err error, kinds ...error) {
	t.Helper()
	var de *chargenet.Error
	if !errors.As(err, &de) || strings.TrimSpace(de.Message) == "" {
		t.Fatalf("want a *chargenet.Error with a message, got %T %v", err, err)
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return
		}
	}
	t.Fatalf("error %v is not of kinds %v", err, kinds)
}

// FuzzInventoryWrite sends arbitrary bodies, path identifiers and Idempotency-Keys to the
// operations that create, change and remove inventory. An accepted change may change the
// store; a refused one must not.
func FuzzInventoryWrite(f *testing.F) {
	v := newFuzzEnv(f)
	const evse = `{"evseId": "DE*CNT*E7777", "chargeboxId": 950, "locationId": "LOC-0001", "connectors": [{"id": 1, ` +
		`"standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", "maxElectricPower": 22, "maxAmperage": 32, "maxVoltage": 400}]}`
	const location = `{"name": "Hafen", "address": "Kai 7", "city": "Hamburg", "country": "DEU", ` +
		`"coordinates": {"latitude": 53.5, "longitude": 9.9}, "timeZone": "Europe/Berlin"}`
	const connector = `{"standard": "IEC_62196_T2_COMBO", "format": "CABLE", "powerType": "DC", "maxElectricPower": 150, "maxAmperage": 375, "maxVoltage": 920}`
	for _, s := range []struct {
		op          uint8
		id, key     string
		body, match string
	}{
		{0, "", "k1", evse, ""},
		{0, "", "k1", strings.Replace(evse, "E7777", "E7778", 1), ""},
		{0, "", "", strings.Replace(evse, `"id": 1`, `"id": 3`, 1), ""},
		{0, "", strings.Repeat("k", 300), evse, ""},
		{1, "HAFEN-1", "", location, ""},
		{1, "LOC-0001", "", strings.Replace(location, "Europe/Berlin", "Nowhere/City", 1), ""},
		{2, "1001", "", `{"status": "INOPERATIVE"}`, `"1"`},
		{2, "1001", "", `{"status": "PLANNED"}`, ""},
		{2, "1002", "", `{"locationId": "LOC-0002", "chargeboxId": 777}`, ""},
		{3, "1001", "c1", connector, ""},
		{3, "1001", "", strings.Replace(connector, `"DC"`, `"AC_1_PHASE"`, 1), "*"},
		{4, "1002", "", "", ""},
		{5, "1001", "", "1", ""},
		{6, "LOC-0002", "", "", ""},
	} {
		f.Add(s.op, s.id, s.key, s.match, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, op uint8, id, key, ifMatch string, body []byte) {
		id = url.PathEscape(id)
		var method, target string
		switch op % 7 {
		case 0:
			method, target = http.MethodPost, "/v2/evses"
		case 1:
			method, target = http.MethodPut, "/v1/locations/"+id
		case 2:
			method, target = http.MethodPatch, "/v2/evses/"+id
		case 3:
			method, target = http.MethodPost, "/v2/evses/"+id+"/connectors"
		case 4:
			method, target = http.MethodDelete, "/v2/evses/"+id
		case 5:
			method, target = http.MethodDelete, "/v2/evses/1001/connectors/"+url.PathEscape(string(body))
			body = nil
		default:
			method, target = http.MethodDelete, "/v1/locations/"+id
		}
		req := httptest.NewRequest(method, target, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+devKey)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for name, value := range map[string]string{"Idempotency-Key": key, "If-Match": ifMatch} {
			if value != "" && apitest.HeaderValue(value) {
				req.Header.Set(name, value)
			}
		}
		v.serve(t, req)
	})
}
