package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// singleExample names a media type's `example`; the entries of `examples` go by their key.
const singleExample = "example"

// exampleUse is one place a response example is shown: an operation, a status and the
// example's name there.
type exampleUse struct {
	op     string
	status int
	name   string
}

func (u exampleUse) String() string { return fmt.Sprintf("%s %d %s", u.op, u.status, u.name) }

// is reports whether u and o are the same use. The embedded contract spells operation
// ids with a capital first letter; the probes spell them as openapi.yaml does.
func (u exampleUse) is(o exampleUse) bool {
	return strings.EqualFold(u.op, o.op) && u.status == o.status && u.name == o.name
}

// contractExample is one response example as the contract writes it: inline in one
// operation's response, or once in components and shown by every operation that refers
// to it.
type contractExample struct {
	origin string // "listEvses 200 firstPage", "#/components/responses/NotFound example", "#/components/examples/DcEvse"
	uses   []exampleUse
	value  any // as JSON decodes it
	schema *openapi3.SchemaRef
}

// contractExamples returns every response example of doc: the `example` and each entry
// of `examples` of every operation's responses, a shared one (from components/responses
// or components/examples) once with all its uses. Shared responses that no operation
// uses are listed too, without uses.
func contractExamples(t *testing.T, doc *openapi3.T) []*contractExample {
	t.Helper()
	byOrigin := map[string]*contractExample{}
	var order []string
	add := func(origin string, use *exampleUse, value any, schema *openapi3.SchemaRef) {
		ex := byOrigin[origin]
		if ex == nil {
			raw, err := json.Marshal(value)
			require.NoError(t, err, origin)
			ex = &contractExample{origin: origin, schema: schema}
			require.NoError(t, json.Unmarshal(raw, &ex.value), origin)
			byOrigin[origin] = ex
			order = append(order, origin)
		}
		if use != nil {
			ex.uses = append(ex.uses, *use)
		}
	}
	walk := func(where string, status int, op string, ref *openapi3.ResponseRef) {
		if ref.Ref != "" {
			where = ref.Ref
		}
		for _, ct := range slices.Sorted(maps.Keys(ref.Value.Content)) {
			mt := ref.Value.Content[ct]
			var use *exampleUse
			if op != "" {
				use = &exampleUse{op: op, status: status, name: singleExample}
			}
			if mt.Example != nil {
				add(where+" "+singleExample, use, mt.Example, mt.Schema)
			}
			for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
				er := mt.Examples[name]
				origin := where + " " + name
				if er.Ref != "" {
					origin = er.Ref
				}
				if use != nil {
					use = &exampleUse{op: op, status: status, name: name}
				}
				add(origin, use, er.Value.Value, mt.Schema)
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		ops := doc.Paths.Value(path).Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			op := ops[method]
			for _, code := range slices.Sorted(maps.Keys(op.Responses.Map())) {
				status, err := strconv.Atoi(code)
				require.NoError(t, err, "%s: response %q: the probes address numeric statuses only", op.OperationID, code)
				walk(op.OperationID+" "+code, status, op.OperationID, op.Responses.Value(code))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Responses)) {
		walk("#/components/responses/"+name, 0, "", &openapi3.ResponseRef{Ref: "#/components/responses/" + name, Value: doc.Components.Responses[name].Value})
	}
	out := make([]*contractExample, len(order))
	for i, origin := range order {
		out[i] = byOrigin[origin]
	}
	return out
}

// probeRequest is the request of a probe; devKey authenticates it unless headers say
// otherwise (see env.do).
type probeRequest struct {
	method, path, body string
	headers            []string
}

// exampleProbe provokes, on a fresh store with the demo inventory (and ingestKey), the
// live answer a response example shows.
type exampleProbe struct {
	use exampleUse
	// rateLimit, when set, is how many requests a key may make per minute.
	rateLimit int
	// evseReadErr, when set, is what the store answers every EVSE read with.
	evseReadErr error
	// setup, when set, prepares the situation through the API and may complete req.
	setup func(t *testing.T, v *env, req *probeRequest)
	req   probeRequest
	// itemsBy, for an answer that never changes while the service runs, names the array
	// whose every example item must equal the live item with the same value of the key.
	itemsBy struct{ array, key string }
}

var ingestAuth = []string{"Authorization", "Bearer " + ingestKey}

// dcEVSE is an EVSE with the connectors of the contract's DcEvse example.
const dcEVSE = `{"evseId": "DE*ABC*E2001*1", "chargeboxId": 601, "locationId": "LOC-0001", "status": "AVAILABLE",
	"connectors": [
		{"id": 1, "standard": "IEC_62196_T2_COMBO", "format": "CABLE", "powerType": "DC", "maxElectricPower": 350,
		 "maxAmperage": 500, "maxVoltage": 920, "tariffIds": ["DC-FAST", "DC-FAST-ROAMING"]},
		{"id": 2, "standard": "CHADEMO", "format": "CABLE", "powerType": "DC", "maxElectricPower": 50,
		 "maxAmperage": 125, "maxVoltage": 500, "tariffIds": []}]}`

// exampleProbes maps every response example of the contract to the request that
// provokes its live answer. A shared example is probed once, through the operation its
// text is about, or else through a representative one.
var exampleProbes = []exampleProbe{
	{use: exampleUse{"listEvses", 200, "firstPage"}, req: probeRequest{method: http.MethodGet, path: "/v2/evses?limit=1"}},
	{use: exampleUse{"listEvses", 400, "limit"}, req: probeRequest{method: http.MethodGet, path: "/v2/evses?limit=101"}},
	{use: exampleUse{"listEvses", 400, "cursor"},
		setup: func(t *testing.T, v *env, req *probeRequest) {
			page := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=1", ""))
			require.NotNil(t, page.Pagination.NextCursor)
			req.path += *page.Pagination.NextCursor
		},
		req: probeRequest{method: http.MethodGet, path: "/v2/evses?cursor="}},
	{use: exampleUse{"listEvses", 403, "unauthorized"},
		req: probeRequest{method: http.MethodGet, path: "/v2/evses", headers: []string{"Authorization", ""}}},
	{use: exampleUse{"listEvses", 403, "keyExpired"},
		setup: func(t *testing.T, v *env, _ *probeRequest) {
			require.NoError(t, v.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "emsp-acme",
				Hash: chargenet.HashAPIKey("acme-key-0123456789"), Scopes: []string{chargenet.ScopePartner},
				CreatedAt: time.Now().Add(-time.Hour), ExpiresAt: time.Now().Add(-time.Minute)}))
		},
		req: probeRequest{method: http.MethodGet, path: "/v2/evses", headers: []string{"Authorization", "Bearer acme-key-0123456789"}}},
	{use: exampleUse{"listEvses", 429, singleExample}, rateLimit: 1,
		setup: func(t *testing.T, v *env, _ *probeRequest) {
			require.Equal(t, http.StatusOK, v.do(http.MethodGet, "/v2/evses", "").Code)
		},
		req: probeRequest{method: http.MethodGet, path: "/v2/evses"}},
	{use: exampleUse{"getEvse", 200, "dc"},
		setup: func(t *testing.T, v *env, req *probeRequest) {
			// Connector 2 faults, the operator deletes it, connector 1 starts charging.
			rec := v.do(http.MethodPost, "/v2/evses", dcEVSE)
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			req.path = rec.Header().Get("Location")
			rec = v.do(http.MethodPost, "/internal/v1/chargeboxes/601/status-notifications",
				`{"connectorId": 2, "status": "Faulted", "errorCode": "GroundFailure", "info": "Ground fault detected on pin 3", "vendorErrorCode": "E-104"}`, ingestAuth...)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			rec = v.do(http.MethodDelete, req.path+"/connectors/2", "")
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			rec = v.do(http.MethodPost, "/internal/v1/chargeboxes/601/status-notifications",
				`{"connectorId": 1, "status": "Charging", "errorCode": "NoError"}`, ingestAuth...)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		},
		req: probeRequest{method: http.MethodGet}},
	{use: exampleUse{"getEvse", 404, singleExample}, req: probeRequest{method: http.MethodGet, path: "/v2/evses/9999"}},
	{use: exampleUse{"getEvse", 500, singleExample}, evseReadErr: chargenet.WrapStoreError("sqlite", "evse",
		errors.New("disk I/O error"), func(error) bool { return false }),
		req: probeRequest{method: http.MethodGet, path: "/v2/evses/1001"}},
	{use: exampleUse{"getEvse", 503, singleExample}, evseReadErr: chargenet.WrapStoreError("sqlite", "evse",
		errors.New("database is locked"), func(error) bool { return true }),
		req: probeRequest{method: http.MethodGet, path: "/v2/evses/1001"}},
	{use: exampleUse{"createEvse", 413, singleExample},
		req: probeRequest{method: http.MethodPost, path: "/v2/evses", body: `{"evseId": "DE*ABC*E2001*1"` + strings.Repeat(" ", 2<<20) + `}`}},
	{use: exampleUse{"createEvse", 415, singleExample},
		req: probeRequest{method: http.MethodPost, path: "/v2/evses", body: dcEVSE, headers: []string{"Content-Type", "text/plain"}}},
	{use: exampleUse{"createEvse", 422, singleExample},
		setup: func(t *testing.T, v *env, _ *probeRequest) {
			rec := v.do(http.MethodPost, "/v2/evses", dcEVSE, "Idempotency-Key", "8e03978e")
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		},
		req: probeRequest{method: http.MethodPost, path: "/v2/evses", body: strings.Replace(dcEVSE, "E2001", "E2002", 1),
			headers: []string{"Idempotency-Key", "8e03978e"}}},
	{use: exampleUse{"updateEvse", 409, singleExample},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1001", body: `{"status": "PLANNED"}`}},
	{use: exampleUse{"updateEvse", 412, singleExample},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1001", body: `{"status": "INOPERATIVE"}`, headers: []string{"If-Match", `"6"`}}},
	{use: exampleUse{"updateConnector", 400, "bound"},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1002/connectors/1", body: `{"maxVoltage": 1501}`}},
	{use: exampleUse{"updateConnector", 400, "rule"},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1001/connectors/1", body: `{"standard": "CHADEMO"}`}},
	{use: exampleUse{"updateConnector", 403, "insufficientScope"},
		setup: func(t *testing.T, v *env, _ *probeRequest) {
			require.NoError(t, v.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "emsp-acme",
				Hash: chargenet.HashAPIKey("acme-key-0123456789"), CreatedAt: time.Now(),
				Scopes: []string{chargenet.ScopeInventoryRead, chargenet.ScopeWebhooks}}))
		},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1002/connectors/1", body: `{"maxVoltage": 800}`,
			headers: []string{"Authorization", "Bearer acme-key-0123456789"}}},
	{use: exampleUse{"updateConnector", 409, singleExample},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1004/connectors/4", body: `{"maxVoltage": 500}`}},
	{use: exampleUse{"updateConnector", 412, singleExample},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1002/connectors/1", body: `{"maxVoltage": 800}`, headers: []string{"If-Match", `"6"`}}},
	{use: exampleUse{"updateConnector", 415, singleExample},
		req: probeRequest{method: http.MethodPatch, path: "/v2/evses/1002/connectors/1", body: `{"maxVoltage": 800}`, headers: []string{"Content-Type", "text/plain"}}},
	{use: exampleUse{"listLocations", 200, "middlePage"},
		setup: func(t *testing.T, v *env, req *probeRequest) {
			page := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=1", ""))
			require.NotNil(t, page.Pagination.NextCursor)
			req.path += *page.Pagination.NextCursor
		},
		req: probeRequest{method: http.MethodGet, path: "/v1/locations?limit=1&cursor="}},
	{use: exampleUse{"getLocation", 200, singleExample}, req: probeRequest{method: http.MethodGet, path: "/v1/locations/LOC-0001"}},
	{use: exampleUse{"listEvents", 200, singleExample},
		setup: func(t *testing.T, v *env, _ *probeRequest) {
			rec := v.do(http.MethodPost, "/internal/v1/chargeboxes/501/status-notifications",
				`{"connectorId": 1, "status": "Charging", "errorCode": "NoError"}`, ingestAuth...)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		},
		req: probeRequest{method: http.MethodGet, path: "/emsp/v1/events?type=evse.status.changed"}},
	{use: exampleUse{"listEventTypes", 200, singleExample}, req: probeRequest{method: http.MethodGet, path: "/emsp/v1/webhooks/event_types"},
		itemsBy: struct{ array, key string }{"event_types", "type"}},
	{use: exampleUse{"createWebhook", 400, singleExample},
		req: probeRequest{method: http.MethodPost, path: "/emsp/v1/webhooks",
			body: `{"url": "https://emsp.example.com/hooks/chargenet", "event_types": [{"type": "evse.unknown"}]}`}},
	{use: exampleUse{"testWebhook", 409, singleExample},
		setup: func(t *testing.T, v *env, req *probeRequest) {
			rec := v.do(http.MethodPost, "/emsp/v1/webhooks", `{"url": "https://emsp.example.com/hooks/chargenet", "event_types": [{"type": "evse.status.changed"}]}`)
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			id := decode[gen.WebhookWithSecret](t, rec).Id
			rec = v.do(http.MethodPatch, "/emsp/v1/webhooks/"+id, `{"enabled": false}`)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			req.path = strings.Replace(req.path, "{webhookId}", id, 1)
		},
		req: probeRequest{method: http.MethodPost, path: "/emsp/v1/webhooks/{webhookId}/test"}},
	{use: exampleUse{"listChargeboxes", 200, singleExample},
		setup: func(t *testing.T, v *env, _ *probeRequest) {
			connectBox(t, v, 501, chargenet.ProtocolOCPP16)
			registerBox(t, v, 502)
		},
		req: probeRequest{method: http.MethodGet, path: "/v2/chargeboxes?limit=1"}},
	{use: exampleUse{"getChargebox", 200, singleExample},
		setup: func(t *testing.T, v *env, _ *probeRequest) {
			connectBox(t, v, 501, chargenet.ProtocolOCPP201)
			rec := v.do(http.MethodPatch, "/v2/evses/1002", `{"status": "INOPERATIVE"}`)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			cs := v.store
			owed, err := cs.OweAvailability(t.Context(), 501, time.Now())
			require.NoError(t, err)
			require.Len(t, owed, 1)
			require.NoError(t, cs.AnswerAvailability(t.Context(), 1002, owed[0].RequestedAt, chargenet.AnswerAccepted, time.Now()))
		},
		req: probeRequest{method: http.MethodGet, path: "/v2/chargeboxes/501"}},
	{use: exampleUse{"ingestStatusNotification", 409, singleExample},
		req: probeRequest{method: http.MethodPost, path: "/internal/v1/chargeboxes/502/status-notifications",
			body: `{"connectorId": 7, "status": "Available", "errorCode": "NoError"}`, headers: ingestAuth}},
}

// registerBox registers charge box id for OCPP.
func registerBox(t *testing.T, v *env, id int64) {
	t.Helper()
	_, err := v.store.RegisterChargebox(t.Context(), id, strconv.FormatInt(id, 10),
		chargenet.HashChargeboxPassword("example-password-0123"), time.Now())
	require.NoError(t, err)
}

// connectBox registers charge box id and records a connection over protocol and its boot.
func connectBox(t *testing.T, v *env, id int64, protocol string) {
	t.Helper()
	registerBox(t, v, id)
	now := time.Now()
	require.NoError(t, v.store.RecordConnections(t.Context(), []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: id, Session: "example", Protocol: protocol, At: now},
		{Kind: chargenet.Booted, Chargebox: id, Session: "example", At: now,
			Boot: &chargenet.BootInfo{Vendor: "ACME", Model: "Wallbox 22", SerialNumber: "SN-0001", FirmwareVersion: "1.4.2", At: now}},
	}))
}

