package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ocpiEnv is the service with OCPI over SQLite holding the demo inventory, a partner
// that has registered (token C) and one that has not (token A). Its outbound client
// refuses every request, so a handshake it starts ends in 3001 and changes nothing.
type ocpiEnv struct {
	e      *echo.Echo
	store  *sqlite.Store
	tokenA string
	tokenC string
	state  [sha256.Size]byte
}

const (
	ocpiTokenA = "registration-token-of-emsp-b"
	ocpiTokenC = "credentials-token-of-emsp-a"
)

func newOCPIEnv(tb testing.TB, path string) *ocpiEnv {
	tb.Helper()
	store, err := sqlite.Open(context.Background(), path)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = store.Close() })
	ctx := context.Background()
	require.NoError(tb, store.Import(ctx, chargenet.DemoInventory(time.Now())))
	now := time.Now().UTC().Truncate(time.Microsecond)
	hashA, hashC := chargenet.HashToken(ocpiTokenA), chargenet.HashToken(ocpiTokenC)
	hold := chargenet.HashToken("held")
	a := &chargenet.Partner{ID: chargenet.NewID("ptn_", now), Name: "emsp-a", RegistrationHash: &hold, CreatedAt: now, UpdatedAt: now}
	require.NoError(tb, store.CreatePartner(ctx, a))
	_, err = store.SetPartnerCredentials(ctx, a.ID, hold, chargenet.PartnerCredentials{Token: "b", VersionsURL: "https://emsp-a.example.com/versions",
		Endpoints: []chargenet.PartnerEndpoint{{Module: "credentials", Role: "SENDER", URL: "https://emsp-a.example.com/credentials"}},
		Roles:     []chargenet.PartnerRole{{Role: "EMSP", CountryCode: "NL", PartyID: "EXA", Name: "A"}}}, hashC, now)
	require.NoError(tb, err)
	b := &chargenet.Partner{ID: chargenet.NewID("ptn_", now), Name: "emsp-b", RegistrationHash: &hashA, CreatedAt: now, UpdatedAt: now}
	require.NoError(tb, store.CreatePartner(ctx, b))

	refuse := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("no network in this test")
	})}
	cursors := chargenet.NewCursorCodec([]byte(testSecret))
	svc, err := ocpi.New(ocpi.Config{Store: store, Party: ocpi.Party{CountryCode: "NL", PartyID: "CNE", Name: "chargenet"},
		PublicURL: "https://chargenet.example.com", Client: refuse, Cursors: cursors, TokenCacheTTL: 5 * time.Second})
	require.NoError(tb, err)
	e, err := server.New(server.Config{Store: store, Keys: server.NewKeys(store, []string{devKey}), Cursors: cursors, OCPI: svc,
		RateLimit: &server.RateLimit{}})
	require.NoError(tb, err)
	v := &ocpiEnv{e: e, store: store, tokenA: ocpiTokenA, tokenC: ocpiTokenC}
	v.state = v.snapshot(tb)
	return v
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// snapshot hashes the inventory and the partners.
func (v *ocpiEnv) snapshot(tb testing.TB) [sha256.Size]byte {
	tb.Helper()
	ctx := context.Background()
	h := sha256.New()
	enc := json.NewEncoder(h)
	sites, err := v.store.ListSites(ctx, chargenet.UpdateSeek{Limit: 1000})
	require.NoError(tb, err)
	partners, err := v.store.ListPartners(ctx)
	require.NoError(tb, err)
	require.NoError(tb, enc.Encode(sites))
	require.NoError(tb, enc.Encode(partners))
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// serve sends req, checks it against the OCPI contract, never a 5xx, and that a write
// answered other than 1000 changed nothing.
func (v *ocpiEnv) serve(t *testing.T, req *http.Request) (*httptest.ResponseRecorder, int) {
	t.Helper()
	rec := httptest.NewRecorder()
	v.e.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s answered %d: %s", req.Method, req.URL, rec.Code, rec.Body.String())
	}
	if err := apitest.CheckOCPIExchange(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	var env struct {
		StatusCode int `json:"status_code"`
	}
	if rec.Code != http.StatusMethodNotAllowed || req.Method != http.MethodHead {
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil && req.Method != http.MethodHead {
			t.Fatalf("%s %s: the answer is not JSON: %q", req.Method, req.URL, rec.Body.String())
		}
	}
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return rec, env.StatusCode // reads write nothing; the credentials fuzzer checks that refused writes do not
	}
	after := v.snapshot(t)
	if env.StatusCode != 1000 && after != v.state {
		t.Fatalf("%s %s answered %d (%d) but changed the store", req.Method, req.URL, rec.Code, env.StatusCode)
	}
	v.state = after
	return rec, env.StatusCode
}

