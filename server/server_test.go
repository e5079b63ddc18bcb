package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const devKey = "test-key-0123456789abcdef"

type env struct {
	t     *testing.T
	e     *echo.Echo
	store chargenet.Store
}

// newEnv starts the service over a fresh SQLite database holding the demo inventory
// (or nothing, when empty is true), with devKey accepted.
func newEnv(t *testing.T, empty bool) *env {
	t.Helper()
	store, err := sqlite.Open(context.Background(), sqlitetest.NewFile(t))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	if !empty {
		require.NoError(t, store.Import(context.Background(), chargenet.DemoInventory(time.Now())))
	}
	return newEnvWithStore(t, store)
}

const testSecret = "test-secret-test-secret-test-secret"

func newEnvWithStore(t *testing.T, store chargenet.Store) *env {
	t.Helper()
	return newEnvWithSecret(t, store, testSecret)
}

func newEnvWithSecret(t *testing.T, store chargenet.Store, secret string) *env {
	t.Helper()
	e, err := server.New(server.Config{
		Store:   store,
		Keys:    server.NewKeys(store, []string{devKey}),
		Cursors: chargenet.NewCursorCodec([]byte(secret)),
	})
	require.NoError(t, err)
	return &env{t: t, e: e, store: store}
}

// do sends a request with devKey (unless headers set Authorization, "" removing it) and
// checks the exchange against the contract.
func (v *env) do(method, path, body string, headers ...string) *httptest.ResponseRecorder {
	v.t.Helper()
	_, rec := v.exchange(method, path, body, headers...)
	return rec
}

// exchange is do that also returns the request it sent.
func (v *env) exchange(method, path, body string, headers ...string) (*http.Request, *httptest.ResponseRecorder) {
	v.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+devKey)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	rec := httptest.NewRecorder()
	v.e.ServeHTTP(rec, req)
	apitest.Check(v.t, req, rec.Code, rec.Header(), rec.Body.Bytes())
	return req, rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), rec.Body.String())
	return v
}

func assertError(t *testing.T, rec *httptest.ResponseRecorder, status int, code, param string) gen.Error {
	t.Helper()
	assert.Equal(t, status, rec.Code, rec.Body.String())
	body := decode[gen.Error](t, rec)
	assert.Equal(t, code, body.Code, rec.Body.String())
	if param != "" && assert.NotNil(t, body.Param, rec.Body.String()) {
		assert.Equal(t, param, *body.Param)
	}
	assert.NotEmpty(t, body.Message)
	return body
}

