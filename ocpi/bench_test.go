package ocpi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chargenet/chargenet/internal/ocpienv"
)

// BenchmarkOCPI measures whole OCPI requests in process beside the REST locations page:
// a page of 100 Locations with their EVSEs (read through the store's memo when it holds
// it), and one Location; and both pages right after a PATCH of a connector, which every
// memo entry and cached page of a changed location gives way to (the PATCH's own time
// is excluded).
func BenchmarkOCPI(b *testing.B) {
	v := ocpienv.New(b, filepath.Join(b.TempDir(), "bench.db"))
	cases := []struct {
		name, path, auth string
		write            bool
	}{
		{"REST locations page of 25", "/v1/locations?limit=25", "Bearer " + ocpienv.APIKey, false},
		{"OCPI locations page of 100", "/ocpi/2.2.1/locations?limit=100", "", false},
		{"OCPI location", "/ocpi/2.2.1/locations/LOC-0001", "", false},
		{"REST locations page of 25 after a write", "/v1/locations?limit=25", "Bearer " + ocpienv.APIKey, true},
		{"OCPI locations page of 100 after a write", "/ocpi/2.2.1/locations?limit=100", "", true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if c.write {
					b.StopTimer()
					i++
					patch := httptest.NewRequest(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", 1001+i%40),
						strings.NewReader(fmt.Sprintf(`{"maxElectricPower": %d.5}`, 1+i%400)))
					patch.Header.Set("Authorization", "Bearer "+ocpienv.APIKey)
					patch.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					v.E.ServeHTTP(rec, patch)
					if rec.Code != http.StatusOK && rec.Code != http.StatusConflict {
						b.Fatalf("PATCH: %d %s", rec.Code, rec.Body.String())
					}
					b.StartTimer()
				}
				req := ocpienv.Request(http.MethodGet, c.path, ocpienv.TokenC, nil)
				if c.auth != "" {
					req.Header.Set("Authorization", c.auth)
				}
				rec := httptest.NewRecorder()
				v.E.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", c.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
}
