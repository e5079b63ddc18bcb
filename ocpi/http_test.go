package ocpi_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chargenet/chargenet/internal/ocpienv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOCPIAnswers(t *testing.T) {
	v := ocpienv.New(t, ":memory:")
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
		{"versions with token A", "GET", "/ocpi/versions", ocpienv.TokenA, nil, nil, 200, 1000},
		{"details with token C", "GET", "/ocpi/2.2.1", ocpienv.TokenC, nil, nil, 200, 1000},
		{"locations with token A", "GET", "/ocpi/2.2.1/locations", ocpienv.TokenA, nil, nil, 401, 2000},
		{"no token", "GET", "/ocpi/versions", "", nil, nil, 401, 2000},
		{"unknown token", "GET", "/ocpi/versions", "nobody", nil, nil, 401, 2000},
		{"Bearer scheme", "GET", "/ocpi/versions", "", nil, []string{"Authorization", "Bearer " + ocpienv.TokenC}, 401, 2000},
		{"two Authorization headers", "GET", "/ocpi/versions", ocpienv.TokenC, nil, []string{"Authorization", "Token " + ocpienv.TokenC}, 401, 2000},
		{"raw token", "GET", "/ocpi/2.2.1/locations?limit=1", "", nil, []string{"Authorization", "Token " + ocpienv.TokenC}, 200, 1000},
		{"POST with token C", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenC, creds("https://emsp.example.com/versions"), nil, 405, 2000},
		{"PUT with token A", "PUT", "/ocpi/2.2.1/credentials", ocpienv.TokenA, creds("https://emsp.example.com/versions"), nil, 405, 2000},
		{"DELETE with token A", "DELETE", "/ocpi/2.2.1/credentials", ocpienv.TokenA, nil, nil, 405, 2000},
		{"POST to loopback", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, creds("http://127.0.0.1:9/versions"), nil, 400, 2001},
		{"POST to a private host", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, creds("https://10.0.0.1/versions"), nil, 400, 2001},
		{"POST, versions unreachable", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, creds("https://emsp.example.com/versions"), nil, 200, 3001},
		{"PUT, versions unreachable", "PUT", "/ocpi/2.2.1/credentials", ocpienv.TokenC, creds("https://emsp.example.com/versions"), nil, 200, 3001},
		{"POST without roles", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, []byte(`{"token": "t", "url": "https://x.example.com", "roles": []}`), nil, 400, 2001},
		{"POST, token with a space", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, bytes.Replace(creds("https://x.example.com"), []byte("token-b"), []byte("token b"), 1), nil, 400, 2001},
		{"POST duplicate keys", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, []byte(`{"token": "t", "token": "u", "url": "https://x.example.com", "roles": []}`), nil, 400, 2001},
		{"POST not JSON", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, []byte(`token=t`), nil, 400, 2001},
		{"POST text/plain", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, creds("https://x.example.com"), []string{"Content-Type", "text/plain"}, 400, 2001},
		{"POST 2 MiB", "POST", "/ocpi/2.2.1/credentials", ocpienv.TokenA, huge, nil, 400, 2001},
		{"PATCH credentials", "PATCH", "/ocpi/2.2.1/credentials", ocpienv.TokenC, nil, nil, 405, 2000},
		{"POST locations", "POST", "/ocpi/2.2.1/locations", ocpienv.TokenC, []byte(`{}`), nil, 405, 2000},
		{"unknown version", "GET", "/ocpi/2.1.1", ocpienv.TokenC, nil, nil, 404, 2000},
		{"unknown location", "GET", "/ocpi/2.2.1/locations/NOWHERE", ocpienv.TokenC, nil, nil, 404, 2003},
		{"unknown EVSE", "GET", "/ocpi/2.2.1/locations/LOC-0001/abc", ocpienv.TokenC, nil, nil, 404, 2003},
		{"EVSE of another location", "GET", "/ocpi/2.2.1/locations/LOC-0002/1001", ocpienv.TokenC, nil, nil, 404, 2003},
		{"unknown connector", "GET", "/ocpi/2.2.1/locations/LOC-0001/1001/9", ocpienv.TokenC, nil, nil, 404, 2003},
		{"deleted connector", "GET", "/ocpi/2.2.1/locations/LOC-0002/1004/4", ocpienv.TokenC, nil, nil, 404, 2003},
		{"connector", "GET", "/ocpi/2.2.1/locations/LOC-0001/1001/1", ocpienv.TokenC, nil, nil, 200, 1000},
		{"empty EVSE uid", "GET", "/ocpi/2.2.1/locations/LOC-0001//1", ocpienv.TokenC, nil, nil, 404, 2000},
		{"EVSE uid an encoded slash", "GET", "/ocpi/2.2.1/locations/LOC-0001/%2F1", ocpienv.TokenC, nil, nil, 404, 2000},
		{"location id too long", "GET", "/ocpi/2.2.1/locations/" + strings.Repeat("A", 37), ocpienv.TokenC, nil, nil, 400, 2001},
		{"date_from not a time", "GET", "/ocpi/2.2.1/locations?date_from=yesterday", ocpienv.TokenC, nil, nil, 400, 2001},
		{"date_from with an offset", "GET", "/ocpi/2.2.1/locations?date_from=2026-01-01T00:00:00%2B01:00", ocpienv.TokenC, nil, nil, 400, 2001},
		{"date_to empty", "GET", "/ocpi/2.2.1/locations?date_to=", ocpienv.TokenC, nil, nil, 400, 2001},
		{"offset -1", "GET", "/ocpi/2.2.1/locations?offset=-1", ocpienv.TokenC, nil, nil, 400, 2001},
		{"limit 0", "GET", "/ocpi/2.2.1/locations?limit=0", ocpienv.TokenC, nil, nil, 400, 2001},
		{"limit 1000 is lowered", "GET", "/ocpi/2.2.1/locations?limit=1000", ocpienv.TokenC, nil, nil, 200, 1000},
		{"position forged", "GET", "/ocpi/2.2.1/locations?position=eyJvIjoxfQ.AAAA", ocpienv.TokenC, nil, nil, 400, 2001},
		{"position garbage", "GET", "/ocpi/2.2.1/locations?position=%00", ocpienv.TokenC, nil, nil, 400, 2001},
		{"bad routing header", "GET", "/ocpi/2.2.1/locations", ocpienv.TokenC, nil, []string{"OCPI-from-country-code", "NLD"}, 400, 2001},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := ocpienv.Request(c.method, c.target, c.token, c.body)
			for i := 0; i+1 < len(c.header); i += 2 {
				if c.header[i] == "Authorization" {
					req.Header.Add(c.header[i], c.header[i+1])
				} else {
					req.Header.Set(c.header[i], c.header[i+1])
				}
			}
			rec, code := v.Serve(t, req)
			assert.Equal(t, c.status, rec.Code, "%s", rec.Body.String())
			assert.Equal(t, c.code, code, "%s", rec.Body.String())
			if rec.Code == http.StatusMethodNotAllowed {
				assert.NotEmpty(t, rec.Header().Get("Allow"))
			}
		})
	}

	t.Run("IDs and routing headers are answered", func(t *testing.T) {
		req := ocpienv.Request("GET", "/ocpi/2.2.1/locations/LOC-0001", ocpienv.TokenC, nil)
		for k, val := range map[string]string{"X-Request-ID": "req-1", "X-Correlation-ID": "corr-1", "OCPI-from-country-code": "NL",
			"OCPI-from-party-id": "EXA", "OCPI-to-country-code": "NL", "OCPI-to-party-id": "CNE"} {
			req.Header.Set(k, val)
		}
		rec, _ := v.Serve(t, req)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "req-1", rec.Header().Get("X-Request-ID"))
		assert.Equal(t, "corr-1", rec.Header().Get("X-Correlation-ID"))
		assert.Equal(t, "EXA", rec.Header().Get("OCPI-to-party-id"), "from and to swapped")
		assert.Equal(t, "CNE", rec.Header().Get("OCPI-from-party-id"))
		req = ocpienv.Request("GET", "/ocpi/versions", ocpienv.TokenC, nil)
		req.Header.Set("OCPI-from-party-id", "EXA")
		rec, _ = v.Serve(t, req)
		assert.Empty(t, rec.Header().Get("OCPI-to-party-id"), "only the Locations module routes")
		assert.NotEmpty(t, rec.Header().Get("X-Request-ID"), "a new ID when the request has none")
	})

	t.Run("Link, X-Total-Count and X-Limit", func(t *testing.T) {
		rec, _ := v.Serve(t, ocpienv.Request("GET", "/ocpi/2.2.1/locations?limit=50&offset=100", ocpienv.TokenC, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "120", rec.Header().Get("X-Total-Count"))
		assert.Equal(t, "100", rec.Header().Get("X-Limit"))
		assert.Empty(t, rec.Header().Get("Link"), "the last page")
		rec, _ = v.Serve(t, ocpienv.Request("GET", "/ocpi/2.2.1/locations?limit=50&date_from=2000-01-01T00:00:00", ocpienv.TokenC, nil))
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