func TestAuthentication(t *testing.T) {
	v := newEnv(t, false)
	require.NoError(t, v.store.CreateAPIKey(context.Background(), chargenet.APIKey{
		Name: "partner-a", Hash: chargenet.HashAPIKey("stored-key-0123456789"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: time.Now(),
	}))
	require.NoError(t, v.store.CreateAPIKey(context.Background(), chargenet.APIKey{
		Name: "ingest", Hash: chargenet.HashAPIKey("ingest-key-0123456789"), Scopes: []string{chargenet.ScopeIngest}, CreatedAt: time.Now(),
	}))
	tests := []struct {
		name   string
		auth   string
		status int
	}{
		{"development key", "Bearer " + devKey, 200},
		{"stored key", "Bearer stored-key-0123456789", 200},
		{"scheme is case-insensitive", "bearer " + devKey, 200},
		{"missing", "", 403},
		{"unknown key", "Bearer not-a-key-0123456789", 403},
		{"basic scheme", "Basic " + devKey, 403},
		{"no token", "Bearer ", 403},
		{"two spaces", "Bearer  " + devKey, 403},
		{"unicode", "Bearer kéy", 403},
		{"very long", "Bearer " + strings.Repeat("a", 5000), 403},
	}
	paths := []string{"/v1/locations", "/v2/evses", "/v2/evses/1001", "/v1/locations/LOC-0001", "/emsp/v1/webhooks/event_types"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range paths {
				rec := v.do(http.MethodGet, p, "", "Authorization", tt.auth)
				if tt.status == 200 {
					assert.Equal(t, 200, rec.Code, p)
				} else {
					assertError(t, rec, 403, chargenet.CodeUnauthorized, "Authorization")
					if token := strings.TrimPrefix(tt.auth, "Bearer "); token != "" {
						assert.NotContains(t, rec.Body.String(), token, "the key is not echoed")
					}
				}
			}
		})
	}
	t.Run("key without the scope", func(t *testing.T) {
		for _, p := range paths[:4] {
			rec := v.do(http.MethodGet, p, "", "Authorization", "Bearer ingest-key-0123456789")
			body := assertError(t, rec, 403, chargenet.CodeInsufficientScope, "Authorization")
			if assert.NotNil(t, body.Scope, p) {
				assert.Equal(t, chargenet.ScopeInventoryRead, *body.Scope, p)
			}
			assert.NotContains(t, rec.Body.String(), "ingest-key-0123456789", "the key is not echoed")
		}
		assert.Equal(t, 200, v.do(http.MethodGet, paths[4], "", "Authorization", "Bearer ingest-key-0123456789").Code,
			"any valid key reads the event types")
	})
	t.Run("repeated header", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/v1/locations", nil)
		req.Header.Add("Authorization", "Bearer "+devKey)
		req.Header.Add("Authorization", "Bearer "+devKey)
		rec := httptest.NewRecorder()
		v.e.ServeHTTP(rec, req)
		apitest.Check(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
		assertError(t, rec, 403, chargenet.CodeUnauthorized, "Authorization")
	})
	t.Run("PATCH without key changes nothing", func(t *testing.T) {
		before := v.do(http.MethodGet, "/v2/evses/1002", "").Body.String()
		rec := v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxElectricPower": 100}`, "Authorization", "")
		assertError(t, rec, 403, chargenet.CodeUnauthorized, "Authorization")
		assert.Equal(t, before, v.do(http.MethodGet, "/v2/evses/1002", "").Body.String())
	})
	t.Run("revoked key", func(t *testing.T) {
		v2 := newEnv(t, true)
		require.NoError(t, v2.store.CreateAPIKey(context.Background(), chargenet.APIKey{
			Name: "gone", Hash: chargenet.HashAPIKey("revoked-key-0123456789"), Scopes: []string{chargenet.ScopePartner}, CreatedAt: time.Now(),
		}))
		require.NoError(t, v2.store.RevokeAPIKey(context.Background(), "gone", time.Now()))
		rec := v2.do(http.MethodGet, "/v1/locations", "", "Authorization", "Bearer revoked-key-0123456789")
		assertError(t, rec, 403, chargenet.CodeUnauthorized, "Authorization")
	})
}

func TestUnauthenticatedEndpoints(t *testing.T) {
	v := newEnv(t, true)
	for _, p := range []string{"/healthz", "/readyz", "/openapi.yaml"} {
		rec := v.do(http.MethodGet, p, "", "Authorization", "")
		assert.Equal(t, 200, rec.Code, p)
	}
	assert.Contains(t, v.do(http.MethodGet, "/openapi.yaml", "").Body.String(), "openapi: 3.0.3")
}

