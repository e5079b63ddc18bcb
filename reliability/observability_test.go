package reliability

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// prometheusTools returns the paths of prometheus and promtool (the Debian package
// prometheus; `make prometheus-tools` installs it). Without them the test fails under
// CI and is skipped elsewhere.
func prometheusTools(t *testing.T) (server, promtool string) {
	t.Helper()
	server, err1 := exec.LookPath("prometheus")
	promtool, err2 := exec.LookPath("promtool")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("prometheus and promtool are needed: run `make prometheus-tools` (%v, %v)", err1, err2)
		}
		t.Skip("prometheus or promtool is missing: run `make prometheus-tools` to run the metrics proof")
	}
	return server, promtool
}

// TestAlertRules checks deploy/prometheus/alerts.yml with promtool and runs its unit
// tests (alerts_test.yml: a case that fires and one that does not for every rule).
func TestAlertRules(t *testing.T) {
	_, promtool := prometheusTools(t)
	dir := filepath.Join("..", "deploy", "prometheus")
	out, err := exec.Command(promtool, "check", "rules", filepath.Join(dir, "alerts.yml")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS: 5 rules found")
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yml")
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS")
	// Every rule has its test.
	rules, err := os.ReadFile(filepath.Join(dir, "alerts.yml"))
	require.NoError(t, err)
	tests, err := os.ReadFile(filepath.Join(dir, "alerts_test.yml"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(rules), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- alert: "); ok {
			assert.Contains(t, string(tests), "alertname: "+name, "alert %s has no test", name)
		}
	}
}

// hookReceiver is a webhook receiver that answers 204 and keeps the traceparent of each
// delivery.
type hookReceiver struct {
	*httptest.Server
	mu           sync.Mutex
	traceparents []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.traceparents = append(r.traceparents, req.Header.Get("traceparent"))
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.traceparents...)
}

