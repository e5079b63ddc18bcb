package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// writer is the steady write stream of the mixed workload: rate writes per second for
// duration, alternately a PATCH of connector 1 of one of the 40 demo EVSEs and a status
// notification of connector 1 of one of the 20 demo charge boxes, each drawn at random,
// sent by up to 64 connections at the times a fixed schedule gives (a write that finds
// every connection busy is late, not dropped: the stream catches up). It prints what it
// achieved: writes, rate, non-2xx answers and latency.
func writer(base, key, ingestKey string, rate int, duration time.Duration) error {
	if rate <= 0 {
		return fmt.Errorf("rate %d must be positive", rate)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	due := make(chan int, 4096)
	var (
		bad, failed atomic.Int64
		mu          sync.Mutex
		lat         []time.Duration
		wg          sync.WaitGroup
	)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); lat = append(lat, mine...); mu.Unlock() }()
			for n := range due {
				req, err := writeRequest(base, key, ingestKey, n)
				if err != nil {
					failed.Add(1)
					continue
				}
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				mine = append(mine, time.Since(start))
				if resp.StatusCode/100 != 2 {
					bad.Add(1)
				}
			}
		}()
	}
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	n := 0
	for next := start; ctx.Err() == nil; next = next.Add(interval) {
		if d := time.Until(next); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		due <- n
		n++
	}
	close(due)
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	fmt.Printf("%d\t%.0f\t%d\t%d\t%.3f\t%.3f\n", len(lat), float64(len(lat))/elapsed.Seconds(), bad.Load(), failed.Load(), pct(0.5), pct(0.99))
	return nil
}

// writeRequest returns write n of the stream: even n a PATCH, odd n a status
// notification.
func writeRequest(base, key, ingestKey string, n int) (*http.Request, error) {
	var req *http.Request
	var err error
	if n%2 == 0 {
		body := fmt.Sprintf(`{"maxElectricPower": %d.5}`, 1+n%400)
		req, err = http.NewRequest(http.MethodPatch, fmt.Sprintf("%s/v2/evses/%d/connectors/1", base, 1001+rand.IntN(40)), bytes.NewBufferString(body))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	} else {
		status := [2]string{"Available", "Charging"}[(n/2)%2]
		body := `{"connectorId": 1, "errorCode": "NoError", "status": "` + status + `"}`
		req, err = http.NewRequest(http.MethodPost, base+"/internal/v1/chargeboxes/"+strconv.Itoa(501+rand.IntN(20))+"/status-notifications",
			bytes.NewBufferString(body))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+ingestKey)
		}
	}
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// writerArgs parses the arguments of tool writer.
func writerArgs(args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("usage: tool writer URL KEY INGEST_KEY RATE DURATION")
	}
	rate, err := strconv.Atoi(args[3])
	if err != nil {
		return fmt.Errorf("RATE %q: %w", args[3], err)
	}
	d, err := time.ParseDuration(args[4])
	if err != nil {
		return fmt.Errorf("DURATION %q: %w", args[4], err)
	}
	if os.Getenv("BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "writer: %s at %d/s for %s\n", args[0], rate, d)
	}
	return writer(args[0], args[1], args[2], rate, d)
}