// TestContractExamples checks every response example of the contract against the live
// answer to its probe: the same tree of keys and kinds of values, the same value wherever
// the schema has an enum, the same items in an answer that never changes while the
// service runs, and for errors the same code, param and wording (identifiers aside).
// An example without a probe, and a probe without its example, fail the test.
func TestContractExamples(t *testing.T) {
	doc, err := gen.GetSpec()
	require.NoError(t, err)
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	require.NoError(t, err)

	demo := demoDatabase(t, t.TempDir())
	examples := contractExamples(t, doc)
	probed := map[*contractExample]exampleUse{}
	for _, p := range exampleProbes {
		var found *contractExample
		for _, ex := range examples {
			if slices.ContainsFunc(ex.uses, p.use.is) {
				found = ex
			}
		}
		if !assert.NotNil(t, found, "probe %s: the contract has no such example", p.use) {
			continue
		}
		if first, twice := probed[found]; twice {
			assert.Fail(t, "probed twice", "%s is probed by %s and %s: probe a shared example once", found.origin, first, p.use)
		}
		probed[found] = p.use
	}
	for _, ex := range examples {
		if len(ex.uses) == 0 {
			assert.Fail(t, "unused example", "%s: no operation shows it, so no probe can check it", ex.origin)
			continue
		}
		assert.Contains(t, probed, ex, "%s (shown by %v) has no probe in exampleProbes", ex.origin, ex.uses)
	}

	for _, p := range exampleProbes {
		var ex *contractExample
		for e, use := range probed {
			if use == p.use {
				ex = e
			}
		}
		if ex == nil {
			continue
		}
		t.Run(p.use.String(), func(t *testing.T) {
			t.Parallel()
			v := probeEnv(t, demo, p)
			req := p.req
			if p.setup != nil {
				p.setup(t, v, &req)
			}
			sent, rec := v.exchange(req.method, req.path, req.body, req.headers...)
			route, _, err := router.FindRoute(sent)
			require.NoError(t, err)
			require.True(t, strings.EqualFold(p.use.op, route.Operation.OperationID),
				"the probe's request goes to operation %s", route.Operation.OperationID)
			require.Equal(t, p.use.status, rec.Code, rec.Body.String())
			var live any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &live))
			for _, d := range exampleDiffs(p, ex, live) {
				assert.Fail(t, "the example differs from the live answer", "%s %d, example %q (%s): %s", p.use.op, p.use.status, p.use.name, ex.origin, d)
			}
		})
	}
}

