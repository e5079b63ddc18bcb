package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/server"
)

// BenchmarkMetricsOverhead measures reads in process with metrics off (the default)
// and on (every request counted and timed by operation), on two equal databases.
func BenchmarkMetricsOverhead(b *testing.B) {
	off, _ := demoService(b, filepath.Join(b.TempDir(), "off.db"), server.Config{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), RateLimit: &server.RateLimit{},
	})
	on, _ := demoService(b, filepath.Join(b.TempDir(), "on.db"), server.Config{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), RateLimit: &server.RateLimit{}, Metrics: metrics.New(),
	})
	for _, c := range []struct{ name, path string }{
		{"EVSE", "/v2/evses/1002"},
		{"locations page", "/v1/locations?limit=25"},
	} {
		for _, s := range []struct {
			name string
			h    http.Handler
		}{{"metrics off", off}, {"metrics on", on}} {
			b.Run(c.name+"/"+s.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodGet, c.path, nil)
					req.Header.Set("Authorization", "Bearer "+devKey)
					rec := httptest.NewRecorder()
					s.h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d %s", c.path, rec.Code, rec.Body.String())
					}
				}
			})
		}
	}
}