// eventually polls cond every 100 ms until it holds or timeout passes, and reports
// whether it held.
func eventually(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// prometheus is a Prometheus server scraping one target every second.
type prometheus struct {
	base string
}

func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: chargenet
    static_configs:
      - targets: [%q]
`, target)), 0o644))
	addr := proctest.FreeAddr(t)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	cmd := exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &prometheus{base: "http://" + addr}
	ready := eventually(30*time.Second, func() bool {
		res, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	if !ready {
		out, _ := os.ReadFile(log.Name())
		t.Fatalf("prometheus did not get ready:\n%s", out)
	}
	return p
}

// query evaluates an instant PromQL query and returns the value of each series, by the
// value of label (one series per label value).
func (p *prometheus) query(t *testing.T, q, label string) map[string]float64 {
	t.Helper()
	res, err := http.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	require.NoError(t, err)
	defer res.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	require.Equal(t, "success", body.Status, "query %s: %s", q, body.Error)
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		v, err := strconv.ParseFloat(r.Value[1].(string), 64)
		require.NoError(t, err)
		out[r.Metric[label]] = v
	}
	return out
}

// TestPrometheusScrapesMetrics is the metrics proof on the real binary and a real
// Prometheus server: after known traffic, the request counts Prometheus scraped per
// operation and status equal the requests sent, the commit → first attempt histogram
// holds one observation per webhook delivery made, and promtool finds no problem in the
// exposition. The public port does not serve /metrics.
func TestPrometheusScrapesMetrics(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { testPrometheusScrapesMetrics(t, b.database(t), b.name) })
	}
}

func testPrometheusScrapesMetrics(t *testing.T, database, backend string) {
	promBin, promtool := prometheusTools(t)
	admin := proctest.FreeAddr(t)
	srv := serve(t, database, append([]string{"--admin-addr", admin}, webhookArgs...)...)
	prom := startPrometheus(t, promBin, admin)
	rcv := newHookReceiver(t)
	a := newAPI(srv.Base, true)

	res, err := a.do(http.MethodPost, "/emsp/v1/webhooks",
		fmt.Sprintf(`{"url": %q, "event_types": [{"type": "evse.connector.updated"}]}`, rcv.URL+"/hook"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	const gets, lists, patches, forbidden, unrouted = 7, 5, 4, 3, 2
	for i := range gets {
		res, err := a.do(http.MethodGet, "/v2/evses/1001", "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.status, "GET %d", i)
	}
	for range lists {
		res, err := a.do(http.MethodGet, "/v1/locations?limit=3", "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.status)
	}
	for i := range patches {
		res, err := a.do(http.MethodPatch, "/v2/evses/1002/connectors/1", patchBody("maxElectricPower", float64(200+i)))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	}
	for range forbidden {
		res, err := a.do(http.MethodGet, "/v2/evses/1001", "", "Authorization", "Bearer not-a-key-0123456789")
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, res.status)
	}
	for range unrouted {
		res, err := a.do(http.MethodGet, "/v9/nothing-here", "")
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, res.status)
	}
	require.True(t, eventually(20*time.Second, func() bool { return len(rcv.received()) >= patches }),
		"deliveries received: %d of %d", len(rcv.received()), patches)

	byOp := `sum by (operation) (chargenet_http_requests_total{code=%q, operation!="unknown"})`
	want := map[string]map[string]float64{
		"200": {"getEvse": gets, "listLocations": lists, "updateConnector": patches},
		"201": {"createWebhook": 1},
		"403": {"getEvse": forbidden},
	}
	refusals := `sum by (error_code) (chargenet_http_validation_refusals_total)`
	wantRefusals := map[string]float64{"unauthorized": forbidden, "not_found": unrouted}
	delay := `sum by (job) (chargenet_webhook_first_attempt_delay_seconds_count)`
	attempts := `sum by (outcome) (chargenet_webhook_attempts_total)`
	scraped := func() bool {
		for code, ops := range want {
			if got := prom.query(t, fmt.Sprintf(byOp, code), "operation"); !assert.ObjectsAreEqual(ops, nonZero(got)) {
				return false
			}
		}
		return assert.ObjectsAreEqual(wantRefusals, nonZero(prom.query(t, refusals, "error_code"))) &&
			prom.query(t, delay, "job")["chargenet"] == patches
	}
	eventually(30*time.Second, scraped) // then the assertions below say what differs
	for code, ops := range want {
		assert.Equal(t, ops, nonZero(prom.query(t, fmt.Sprintf(byOp, code), "operation")), "requests answered %s, by operation", code)
	}
	assert.Equal(t, wantRefusals, nonZero(prom.query(t, refusals, "error_code")), "refusals by error code")
	assert.Equal(t, float64(patches), prom.query(t, delay, "job")["chargenet"], "first attempts observed")
	assert.Equal(t, map[string]float64{"succeeded": patches}, nonZero(prom.query(t, attempts, "outcome")), "attempts by outcome")
	// Each delivery was attempted within a second of its commit (announced, not polled).
	assert.Equal(t, float64(patches), prom.query(t,
		`sum by (job) (chargenet_webhook_first_attempt_delay_seconds_bucket{le="1"})`, "job")["chargenet"])
	assert.Equal(t, 1.0, prom.query(t, `chargenet_ready`, "job")["chargenet"])
	assert.Equal(t, float64(patches), prom.query(t,
		`sum by (job) (chargenet_store_commit_writes_sum{operation="update_connector"})`, "job")["chargenet"],
		"the store's commits carried every PATCH")
	if backend == "postgres" {
		assert.Positive(t, prom.query(t, `chargenet_db_pool_max_connections`, "job")["chargenet"])
	} else {
		assert.Positive(t, prom.query(t, `chargenet_store_read_cache_misses_total`, "job")["chargenet"])
	}

	// The exposition passes promtool's lint, and only the admin listener serves it.
	res2, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	exposition, err := io.ReadAll(res2.Body)
	_ = res2.Body.Close()
	require.NoError(t, err)
	lint := exec.Command(promtool, "check", "metrics")
	lint.Stdin = bytes.NewReader(exposition)
	out, err := lint.CombinedOutput()
	assert.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "promtool check metrics reports problems")
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "chargenet_http_requests_in_flight",
		"chargenet_webhook_pending_deliveries", "chargenet_webhook_oldest_pending_age_seconds",
		"chargenet_webhook_disabled_subscriptions", "chargenet_store_commit_duration_seconds_bucket"} {
		assert.Contains(t, string(exposition), "\n"+name, "the exposition has %s", name)
	}
	public, err := http.Get(srv.Base + "/metrics")
	require.NoError(t, err)
	_ = public.Body.Close()
	assert.Equal(t, http.StatusNotFound, public.StatusCode, "the public port does not serve /metrics")
	pprof, err := http.Get("http://" + admin + "/debug/pprof/")
	require.NoError(t, err)
	_ = pprof.Body.Close()
	assert.Equal(t, http.StatusOK, pprof.StatusCode, "/debug/pprof/ on the admin listener")
}

// nonZero drops the zero values of a query's result (series created at start-up).
func nonZero(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// otlpReceiver is an OTLP/HTTP trace endpoint: it decodes every export request and
// keeps the spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var export coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &export)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the spans named name of trace traceID.
func (r *otlpReceiver) find(traceID []byte, name string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if bytes.Equal(s.TraceId, traceID) && s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTraces runs the real binary with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an
// OTLP/HTTP endpoint of the test: a PATCH sent with a traceparent is exported as a
// server span named by its operationId, child of the caller's span, with a store span
// below it; the webhook attempt its event caused is a span child of that store span,
// and the delivery carries the attempt's traceparent, in the same trace. The request's
// log line names the trace.
func TestTraces(t *testing.T) {
	otlp := newOTLPReceiver(t)
	rcv := newHookReceiver(t)
	srv := proctest.Start(t, proctest.Options{
		Database: "sqlite:" + filepath.Join(t.TempDir(), "chargenet.db"),
		Keys:     []string{key},
		Env: []string{"CHARGENET_RATE_LIMIT=0", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL,
			"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=chargenet-test"},
		Args: append([]string{"--demo"}, webhookArgs...),
	})
	a := newAPI(srv.Base, true)
	res, err := a.do(http.MethodPost, "/emsp/v1/webhooks",
		fmt.Sprintf(`{"url": %q, "event_types": [{"type": "evse.connector.updated"}]}`, rcv.URL+"/hook"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)

	traceID := []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	callerSpan := []byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	traceparent := fmt.Sprintf("00-%x-%x-01", traceID, callerSpan)
	res, err = a.do(http.MethodPatch, "/v2/evses/1002/connectors/1", patchBody("maxElectricPower", 123), "traceparent", traceparent)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)

	var server, store, attempt *tracepb.Span
	exported := eventually(20*time.Second, func() bool {
		s, st, at := otlp.find(traceID, "updateConnector"), otlp.find(traceID, "store.UpdateConnector"), otlp.find(traceID, "webhook.attempt")
		if len(s) == 1 && len(st) == 1 && len(at) == 1 {
			server, store, attempt = s[0], st[0], at[0]
			return true
		}
		return false
	})
	require.True(t, exported, "spans of trace %x not all exported; log:\n%s", traceID, srv.Log())
	assert.Equal(t, callerSpan, server.ParentSpanId, "the server span continues the caller's traceparent")
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, server.Kind)
	assert.Equal(t, server.SpanId, store.ParentSpanId, "the store call is a child of the request")
	assert.Equal(t, store.SpanId, attempt.ParentSpanId, "the webhook attempt is a child of the change that caused it")
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, attempt.Kind)

	got := rcv.received()
	require.Len(t, got, 1)
	assert.Equal(t, fmt.Sprintf("00-%x-%x-01", traceID, attempt.SpanId), got[0], "the delivery carries the attempt's traceparent")

	var logged bool
	for _, line := range strings.Split(srv.Log(), "\n") {
		if strings.Contains(line, `"method":"PATCH"`) {
			logged = true
			assert.Contains(t, line, fmt.Sprintf(`"trace_id":"%x"`, traceID), "the request line names the trace")
		}
	}
	assert.True(t, logged, "a request line for the PATCH")

	// A request without a traceparent starts a trace of its own; the list is one span
	// with its store call below it.
	res, err = a.do(http.MethodGet, "/v1/locations?limit=2", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status)
	require.NoError(t, srv.Stop(10*time.Second)) // shutting down exports what is buffered
	otlp.mu.Lock()
	var list *tracepb.Span
	for _, s := range otlp.spans {
		if s.Name == "listLocations" {
			list = s
		}
	}
	otlp.mu.Unlock()
	require.NotNil(t, list, "the listLocations span was exported")
	assert.Empty(t, list.ParentSpanId, "a request without traceparent is a root span")
	assert.NotEqual(t, traceID, list.TraceId)
	assert.Len(t, otlp.find(list.TraceId, "store.ListLocationDocs"), 1, "its store call")
}
