// Package ocpienv is chargenet serving OCPI in process, for tests: the REST server with
// the OCPI interface mounted, over SQLite holding the demo inventory, a partner that has
// registered (TokenC) and one that has not (TokenA). Serve checks every answer against
// the OCPI contract and that a write answered other than 1000 changed nothing. The
// tests of the OCPI interface use it, and so do the REST API's fuzzers, which send it
// every input as OCPI would receive it.
package ocpienv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/ocpi"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// The partners' tokens, and the REST API key the service accepts.
const (
	TokenA = "registration-token-of-emsp-b" // the registration token of emsp-b, which has not registered
	TokenC = "credentials-token-of-emsp-a"  // the credentials token of emsp-a, registered
	APIKey = "test-key-0123456789abcdef"
)

const cursorSecret = "test-secret-test-secret-test-secret"

// Env is the service under test. Its outbound client refuses every request, so a
// handshake it starts ends in 3001 and changes nothing.
type Env struct {
	E     *echo.Echo
	Store *sqlite.Store
	state [sha256.Size]byte // snapshot of the store after the last accepted change
}

// New returns the service over a new SQLite database at path (":memory:" for a private
// in-memory one).
func New(tb testing.TB, path string) *Env {
	tb.Helper()
	store, err := sqlite.Open(context.Background(), path)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = store.Close() })
	ctx := context.Background()
	require.NoError(tb, store.Import(ctx, chargenet.DemoInventory(time.Now())))
	now := time.Now().UTC().Truncate(time.Microsecond)
	hashA, hashC := chargenet.HashToken(TokenA), chargenet.HashToken(TokenC)
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
	cursors := chargenet.NewCursorCodec([]byte(cursorSecret))
	svc, err := ocpi.New(ocpi.Config{Store: store, Party: ocpi.Party{CountryCode: "NL", PartyID: "CNE", Name: "chargenet"},
		PublicURL: "https://chargenet.example.com", Client: refuse, Cursors: cursors, TokenCacheTTL: 5 * time.Second})
	require.NoError(tb, err)
	api, err := ocpi.NewHTTP(svc)
	require.NoError(tb, err)
	e, err := server.New(server.Config{Store: store, Keys: server.NewKeys(store, []string{APIKey}), Cursors: cursors, OCPI: api,
		RateLimit: &server.RateLimit{}})
	require.NoError(tb, err)
	v := &Env{E: e, Store: store}
	v.state = v.snapshot(tb)
	return v
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// snapshot hashes the inventory and the partners.
func (v *Env) snapshot(tb testing.TB) [sha256.Size]byte {
	tb.Helper()
	ctx := context.Background()
	h := sha256.New()
	enc := json.NewEncoder(h)
	sites, err := v.Store.ListSites(ctx, chargenet.UpdateSeek{Limit: 1000})
	require.NoError(tb, err)
	partners, err := v.Store.ListPartners(ctx)
	require.NoError(tb, err)
	require.NoError(tb, enc.Encode(sites))
	require.NoError(tb, enc.Encode(partners))
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// Serve sends req, checks it against the OCPI contract, never a 5xx, and that a write
// answered other than 1000 changed nothing. It returns the answer and its status_code.
func (v *Env) Serve(t *testing.T, req *http.Request) (*httptest.ResponseRecorder, int) {
	t.Helper()
	rec := httptest.NewRecorder()
	v.E.ServeHTTP(rec, req)
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

// Request returns a request to the service with token in Base64 as OCPI sends it ("":
// no Authorization) and body as JSON (nil: none).
func Request(method, target, token string, body []byte) *http.Request {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Token "+base64.StdEncoding.EncodeToString([]byte(token)))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}
