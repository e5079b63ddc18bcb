//go:build unix

package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServeGetEVSE measures GET /v2/evses/{uid} through `chargenet serve` as it
// runs: its HTTP server, middleware, request log (to a discarded stream, through the
// log buffer), authentication, validation and SQLite read cache, from 8 clients on
// keep-alive loopback connections. Beside ns/op it reports cpu-ns/op, the CPU time
// (user and system) of the process per request, which waits on other work on the
// machine move less. The clients run in the same process and count too: compare trees
// with benchstat, not against an absolute figure.
func BenchmarkServeGetEVSE(b *testing.B) {
	addr := freeAddr(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"chargenet", "serve", "--addr", addr, "--database", "sqlite:" + filepath.Join(b.TempDir(), "bench.db"),
			"--demo", "--rate-limit", "0", "--webhook-dispatch=false"}, env(map[string]string{"CHARGENET_API_KEYS": devKey}), io.Discard, io.Discard)
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("serve: %v", err)
		}
	})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	get := func() int {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v2/evses/1002", nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+devKey)
		res, err := client.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
	for deadline := time.Now().Add(10 * time.Second); get() != http.StatusOK; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("serve did not answer GET /v2/evses/1002 within 10 s")
		}
	}
	b.ReportAllocs()
	b.SetParallelism(8 / min(8, max(1, runtime.GOMAXPROCS(0))))
	cpu0 := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if code := get(); code != http.StatusOK {
				b.Errorf("GET /v2/evses/1002: %d", code)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