func TestGetEVSE(t *testing.T) {
	v := newEnv(t, false)
	rec := v.do(http.MethodGet, "/v2/evses/1004", "")
	require.Equal(t, 200, rec.Code)
	assert.Equal(t, `"1"`, rec.Header().Get("ETag"))
	e := decode[gen.EVSE](t, rec)
	assert.Equal(t, int64(1004), e.Uid)
	require.Len(t, e.Connectors, 4)
	assert.NotNil(t, e.Connectors[3].DeletedAt, "the demo's deleted connector is listed with deletedAt")

	tests := []struct {
		path   string
		status int
		code   string
		param  string
	}{
		{"/v2/evses/999", 404, chargenet.CodeNotFound, "uid"},
		{"/v2/evses/abc", 400, chargenet.CodeInvalidParameter, "uid"},
		{"/v2/evses/-1", 400, chargenet.CodeInvalidParameter, "uid"},
		{"/v2/evses/0", 400, chargenet.CodeInvalidParameter, "uid"},
		{"/v2/evses/1.5", 400, chargenet.CodeInvalidParameter, "uid"},
		{"/v2/evses/1e309", 400, chargenet.CodeInvalidParameter, "uid"},
		{"/v2/evses/999999999999999999999", 400, chargenet.CodeInvalidParameter, "uid"},
		{"/v2/evses/%00", 400, chargenet.CodeInvalidParameter, "uid"},
		{"/v1/locations/LOC-9999", 404, chargenet.CodeNotFound, "id"},
		{"/v1/locations/" + strings.Repeat("x", 37), 400, chargenet.CodeInvalidParameter, "id"},
		{"/v1/locations/a%20b", 400, chargenet.CodeInvalidParameter, "id"},
		{"/v3/unknown", 404, chargenet.CodeNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			assertError(t, v.do(http.MethodGet, tt.path, ""), tt.status, tt.code, tt.param)
		})
	}
	rec = v.do(http.MethodPut, "/v2/evses/1001", "")
	assertError(t, rec, 405, chargenet.CodeMethodNotAllowed, "")
	assert.Equal(t, "DELETE, GET, PATCH", rec.Header().Get("Allow"))
	// A list path is not its items' path with an empty identifier.
	rec = v.do(http.MethodDelete, "/v2/evses", "")
	assertError(t, rec, 405, chargenet.CodeMethodNotAllowed, "")
	assert.Equal(t, "GET, POST", rec.Header().Get("Allow"))
	assertError(t, v.do(http.MethodPut, "/v1/locations", `{}`), 405, chargenet.CodeMethodNotAllowed, "")

	loc := decode[gen.Location](t, v.do(http.MethodGet, "/v1/locations/LOC-0001", ""))
	assert.Equal(t, []int64{1001, 1002}, loc.EvseUids)
}

func TestEventTypes(t *testing.T) {
	v := newEnv(t, true)
	rec := v.do(http.MethodGet, "/emsp/v1/webhooks/event_types", "")
	require.Equal(t, 200, rec.Code)
	want, err := chargenet.EventTypes()
	require.NoError(t, err)
	got := decode[gen.EventTypeList](t, rec)
	require.Len(t, got.EventTypes, len(want))
	for i, w := range want {
		assert.Equal(t, w.Type, got.EventTypes[i].Type)
		assert.Equal(t, w.APIVersions, got.EventTypes[i].ApiVersions)
		assert.Equal(t, w.APIVersions[len(w.APIVersions)-1], got.EventTypes[i].Latest)
	}
}