// demoDatabase writes, under dir, a closed SQLite database holding the demo inventory
// and ingestKey, and returns its path. Probes start from copies of it: migrating and
// importing once is what keeps the probes fast under the race detector.
func demoDatabase(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "demo.db")
	require.NoError(t, sqlitetest.Create(path))
	store, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	require.NoError(t, store.Import(context.Background(), chargenet.DemoInventory(time.Now())))
	require.NoError(t, store.CreateAPIKey(context.Background(), chargenet.APIKey{
		Name: "ingest", Hash: chargenet.HashAPIKey(ingestKey), Scopes: []string{chargenet.ScopeIngest}, CreatedAt: time.Now()}))
	require.NoError(t, store.Close())
	_, err = os.Stat(path + "-wal")
	require.ErrorIs(t, err, fs.ErrNotExist, "closing the store leaves the whole database in its file")
	return path
}

// probeEnv starts the service for p over a copy of the database at demo.
func probeEnv(t *testing.T, demo string, p exampleProbe) *env {
	t.Helper()
	b, err := os.ReadFile(demo)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "probe.db")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	store, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	cfg := server.Config{Store: store, Keys: server.NewKeys(store, []string{devKey}), Cursors: chargenet.NewCursorCodec([]byte(testSecret))}
	if p.rateLimit > 0 {
		cfg.RateLimit = &server.RateLimit{Requests: p.rateLimit, Window: time.Minute}
	}
	if p.evseReadErr != nil {
		cfg.Store = evseReadsFail{Store: store, err: p.evseReadErr}
	}
	e, err := server.New(cfg)
	require.NoError(t, err)
	return &env{t: t, e: e, store: store}
}

