package server_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// BenchmarkOCPI measures whole OCPI requests in process beside the REST locations page:
// a page of 100 Locations with their EVSEs (read through the store's memo when it holds
// it), and one Location.
func BenchmarkOCPI(b *testing.B) {
	v := newOCPIEnv(b, filepath.Join(b.TempDir(), "bench.db"))
	cases := []struct{ name, path, auth string }{
		{"REST locations page of 25", "/v1/locations?limit=25", "Bearer " + devKey},
		{"OCPI locations page of 100", "/ocpi/2.2.1/locations?limit=100", ""},
		{"OCPI location", "/ocpi/2.2.1/locations/LOC-0001", ""},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := ocpiRequest(http.MethodGet, c.path, ocpiTokenC, nil)
				if c.auth != "" {
					req.Header.Set("Authorization", c.auth)
				}
				rec := httptest.NewRecorder()
				v.e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", c.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
}