func ocpiRequest(method, target, token string, body []byte) *http.Request {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Token "+base64.StdEncoding.EncodeToString([]byte(token)))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func TestOCPIAnswers(t *testing.T) {
	v := newOCPIEnv(t, ":memory:")
	creds := func(u string) []byte {
		return []byte(`{"token": "token-b", "url": "` + u + `", "roles": [{"role": "EMSP", "party_id": "EXA", "country_code": "NL", ` +
			`"business_details": {"name": "Example"}}]}`)
	}
	huge := append(append([]byte(`{"token": "t", "url": "https://x.example.com", "roles": [], "pad": "`), bytes.Repeat([]byte("x"), 2<<20)...), `"}`...)
	for _, c := range []struct {
		name, method, target, token string
		body                        []byte
		header                      []string
		status, code                int
	}{
		{"versions with token A", "GET", "/ocpi/versions", ocpiTokenA, nil, nil, 200, 1000},
		{"details with token C", "GET", "/ocpi/2.2.1", ocpiTokenC, nil, nil, 200, 1000},
		{"locations with token A", "GET", "/ocpi/2.2.1/locations", ocpiTokenA, nil, nil, 401, 2000},
		{"no token", "GET", "/ocpi/versions", "", nil, nil, 401, 2000},
		{"unknown token", "GET", "/ocpi/versions", "nobody", nil, nil, 401, 2000},
		{"Bearer scheme", "GET", "/ocpi/versions", "", nil, []string{"Authorization", "Bearer " + ocpiTokenC}, 401, 2000},
		{"two Authorization headers", "GET", "/ocpi/versions", ocpiTokenC, nil, []string{"Authorization", "Token " + ocpiTokenC}, 401, 2000},
		{"raw token", "GET", "/ocpi/2.2.1/locations?limit=1", "", nil, []string{"Authorization", "Token " + ocpiTokenC}, 200, 1000},
		{"POST with token C", "POST", "/ocpi/2.2.1/credentials", ocpiTokenC, creds("https://emsp.example.com/versions"), nil, 405, 2000},
		{"PUT with token A", "PUT", "/ocpi/2.2.1/credentials", ocpiTokenA, creds("https://emsp.example.com/versions"), nil, 405, 2000},
		{"DELETE with token A", "DELETE", "/ocpi/2.2.1/credentials", ocpiTokenA, nil, nil, 405, 2000},
		{"POST to loopback", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, creds("http://127.0.0.1:9/versions"), nil, 400, 2001},
		{"POST to a private host", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, creds("https://10.0.0.1/versions"), nil, 400, 2001},
		{"POST, versions unreachable", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, creds("https://emsp.example.com/versions"), nil, 200, 3001},
		{"PUT, versions unreachable", "PUT", "/ocpi/2.2.1/credentials", ocpiTokenC, creds("https://emsp.example.com/versions"), nil, 200, 3001},
		{"POST without roles", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, []byte(`{"token": "t", "url": "https://x.example.com", "roles": []}`), nil, 400, 2001},
		{"POST, token with a space", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, bytes.Replace(creds("https://x.example.com"), []byte("token-b"), []byte("token b"), 1), nil, 400, 2001},
		{"POST duplicate keys", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, []byte(`{"token": "t", "token": "u", "url": "https://x.example.com", "roles": []}`), nil, 400, 2001},
		{"POST not JSON", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, []byte(`token=t`), nil, 400, 2001},
		{"POST text/plain", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, creds("https://x.example.com"), []string{"Content-Type", "text/plain"}, 400, 2001},
		{"POST 2 MiB", "POST", "/ocpi/2.2.1/credentials", ocpiTokenA, huge, nil, 400, 2001},
		{"PATCH credentials", "PATCH", "/ocpi/2.2.1/credentials", ocpiTokenC, nil, nil, 405, 2000},
		{"POST locations", "POST", "/ocpi/2.2.1/locations", ocpiTokenC, []byte(`{}`), nil, 405, 2000},
		{"unknown version", "GET", "/ocpi/2.1.1", ocpiTokenC, nil, nil, 404, 2000},
		{"unknown location", "GET", "/ocpi/2.2.1/locations/NOWHERE", ocpiTokenC, nil, nil, 404, 2003},
		{"unknown EVSE", "GET", "/ocpi/2.2.1/locations/LOC-0001/abc", ocpiTokenC, nil, nil, 404, 2003},
		{"EVSE of another location", "GET", "/ocpi/2.2.1/locations/LOC-0002/1001", ocpiTokenC, nil, nil, 404, 2003},
		{"unknown connector", "GET", "/ocpi/2.2.1/locations/LOC-0001/1001/9", ocpiTokenC, nil, nil, 404, 2003},
		{"deleted connector", "GET", "/ocpi/2.2.1/locations/LOC-0002/1004/4", ocpiTokenC, nil, nil, 404, 2003},
		{"connector", "GET", "/ocpi/2.2.1/locations/LOC-0001/1001/1", ocpiTokenC, nil, nil, 200, 1000},
		{"empty EVSE uid", "GET", "/ocpi/2.2.1/locations/LOC-0001//1", ocpiTokenC, nil, nil, 404, 2000},
		{"EVSE uid an encoded slash", "GET", "/ocpi/2.2.1/locations/LOC-0001/%2F1", ocpiTokenC, nil, nil, 404, 2000},
		{"location id too long", "GET", "/ocpi/2.2.1/locations/" + strings.Repeat("A", 37), ocpiTokenC, nil, nil, 400, 2001},
		{"date_from not a time", "GET", "/ocpi/2.2.1/locations?date_from=yesterday", ocpiTokenC, nil, nil, 400, 2001},
		{"date_from with an offset", "GET", "/ocpi/2.2.1/locations?date_from=2026-01-01T00:00:00%2B01:00", ocpiTokenC, nil, nil, 400, 2001},
		{"date_to empty", "GET", "/ocpi/2.2.1/locations?date_to=", ocpiTokenC, nil, nil, 400, 2001},
		{"offset -1", "GET", "/ocpi/2.2.1/locations?offset=-1", ocpiTokenC, nil, nil, 400, 2001},
		{"limit 0", "GET", "/ocpi/2.2.1/locations?limit=0", ocpiTokenC, nil, nil, 400, 2001},
		{"limit 1000 is lowered", "GET", "/ocpi/2.2.1/locations?limit=1000", ocpiTokenC, nil, nil, 200, 1000},
		{"position forged", "GET", "/ocpi/2.2.1/locations?position=eyJvIjoxfQ.AAAA", ocpiTokenC, nil, nil, 400, 2001},
		{"position garbage", "GET", "/ocpi/2.2.1/locations?position=%00", ocpiTokenC, nil, nil, 400, 2001},
		{"bad routing header", "GET", "/ocpi/2.2.1/locations", ocpiTokenC, nil, []string{"OCPI-from-country-code", "NLD"}, 400, 2001},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := ocpiRequest(c.method, c.target, c.token, c.body)
			for i := 0; i+1 < len(c.header); i += 2 {
				if c.header[i] == "Authorization" {
					req.Header.Add(c.header[i], c.header[i+1])
				} else {
					req.Header.Set(c.header[i], c.header[i+1])
				}
			}
			rec, code := v.serve(t, req)
			assert.Equal(t, c.status, rec.Code, "%s", rec.Body.String())
			assert.Equal(t, c.code, code, "%s", rec.Body.String())
			if rec.Code == http.StatusMethodNotAllowed {
				assert.NotEmpty(t, rec.Header().Get("Allow"))
			}
		})
	}

	t.Run("IDs and routing headers are answered", func(t *testing.T) {
		req := ocpiRequest("GET", "/ocpi/2.2.1/locations/LOC-0001", ocpiTokenC, nil)
		for k, val := range map[string]string{"X-Request-ID": "req-1", "X-Correlation-ID": "corr-1", "OCPI-from-country-code": "NL",
			"OCPI-from-party-id": "EXA", "OCPI-to-country-code": "NL", "OCPI-to-party-id": "CNE"} {
			req.Header.Set(k, val)
		}
		rec, _ := v.serve(t, req)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "req-1", rec.Header().Get("X-Request-ID"))
		assert.Equal(t, "corr-1", rec.Header().Get("X-Correlation-ID"))
		assert.Equal(t, "EXA", rec.Header().Get("OCPI-to-party-id"), "from and to swapped")
		assert.Equal(t, "CNE", rec.Header().Get("OCPI-from-party-id"))
		req = ocpiRequest("GET", "/ocpi/versions", ocpiTokenC, nil)
		req.Header.Set("OCPI-from-party-id", "EXA")
		rec, _ = v.serve(t, req)
		assert.Empty(t, rec.Header().Get("OCPI-to-party-id"), "only the Locations module routes")
		assert.NotEmpty(t, rec.Header().Get("X-Request-ID"), "a new ID when the request has none")
	})

	t.Run("Link, X-Total-Count and X-Limit", func(t *testing.T) {
		rec, _ := v.serve(t, ocpiRequest("GET", "/ocpi/2.2.1/locations?limit=50&offset=100", ocpiTokenC, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "120", rec.Header().Get("X-Total-Count"))
		assert.Equal(t, "100", rec.Header().Get("X-Limit"))
		assert.Empty(t, rec.Header().Get("Link"), "the last page")
		rec, _ = v.serve(t, ocpiRequest("GET", "/ocpi/2.2.1/locations?limit=50&date_from=2000-01-01T00:00:00", ocpiTokenC, nil))
		link := rec.Header().Get("Link")
		require.Regexp(t, `^<https://chargenet\.example\.com/ocpi/2\.2\.1/locations\?[^>]+>; rel="next"$`, link)
		u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		require.NoError(t, err)
		q := u.Query()
		assert.Equal(t, "2000-01-01T00:00:00", q.Get("date_from"), "the filters carry over")
		assert.Equal(t, "50", q.Get("offset"))
		assert.Equal(t, "50", q.Get("limit"))
		assert.NotEmpty(t, q.Get("position"))
	})
}