// evseReadsFail is a store whose EVSE reads fail with err.
type evseReadsFail struct {
	chargenet.Store
	err error
}

func (s evseReadsFail) EVSE(context.Context, int64) (*chargenet.EVSE, error) { return nil, s.err }

func (s evseReadsFail) EVSEDoc(context.Context, int64) ([]byte, int64, error) { return nil, 0, s.err }

// exampleDiffs lists how the example ex differs from the live answer to p.
func exampleDiffs(p exampleProbe, ex *contractExample, live any) []string {
	diffs := shapeDiffs(shapeOf(ex.value), shapeOf(live), "$")
	diffs = append(diffs, enumDiffs(ex.schema, ex.value, live, "$", map[*openapi3.Schema]bool{})...)
	if p.itemsBy.array != "" {
		diffs = append(diffs, itemDiffs(ex.value, live, p.itemsBy.array, p.itemsBy.key)...)
	}
	if p.use.status >= 400 {
		diffs = append(diffs, errorDiffs(ex.value, live)...)
	}
	slices.Sort(diffs)
	return slices.Compact(diffs)
}

// shape is the structure of JSON values: the kinds they take, the keys of the objects
// among them with the shapes of their values, and the shape of the items of the arrays
// among them, merged.
type shape struct {
	kinds map[string]bool
	keys  map[string]*shape
	items *shape
}

