package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/chargenet/chargenet/server"
	"github.com/labstack/echo/v4"
)

// storedBenchKey is a key of scope partner stored in the database of benchServer.
const storedBenchKey = "stored-bench-key-0123456789"

// benchServer is the service over a SQLite file holding the demo inventory and
// storedBenchKey, as `chargenet serve` runs it (request logging included, to a
// discarding handler).
func benchServer(b *testing.B) *echo.Echo {
	b.Helper()
	e, store := demoService(b, filepath.Join(b.TempDir(), "bench.db"), server.Config{
		Logger:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
		RateLimit: &server.RateLimit{}, // none: the loop would exceed any limit
	})
	if err := store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "stored-bench", Hash: chargenet.HashAPIKey(storedBenchKey),
		Scopes: []string{chargenet.ScopePartner}, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkServeHTTP measures whole requests in process: routing, authentication (a
// development key, or a stored key from the key cache), request validation, the
// handler, the store, the JSON response and the request log line. A GET carries no body,
// as net/http hands it to the server (http.NoBody). BenchmarkServeGetEVSE in
// cmd/chargenet measures the GET through the running binary, its log included.
func BenchmarkServeHTTP(b *testing.B) {
	e := benchServer(b)
	cases := []struct {
		name, method, path, key string
	}{
		{"event types", http.MethodGet, "/emsp/v1/webhooks/event_types", devKey},
		{"locations page", http.MethodGet, "/v1/locations?limit=25", devKey},
		{"locations page with cursor", http.MethodGet, "/v1/locations?limit=25&cursor=" + cursorAfter(b, "LOC-0050"), devKey},
		{"EVSE", http.MethodGet, "/v2/evses/1002", devKey},
		{"EVSE, stored key", http.MethodGet, "/v2/evses/1002", storedBenchKey},
		{"PATCH", http.MethodPatch, "/v2/evses/1002/connectors/1", devKey},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				var body io.Reader // none for a GET: the server gets http.NoBody, as from net/http
				if c.method == http.MethodPatch {
					body = strings.NewReader(fmt.Sprintf(`{"maxElectricPower": %d.5}`, 1+i%400))
				}
				req := httptest.NewRequest(c.method, c.path, body)
				req.Header.Set("Authorization", "Bearer "+c.key)
				if c.method == http.MethodPatch {
					req.Header.Set("Content-Type", "application/json")
				}
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s %s: %d %s", c.method, c.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// cursorAfter returns the cursor of the locations page that follows id.
func cursorAfter(b *testing.B, id string) string {
	b.Helper()
	page, err := chargenet.Paginate(context.Background(), chargenet.NewCursorCodec([]byte(testSecret)), chargenet.ListLocations, "", 1,
		func(context.Context, chargenet.Seek[string]) ([]string, error) { return []string{id, id + "~"}, nil },
		func(s *string) string { return *s })
	if err != nil {
		b.Fatal(err)
	}
	return page.Next
}

// BenchmarkPageJSON measures encoding a page of 25 locations as the API sends it.
func BenchmarkPageJSON(b *testing.B) {
	inv := chargenet.DemoInventory(time.Now())
	page := gen.LocationPage{Data: make([]gen.Location, 25)}
	for i := range page.Data {
		page.Data[i] = wire.Location(&inv.Locations[i])
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(page); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPATCHParallel measures PATCH requests from 32 concurrent clients, as under the
// load harness: the store commits the updates waiting together in one transaction, so
// this is throughput, not the latency of one synced commit.
func BenchmarkPATCHParallel(b *testing.B) {
	e := benchServer(b)
	b.ReportAllocs()
	b.SetParallelism(32 / runtime.GOMAXPROCS(0))
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			req := httptest.NewRequest(http.MethodPatch, "/v2/evses/1002/connectors/1",
				strings.NewReader(fmt.Sprintf(`{"maxElectricPower": %d.5}`, 1+i%400)))
			req.Header.Set("Authorization", "Bearer "+devKey)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("PATCH: %d %s", rec.Code, rec.Body.String())
			}
		}
	})
}

// BenchmarkStatusNotification measures the HTTP ingestion of a status notification in
// process over an in-memory store: authentication, validation, the application path,
// the commit (events included) and the answer. Each notification changes the EVSE's status, so that every
// one writes.
func BenchmarkStatusNotification(b *testing.B) {
	e, store := demoService(b, ":memory:", server.Config{
		Logger:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
		RateLimit: &server.RateLimit{}, // none: the loop would exceed any limit
	})
	const key = "ingest-bench-key-0123456789"
	if err := store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "ingest-bench", Hash: chargenet.HashAPIKey(key),
		Scopes: []string{chargenet.ScopeIngest}, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	statuses := []string{"Charging", "Available"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		req := httptest.NewRequest(http.MethodPost, "/internal/v1/chargeboxes/501/status-notifications",
			strings.NewReader(`{"connectorId": 1, "status": "`+statuses[i%2]+`", "errorCode": "NoError"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status notification: %d %s", rec.Code, rec.Body.String())
		}
	}
}
