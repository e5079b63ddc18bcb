package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/health"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/metrics"
	"github.com/chargenet/chargenet/server"
	"github.com/chargenet/chargenet/sqlite"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newMetricsEnv is newEnv (demo inventory) with metrics recorded in m and readiness
// checked by checker (nil: the default).
func newMetricsEnv(t *testing.T, m *metrics.Metrics, checker func(chargenet.Store) *health.Checker) *env {
	t.Helper()
	store, err := sqlite.Open(context.Background(), sqlitetest.NewFile(t))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	require.NoError(t, store.Import(context.Background(), chargenet.DemoInventory(time.Now())))
	cfg := server.Config{Store: store, Keys: server.NewKeys(store, []string{devKey}),
		Cursors: chargenet.NewCursorCodec([]byte(testSecret)), Metrics: m}
	if checker != nil {
		cfg.Readiness = checker(store)
	}
	e, err := server.New(cfg)
	require.NoError(t, err)
	return &env{t: t, e: e, store: store}
}

// count returns the value of one series of the exposition, 0 if it is absent.
func count(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case s.GetCounter() != nil:
				return s.GetCounter().GetValue()
			case s.GetHistogram() != nil:
				return float64(s.GetHistogram().GetSampleCount())
			case s.GetGauge() != nil:
				return s.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func TestRequestMetrics(t *testing.T) {
	m := metrics.New()
	v := withKeys(t, newMetricsEnv(t, m, nil))
	v.do(http.MethodGet, "/v2/evses/1002", "")
	v.do(http.MethodGet, "/v2/evses/1002", "")
	v.do(http.MethodGet, "/v2/evses/999999", "")
	v.do(http.MethodGet, "/v2/evses/1002", "", "Authorization", "Bearer wrong-key-0123456789")
	v.do(http.MethodGet, "/v2/evses/abc", "")
	v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxElectricPower": 30}`)
	v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxElectricPower": "x"}`)
	v.do(http.MethodGet, "/no/such/path", "")
	v.do(http.MethodPut, "/v2/evses/1002", "")
	v.do(http.MethodGet, "/healthz", "")
	path := "/internal/v1/chargeboxes/501/status-notifications"
	body := `{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure"}`
	v.do(http.MethodPost, path, body, "Authorization", "Bearer "+ingestKey)
	v.do(http.MethodPost, path, `{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure", "timestamp": "2001-01-01T00:00:00Z"}`,
		"Authorization", "Bearer "+ingestKey)
	v.do(http.MethodPost, "/internal/v1/chargeboxes/9999/status-notifications", body, "Authorization", "Bearer "+ingestKey)

	for _, tt := range []struct {
		op, code string
		want     float64
	}{
		{"getEvse", "200", 2},
		{"getEvse", "404", 1},
		{"getEvse", "403", 1},
		{"getEvse", "400", 1},
		{"updateConnector", "200", 1},
		{"updateConnector", "400", 1},
		{"ingestStatusNotification", "200", 2},
		{"ingestStatusNotification", "404", 1},
		{"unknown", "404", 1},
		{"unknown", "405", 1},
		{"unknown", "200", 1}, // /healthz
	} {
		assert.Equal(t, tt.want, count(t, m, "chargenet_http_requests_total", "operation", tt.op, "code", tt.code), "%s %s", tt.op, tt.code)
	}
	assert.Equal(t, 5.0, count(t, m, "chargenet_http_request_duration_seconds", "operation", "getEvse"))
	assert.Equal(t, 0.0, count(t, m, "chargenet_http_requests_in_flight"))
	for code, want := range map[string]float64{
		chargenet.CodeUnauthorized: 1, chargenet.CodeInvalidParameter: 1, chargenet.CodeInvalidBody: 1,
		chargenet.CodeNotFound: 1, chargenet.CodeMethodNotAllowed: 1,
	} {
		assert.Equal(t, want, count(t, m, "chargenet_http_validation_refusals_total", "error_code", code), code)
	}
	assert.Equal(t, 0.0, count(t, m, "chargenet_http_validation_refusals_total", "error_code", chargenet.CodeNotFound+"x"))
	for result, want := range map[string]float64{metrics.NotificationApplied: 1, metrics.NotificationStale: 1, metrics.NotificationUnknownChargebox: 1} {
		assert.Equal(t, want, count(t, m, "chargenet_status_notifications_total", "result", result), result)
	}
}

func TestRateLimitMetric(t *testing.T) {
	m := metrics.New()
	store, err := sqlite.Open(context.Background(), sqlitetest.NewFile(t))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	e, err := server.New(server.Config{Store: store, Keys: server.NewKeys(store, []string{devKey}),
		Cursors: chargenet.NewCursorCodec([]byte(testSecret)), Metrics: m, RateLimit: &server.RateLimit{Requests: 2, Window: time.Minute}})
	require.NoError(t, err)
	v := &env{t: t, e: e, store: store}
	for range 5 {
		v.do(http.MethodGet, "/emsp/v1/webhooks/event_types", "")
	}
	assert.Equal(t, 3.0, count(t, m, "chargenet_http_rate_limited_total"))
	assert.Equal(t, 3.0, count(t, m, "chargenet_http_requests_total", "operation", "listEventTypes", "code", "429"))
	assert.Equal(t, 2.0, count(t, m, "chargenet_http_requests_total", "operation", "listEventTypes", "code", "200"))
	problems, err := testutil.GatherAndLint(m.Registry())
	require.NoError(t, err)
	assert.Empty(t, problems, "the exposition follows Prometheus's naming conventions")
}

// TestReadyz checks /readyz's JSON: every check named, 200 when all pass, 503 with the
// failing ones named when one fails.
func TestReadyz(t *testing.T) {
	running := true
	v := newMetricsEnv(t, nil, func(s chargenet.Store) *health.Checker {
		return &health.Checker{Store: s, Dispatching: func() bool { return running }}
	})
	type report struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Checks  []struct {
			Name    string   `json:"name"`
			OK      bool     `json:"ok"`
			Detail  string   `json:"detail"`
			Pending *int64   `json:"pendingDeliveries"`
			Age     *float64 `json:"oldestPendingAgeSeconds"`
		} `json:"checks"`
	}
	rec := v.do(http.MethodGet, "/readyz", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	r := decode[report](t, rec)
	assert.Equal(t, "ready", r.Status)
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
		assert.True(t, c.OK, c.Name)
		assert.NotEmpty(t, c.Detail)
		if c.Name == health.CheckBacklog {
			require.NotNil(t, c.Pending)
			require.NotNil(t, c.Age)
			assert.Zero(t, *c.Pending)
		}
	}
	assert.Equal(t, []string{"database", "migrations", "dispatcher", "webhook_backlog"}, names)

	running = false
	rec = v.do(http.MethodGet, "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	r = decode[report](t, rec)
	assert.Equal(t, "not ready", r.Status)
	assert.Equal(t, chargenet.CodeUnavailable, r.Code)
	assert.Contains(t, r.Message, "dispatcher")
	assert.False(t, strings.Contains(r.Message, "database"), r.Message)
}