func shapeOf(v any) *shape {
	s := &shape{kinds: map[string]bool{}}
	s.add(v)
	return s
}

func (s *shape) add(v any) {
	switch v := v.(type) {
	case map[string]any:
		s.kinds["object"] = true
		if s.keys == nil {
			s.keys = map[string]*shape{}
		}
		for k, x := range v {
			if s.keys[k] == nil {
				s.keys[k] = &shape{kinds: map[string]bool{}}
			}
			s.keys[k].add(x)
		}
	case []any:
		s.kinds["array"] = true
		for _, x := range v {
			if s.items == nil {
				s.items = &shape{kinds: map[string]bool{}}
			}
			s.items.add(x)
		}
	case string:
		s.kinds["string"] = true
	case float64:
		s.kinds["number"] = true
	case bool:
		s.kinds["boolean"] = true
	case nil:
		s.kinds["null"] = true
	}
}

func (s *shape) kindList() string {
	return strings.Join(slices.Sorted(maps.Keys(s.kinds)), " or ")
}

// shapeDiffs lists the differences between the example's shape ex and the live answer's.
func shapeDiffs(ex, live *shape, path string) []string {
	if ex.kindList() != live.kindList() {
		return []string{fmt.Sprintf("%s: the example has %s, the live answer %s", path, ex.kindList(), live.kindList())}
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(ex.keys)) {
		if live.keys[k] == nil {
			diffs = append(diffs, fmt.Sprintf("%s.%s: in the example, not in the live answer", path, k))
			continue
		}
		diffs = append(diffs, shapeDiffs(ex.keys[k], live.keys[k], path+"."+k)...)
	}
	for _, k := range slices.Sorted(maps.Keys(live.keys)) {
		if ex.keys[k] == nil {
			diffs = append(diffs, fmt.Sprintf("%s.%s: in the live answer, not in the example", path, k))
		}
	}
	switch {
	case ex.items != nil && live.items != nil:
		diffs = append(diffs, shapeDiffs(ex.items, live.items, path+"[]")...)
	case ex.items != nil:
		diffs = append(diffs, fmt.Sprintf("%s: the example has items, the live answer none", path))
	case live.items != nil:
		diffs = append(diffs, fmt.Sprintf("%s: the live answer has items, the example none", path))
	}
	return diffs
}