func TestUpdateConnector(t *testing.T) {
	v := newEnv(t, false)
	before := decode[gen.EVSE](t, v.do(http.MethodGet, "/v2/evses/1002", ""))
	rec := v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxElectricPower": 300, "maxAmperage": 450}`)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	assert.Equal(t, `"2"`, rec.Header().Get("ETag"))
	after := decode[gen.EVSE](t, rec)
	assert.Equal(t, 300.0, after.Connectors[0].MaxElectricPower)
	assert.Equal(t, 450.0, after.Connectors[0].MaxAmperage)
	assert.Equal(t, before.Connectors[0].MaxVoltage, after.Connectors[0].MaxVoltage, "fields not sent keep their value")
	assert.Equal(t, before.Connectors[0].Standard, after.Connectors[0].Standard)
	read := v.do(http.MethodGet, "/v2/evses/1002", "")
	assert.Equal(t, after, decode[gen.EVSE](t, read), "a read shows the update")
	assert.Equal(t, read.Body.String(), rec.Body.String(), "the answer is what a read then sends, byte for byte")
	assert.Equal(t, read.Header().Get("ETag"), rec.Header().Get("ETag"))
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))

	t.Run("If-Match", func(t *testing.T) {
		etag := v.do(http.MethodGet, "/v2/evses/1002", "").Header().Get("ETag")
		stale := v.do(http.MethodGet, "/v2/evses/1002", "").Body.String()
		assertError(t, v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxVoltage": 800}`, "If-Match", `"999"`),
			412, chargenet.CodePreconditionFailed, "If-Match")
		assert.Equal(t, stale, v.do(http.MethodGet, "/v2/evses/1002", "").Body.String(), "412 changes nothing")
		rec := v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxVoltage": 800}`, "If-Match", etag)
		require.Equal(t, 200, rec.Code, rec.Body.String())
		assertError(t, v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxVoltage": 700}`, "If-Match", etag),
			412, chargenet.CodePreconditionFailed, "If-Match")
		assert.Equal(t, 200, v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxVoltage": 700}`, "If-Match", "*").Code)
	})

	bad := []struct {
		name, path, body string
		headers          []string
		status           int
		code, param      string
	}{
		{"not JSON", "/v2/evses/1002/connectors/1", `{"maxVoltage":`, nil, 400, chargenet.CodeInvalidBody, ""},
		{"JSON array", "/v2/evses/1002/connectors/1", `[]`, nil, 400, chargenet.CodeInvalidBody, ""},
		{"empty object", "/v2/evses/1002/connectors/1", `{}`, nil, 400, chargenet.CodeInvalidBody, ""},
		{"no body", "/v2/evses/1002/connectors/1", ``, []string{"Content-Type", "application/json"}, 400, chargenet.CodeInvalidBody, ""},
		{"unknown field", "/v2/evses/1002/connectors/1", `{"colour": "red"}`, nil, 400, chargenet.CodeInvalidBody, ""},
		{"read-only field", "/v2/evses/1002/connectors/1", `{"powerType": "DC"}`, nil, 400, chargenet.CodeInvalidBody, ""},
		{"wrong type", "/v2/evses/1002/connectors/1", `{"maxVoltage": "high"}`, nil, 400, chargenet.CodeInvalidBody, "maxVoltage"},
		{"null", "/v2/evses/1002/connectors/1", `{"maxVoltage": null}`, nil, 400, chargenet.CodeInvalidBody, "maxVoltage"},
		{"enum", "/v2/evses/1002/connectors/1", `{"standard": "SCHUKO"}`, nil, 400, chargenet.CodeInvalidBody, "standard"},
		{"zero power", "/v2/evses/1002/connectors/1", `{"maxElectricPower": 0}`, nil, 400, chargenet.CodeInvalidBody, "maxElectricPower"},
		{"power over bound", "/v2/evses/1002/connectors/1", `{"maxElectricPower": 4000.5}`, nil, 400, chargenet.CodeInvalidBody, "maxElectricPower"},
		{"current over bound", "/v2/evses/1002/connectors/1", `{"maxAmperage": 3001}`, nil, 400, chargenet.CodeInvalidBody, "maxAmperage"},
		{"voltage over bound", "/v2/evses/1002/connectors/1", `{"maxVoltage": 1501}`, nil, 400, chargenet.CodeInvalidBody, "maxVoltage"},
		{"negative", "/v2/evses/1002/connectors/1", `{"maxVoltage": -5}`, nil, 400, chargenet.CodeInvalidBody, "maxVoltage"},
		{"AC standard on DC", "/v2/evses/1002/connectors/1", `{"standard": "IEC_62196_T2"}`, nil, 400, chargenet.CodeInvalidConnector, "standard"},
		{"DC standard on AC", "/v2/evses/1001/connectors/1", `{"standard": "CHADEMO"}`, nil, 400, chargenet.CodeInvalidConnector, "standard"},
		{"DC needs cable", "/v2/evses/1002/connectors/1", `{"format": "SOCKET"}`, nil, 400, chargenet.CodeInvalidConnector, "format"},
		{"bad uid", "/v2/evses/x/connectors/1", `{"maxVoltage": 500}`, nil, 400, chargenet.CodeInvalidParameter, "uid"},
		{"bad connector id", "/v2/evses/1002/connectors/-3", `{"maxVoltage": 500}`, nil, 400, chargenet.CodeInvalidParameter, "connectorId"},
		{"unknown EVSE", "/v2/evses/9999/connectors/1", `{"maxVoltage": 500}`, nil, 404, chargenet.CodeNotFound, "uid"},
		{"unknown connector", "/v2/evses/1002/connectors/9", `{"maxVoltage": 500}`, nil, 404, chargenet.CodeNotFound, "connectorId"},
		{"deleted connector", "/v2/evses/1004/connectors/4", `{"maxVoltage": 500}`, nil, 409, chargenet.CodeConnectorDeleted, "connectorId"},
		{"text/plain", "/v2/evses/1002/connectors/1", `{"maxVoltage": 500}`, []string{"Content-Type", "text/plain"}, 415, chargenet.CodeUnsupportedMediaType, "Content-Type"},
		{"duplicate key", "/v2/evses/1002/connectors/1", `{"maxVoltage": 500, "maxVoltage": 600}`, nil, 400, chargenet.CodeInvalidBody, ""},
		{"duplicate key, other spelling", "/v2/evses/1002/connectors/1", `{"maxVoltage": 500, "max\u0056oltage": 600}`, nil, 400, chargenet.CodeInvalidBody, ""},
		{"too large", "/v2/evses/1002/connectors/1", `{"maxVoltage": 500` + strings.Repeat(" ", 2<<20) + `}`, nil, 413, chargenet.CodePayloadTooLarge, ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			evses := v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String()
			rec := v.do(http.MethodPatch, tt.path, tt.body, tt.headers...)
			body := assertError(t, rec, tt.status, tt.code, tt.param)
			if tt.param != "" {
				assert.Contains(t, body.Message, tt.param, "the message says where")
			}
			assert.Equal(t, evses, v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String(), "a rejected request changes nothing")
		})
	}
}

