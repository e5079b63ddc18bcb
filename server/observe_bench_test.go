//go:build unix

package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/server"
)

// BenchmarkMetricsOverhead measures reads in process with metrics off (the default)
// and on (every request counted and timed by operation), on two equal databases. Besides
// wall time it reports the process's CPU time per request (cpu-ns/op, garbage collection
// included), which other load on the machine disturbs less.
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
				start := cpuTime()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodGet, c.path, nil)
					req.Header.Set("Authorization", "Bearer "+devKey)
					rec := httptest.NewRecorder()
					s.h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d %s", c.path, rec.Code, rec.Body.String())
					}
				}
				b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