// enumDiffs lists the places where schema s (followed through $ref, allOf, the oneOf
// and anyOf branches the example matches, properties and items) has an enum and the live
// value differs from the example's. Arrays whose items can hold an enum are compared
// item by item, so they must be as long.
func enumDiffs(s *openapi3.SchemaRef, ex, live any, path string, seen map[*openapi3.Schema]bool) []string {
	if s == nil || s.Value == nil {
		return nil
	}
	sv := s.Value
	var diffs []string
	for _, sub := range sv.AllOf {
		diffs = append(diffs, enumDiffs(sub, ex, live, path, seen)...)
	}
	for _, sub := range append(slices.Clone(sv.OneOf), sv.AnyOf...) {
		if sub.Value != nil && sub.Value.VisitJSON(ex) == nil {
			diffs = append(diffs, enumDiffs(sub, ex, live, path, seen)...)
		}
	}
	if len(sv.Enum) > 0 && !reflect.DeepEqual(ex, live) {
		diffs = append(diffs, fmt.Sprintf("%s: the example has %v, the live answer %v", path, ex, live))
	}
	switch ex := ex.(type) {
	case map[string]any:
		lv, _ := live.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(ex)) {
			ps := sv.Properties[k]
			if ps == nil && sv.AdditionalProperties.Schema != nil {
				ps = sv.AdditionalProperties.Schema
			}
			if x, ok := lv[k]; ok && ps != nil {
				diffs = append(diffs, enumDiffs(ps, ex[k], x, path+"."+k, seen)...)
			}
		}
	case []any:
		lv, _ := live.([]any)
		if sv.Items == nil || !holdsEnum(sv.Items, seen) {
			break
		}
		if len(ex) != len(lv) {
			diffs = append(diffs, fmt.Sprintf("%s: the example has %d items, the live answer %d (items with an enum are compared one by one)", path, len(ex), len(lv)))
			break
		}
		for i := range ex {
			diffs = append(diffs, enumDiffs(sv.Items, ex[i], lv[i], fmt.Sprintf("%s[%d]", path, i), seen)...)
		}
	}
	return diffs
}