func TestConcurrentPatchesOfDifferentFields(t *testing.T) {
	v := newEnv(t, false)
	fields := []string{"maxElectricPower", "maxAmperage", "maxVoltage"}
	var wg sync.WaitGroup
	for round := 0; round < 10; round++ {
		for i, f := range fields {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", fmt.Sprintf(`{%q: %d}`, f, 100+round*10+i))
				assert.Equal(t, 200, rec.Code, rec.Body.String())
			}()
		}
		wg.Wait()
		got := decode[gen.EVSE](t, v.do(http.MethodGet, "/v2/evses/1002", ""))
		c := got.Connectors[0]
		assert.Equal(t, []float64{float64(100 + round*10), float64(101 + round*10), float64(102 + round*10)},
			[]float64{c.MaxElectricPower, c.MaxAmperage, c.MaxVoltage}, "round %d: every field set", round)
	}
	final := v.do(http.MethodGet, "/v2/evses/1002", "")
	assert.Equal(t, `"31"`, final.Header().Get("ETag"), "30 updates, each counted once")
}

// failingStore answers every read with an error carrying internals, or a panic.
type failingStore struct {
	chargenet.Store
	panics bool
}

func (f failingStore) EVSEDoc(context.Context, int64) ([]byte, int64, error) {
	if f.panics {
		panic("boom: secret detail")
	}
	return nil, 0, errors.New(`sqlite: SELECT secret FROM evses: disk I/O error`)
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	base := newEnv(t, true)
	for _, panics := range []bool{false, true} {
		v := newEnvWithStore(t, failingStore{Store: base.store, panics: panics})
		rec := v.do(http.MethodGet, "/v2/evses/1001", "")
		body := assertError(t, rec, 500, chargenet.CodeInternal, "")
		assert.Equal(t, "internal server error", body.Message)
		assert.NotContains(t, rec.Body.String(), "secret")
		assert.NotContains(t, rec.Body.String(), "SELECT")
	}
}

