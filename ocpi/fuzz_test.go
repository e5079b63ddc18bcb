package ocpi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/internal/ocpienv"
)

// ocpiTokens are the tokens the OCPI fuzzers pick from: the registered partner's, the
// waiting partner's registration token, an unknown one, none.
var ocpiTokens = []string{ocpienv.TokenC, ocpienv.TokenA, "unknown-token", ""}

// FuzzOCPICredentials sends arbitrary bodies with every method and token to the
// credentials module: never a 5xx, always the OCPI contract's answer, and nothing
// written unless the answer is 1000 (a handshake chargenet starts cannot reach the
// partner here, so none is).
func FuzzOCPICredentials(f *testing.F) {
	v := ocpienv.New(f, ":memory:")
	for _, s := range []struct {
		method, token uint8
		body          string
	}{
		{0, 1, `{"token": "b", "url": "https://emsp.example.com/versions", "roles": [{"role": "EMSP", "party_id": "EXA", "country_code": "NL", "business_details": {"name": "E"}}]}`},
		{1, 0, `{"token": "b", "url": "https://emsp.example.com/versions", "roles": [{"role": "EMSP", "party_id": "EXA", "country_code": "NL", "business_details": {"name": "E"}}]}`},
		{0, 1, `{"token": "b", "url": "http://127.0.0.1/versions", "roles": [{"role": "EMSP", "party_id": "EXA", "country_code": "NL", "business_details": {"name": "E"}}]}`},
		{0, 1, `{"token": "", "url": "", "roles": []}`},
		{0, 1, `{"token": "b", "token": "c"}`},
		{0, 1, `[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`},
		{0, 0, `{}`},
		{2, 2, ``},
		{3, 1, ``},
	} {
		f.Add(s.method, s.token, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, token uint8, body []byte) {
		m := []string{http.MethodPost, http.MethodPut, http.MethodGet, http.MethodDelete, http.MethodPatch}[int(method)%5]
		tok := ocpiTokens[int(token)%len(ocpiTokens)]
		if m == http.MethodDelete && tok == ocpienv.TokenC {
			m = http.MethodGet // unregistering is a legitimate write, tested elsewhere
		}
		req := ocpienv.Request(m, "/ocpi/2.2.1/credentials", tok, body)
		if len(body) == 0 {
			req = ocpienv.Request(m, "/ocpi/2.2.1/credentials", tok, nil)
		}
		v.Serve(t, req)
	})
}

// FuzzOCPILocations sends arbitrary queries and path segments to the Locations module:
// 200, 400, 401 or 404 only, as the OCPI contract documents them.
func FuzzOCPILocations(f *testing.F) {
	v := ocpienv.New(f, ":memory:")
	for _, s := range []struct {
		query, location, evse, connector string
		token                            uint8
	}{
		{"", "", "", "", 0},
		{"limit=1&offset=119", "", "", "", 0},
		{"date_from=2026-01-01T00:00:00Z&date_to=2027-01-01T00:00:00", "", "", "", 0},
		{"date_from=2026-01-01T00:00:00.123456789Z", "", "", "", 0},
		{"position=eyJvIjoxfQ.AAAA&offset=1", "", "", "", 0},
		{"limit=99999999999999999999", "", "", "", 0},
		{"", "LOC-0001", "", "", 0},
		{"", "LOC-0001", "1001", "", 0},
		{"", "LOC-0001", "1001", "1", 0},
		{"", "LOC-0001", "1001", "1", 1},
		{"", "%00", "1e309", "-1", 0},
	} {
		f.Add(s.query, s.location, s.evse, s.connector, s.token)
	}
	f.Fuzz(func(t *testing.T, query, location, evse, connector string, token uint8) {
		target := "/ocpi/2.2.1/locations"
		for _, seg := range []string{location, evse, connector} {
			if seg == "" {
				break
			}
			target += "/" + url.PathEscape(seg)
		}
		req := ocpienv.Request(http.MethodGet, target, ocpiTokens[int(token)%len(ocpiTokens)], nil)
		req.URL.RawQuery = query
		rec, _ := v.Serve(t, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound:
		default:
			t.Fatalf("GET %s?%s answered %d", target, query, rec.Code)
		}
	})
}

// FuzzOCPIAuthorization sends arbitrary Authorization headers: 200 for a token that
// opens the operation, 401 otherwise, never anything else.
func FuzzOCPIAuthorization(f *testing.F) {
	v := ocpienv.New(f, ":memory:")
	for _, h := range []string{"Token " + ocpienv.TokenC, "Token Y3JlZGVudGlhbHMtdG9rZW4tb2YtZW1zcC1h", "token " + ocpienv.TokenA,
		"Token", "Token  ", "Bearer x", "Token =====", "Token \xff\xfe", "Token " + ocpienv.TokenC + " extra"} {
		f.Add(h, uint8(0))
		f.Add(h, uint8(1))
	}
	f.Fuzz(func(t *testing.T, header string, path uint8) {
		if !apitest.HeaderValue(header) {
			return
		}
		target := []string{"/ocpi/versions", "/ocpi/2.2.1/locations?limit=1"}[int(path)%2]
		req := ocpienv.Request(http.MethodGet, target, "", nil)
		req.Header.Set("Authorization", header)
		rec, _ := v.Serve(t, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusUnauthorized {
			t.Fatalf("Authorization %q answered %d", header, rec.Code)
		}
	})
}