// holdsEnum reports whether a value of schema s can hold an enum anywhere.
func holdsEnum(s *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) bool {
	if s == nil || s.Value == nil || seen[s.Value] {
		return false
	}
	sv := s.Value
	if len(sv.Enum) > 0 {
		return true
	}
	seen[sv] = true
	defer delete(seen, sv)
	subs := slices.Concat(sv.AllOf, sv.OneOf, sv.AnyOf, []*openapi3.SchemaRef{sv.Items, sv.AdditionalProperties.Schema})
	for _, p := range sv.Properties {
		subs = append(subs, p)
	}
	return slices.ContainsFunc(subs, func(sub *openapi3.SchemaRef) bool { return holdsEnum(sub, seen) })
}

// itemDiffs lists the items of the example's array at key array that differ from the
// live item with the same value of key.
func itemDiffs(ex, live any, array, key string) []string {
	exItems, _ := ex.(map[string]any)[array].([]any)
	liveItems, _ := live.(map[string]any)[array].([]any)
	var diffs []string
	for _, it := range exItems {
		id := it.(map[string]any)[key]
		i := slices.IndexFunc(liveItems, func(l any) bool { return l.(map[string]any)[key] == id })
		if i < 0 {
			diffs = append(diffs, fmt.Sprintf("$.%s[%s=%v]: in the example, not in the live answer", array, key, id))
			continue
		}
		if !reflect.DeepEqual(it, liveItems[i]) {
			want, _ := json.Marshal(liveItems[i])
			got, _ := json.Marshal(it)
			diffs = append(diffs, fmt.Sprintf("$.%s[%s=%v]: the example has %s, the live answer %s", array, key, id, got, want))
		}
	}
	return diffs
}

var (
	quotedText = regexp.MustCompile(`"[^"]*"`)
	identifier = regexp.MustCompile(`[\w*.:+-]*\d[\w*.:+-]*`)
)

// wording is an error message without its identifiers: quoted text and words that hold
// a digit (ids, numbers, times, durations) are replaced by placeholders.
func wording(message string) string {
	return identifier.ReplaceAllString(quotedText.ReplaceAllString(message, `"…"`), "#")
}

// errorDiffs compares two Error bodies: the same code, the same param and the same
// message but for identifiers.
func errorDiffs(ex, live any) []string {
	e, _ := ex.(map[string]any)
	l, _ := live.(map[string]any)
	var diffs []string
	for _, k := range []string{"code", "param", "scope"} {
		if e[k] != l[k] {
			diffs = append(diffs, fmt.Sprintf("$.%s: the example has %v, the live answer %v", k, e[k], l[k]))
		}
	}
	em, _ := e["message"].(string)
	lm, _ := l["message"].(string)
	if wording(em) != wording(lm) {
		diffs = append(diffs, fmt.Sprintf("$.message: the example reads %q, the live answer %q", em, lm))
	}
	return diffs
}