func TestUnavailableStore(t *testing.T) {
	base := newEnv(t, true)
	v := newEnvWithStore(t, unavailableStore{base.store})
	assertError(t, v.do(http.MethodGet, "/v2/evses/1001", ""), 503, chargenet.CodeUnavailable, "")
	assertError(t, v.do(http.MethodGet, "/readyz", ""), 503, chargenet.CodeUnavailable, "")
}

type unavailableStore struct{ chargenet.Store }

func (unavailableStore) EVSEDoc(context.Context, int64) ([]byte, int64, error) {
	return nil, 0, chargenet.Errorf(chargenet.ErrUnavailable, chargenet.CodeUnavailable, "", "database unavailable")
}
func (unavailableStore) Ping(context.Context) error {
	return chargenet.Errorf(chargenet.ErrUnavailable, chargenet.CodeUnavailable, "", "database unavailable")
}

func TestParameterErrorsNameTheParameter(t *testing.T) {
	v := newEnv(t, false)
	tests := []struct {
		path, param, message string
	}{
		{"/v1/locations?limit=1&limit=2", "limit", "limit"},
		{"/v2/evses?cursor=a&cursor=b", "cursor", "cursor"},
		{"/v2/evses/1001/", "", "no operation at GET /v2/evses/1001/"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := v.do(http.MethodGet, tt.path, "")
			require.GreaterOrEqual(t, rec.Code, 400)
			body := decode[gen.Error](t, rec)
			assert.Contains(t, body.Message, tt.message)
			if tt.param != "" && assert.NotNil(t, body.Param) {
				assert.Equal(t, tt.param, *body.Param)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	v := newEnv(t, true)
	rec := v.do(http.MethodGet, "/v1/locations", "", "X-Request-Id", "trace-abc-123")
	assert.Equal(t, "trace-abc-123", rec.Header().Get("X-Request-Id"))
	rec = v.do(http.MethodGet, "/v1/locations", "", "X-Request-Id", "bad id with spaces")
	assert.NotEqual(t, "bad id with spaces", rec.Header().Get("X-Request-Id"))
	assert.Len(t, rec.Header().Get("X-Request-Id"), 26)
}

func TestRateLimit(t *testing.T) {
	base := newEnv(t, true)
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	e, err := server.New(server.Config{
		Store:     base.store,
		Keys:      server.NewKeys(base.store, []string{devKey, "other-key-0123456789"}),
		Cursors:   chargenet.NewCursorCodec([]byte(testSecret)),
		RateLimit: &server.RateLimit{Requests: 3, Window: time.Minute},
		Now:       func() time.Time { return now },
	})
	require.NoError(t, err)
	v := &env{t: t, e: e, store: base.store}
	for i := 2; i >= 0; i-- {
		rec := v.do(http.MethodGet, "/v1/locations", "")
		require.Equal(t, 200, rec.Code)
		assert.Equal(t, "3", rec.Header().Get("X-RateLimit-Limit"))
		assert.Equal(t, fmt.Sprint(i), rec.Header().Get("X-RateLimit-Remaining"))
		assert.Equal(t, "60", rec.Header().Get("X-RateLimit-Reset"))
	}
	rec := v.do(http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxVoltage": 300}`)
	assertError(t, rec, 429, chargenet.CodeRateLimited, "")
	assert.Equal(t, "60", rec.Header().Get("Retry-After"))
	assert.Equal(t, 200, v.do(http.MethodGet, "/v1/locations", "", "Authorization", "Bearer other-key-0123456789").Code,
		"limits are per key")
	now = now.Add(61 * time.Second)
	assert.Equal(t, 200, v.do(http.MethodGet, "/v1/locations", "").Code, "a new window starts")
}