// TestExampleComparison shows that each rule of TestContractExamples reports what it
// is about, naming the JSON path.
func TestExampleComparison(t *testing.T) {
	doc, err := gen.GetSpec()
	require.NoError(t, err)
	evse := doc.Components.Schemas["EVSE"]
	errorSchema := doc.Components.Schemas["Error"]
	const dc = `{"uid": 1, "status": "CHARGING", "connectors": [{"id": 1, "standard": "CHADEMO", "tariffIds": []}]}`
	tests := []struct {
		name      string
		status    int
		schema    *openapi3.SchemaRef
		itemsBy   string
		ex, live  string
		wantDiffs []string
	}{
		{"equal", 200, evse, "", dc, dc, nil},
		{"other identifiers", 200, evse, "", dc, strings.Replace(dc, `"uid": 1`, `"uid": 7`, 1), nil},
		{"missing key", 200, evse, "", dc, strings.Replace(dc, `"uid": 1, `, ``, 1),
			[]string{"$.uid: in the example, not in the live answer"}},
		{"extra key", 200, evse, "", dc, strings.Replace(dc, `"uid": 1`, `"uid": 1, "locationId": "L"`, 1),
			[]string{"$.locationId: in the live answer, not in the example"}},
		{"other kind", 200, evse, "", dc, strings.Replace(dc, `"uid": 1`, `"uid": "1"`, 1),
			[]string{"$.uid: the example has number, the live answer string"}},
		{"items only live", 200, evse, "", dc, strings.Replace(dc, `"tariffIds": []`, `"tariffIds": ["T"]`, 1),
			[]string{"$.connectors[].tariffIds: the live answer has items, the example none"}},
		{"enum", 200, evse, "", dc, strings.Replace(dc, "CHARGING", "AVAILABLE", 1),
			[]string{"$.status: the example has CHARGING, the live answer AVAILABLE"}},
		{"enum in an array item", 200, evse, "", dc, strings.Replace(dc, "CHADEMO", "GBT_DC", 1),
			[]string{"$.connectors[0].standard: the example has CHADEMO, the live answer GBT_DC"}},
		{"array holding enums of another length", 200, evse, "", dc,
			strings.Replace(dc, `"tariffIds": []}`, `"tariffIds": []}, {"id": 2, "standard": "CHADEMO", "tariffIds": []}`, 1),
			[]string{"$.connectors: the example has 1 items, the live answer 2 (items with an enum are compared one by one)"}},
		{"static items", 200, nil, "list/type", `{"list": [{"type": "a", "v": [1]}]}`, `{"list": [{"type": "b", "v": [1]}, {"type": "a", "v": [2]}]}`,
			[]string{`$.list[type=a]: the example has {"type":"a","v":[1]}, the live answer {"type":"a","v":[2]}`}},
		{"error identifiers", 404, errorSchema, "", `{"code": "not_found", "param": "uid", "message": "EVSE with uid 1001 not found at \"x\""}`,
			`{"code": "not_found", "param": "uid", "message": "EVSE with uid 9 not found at \"y\""}`, nil},
		{"error wording", 404, errorSchema, "", `{"code": "not_found", "message": "no EVSE 1001"}`, `{"code": "not_found", "message": "EVSE 9 not found"}`,
			[]string{`$.message: the example reads "no EVSE 1001", the live answer "EVSE 9 not found"`}},
		{"error param", 400, errorSchema, "", `{"code": "invalid_body", "param": "a", "message": "m"}`, `{"code": "invalid_body", "param": "b", "message": "m"}`,
			[]string{"$.param: the example has a, the live answer b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := exampleProbe{use: exampleUse{status: tt.status}}
			p.itemsBy.array, p.itemsBy.key, _ = strings.Cut(tt.itemsBy, "/")
			ex := &contractExample{schema: tt.schema}
			var live any
			require.NoError(t, json.Unmarshal([]byte(tt.ex), &ex.value))
			require.NoError(t, json.Unmarshal([]byte(tt.live), &live))
			assert.Equal(t, tt.wantDiffs, exampleDiffs(p, ex, live))
		})
	}
}
