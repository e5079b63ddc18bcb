// Package metrics holds the service's Prometheus metrics (github.com/prometheus/
// client_golang) in one registry: HTTP requests, the store's commits, read cache and
// connection pool, webhook deliveries and status ingestion, beside the Go runtime and
// process collectors. Every method of a nil *Metrics does nothing, so that callers need
// no check when metrics are off.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric of the service.
const Namespace = "chargenet"

// OperationUnknown is the operation label of requests outside the contract.
const OperationUnknown = "unknown"

// Metrics holds the collectors. Create it with New.
type Metrics struct {
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	inFlight    prometheus.Gauge
	rateLimited prometheus.Counter
	refused     *prometheus.CounterVec

	commitDuration *prometheus.HistogramVec
	commitWrites   *prometheus.HistogramVec

	attempts      *prometheus.CounterVec
	firstAttempt  prometheus.Histogram
	notifications *prometheus.CounterVec

	pushes  *prometheus.CounterVec
	pushLag prometheus.Histogram

	statuses [600]string // "100" ... "599", so that labelling a status allocates nothing
}

// latencyBuckets are the request and commit duration buckets, in seconds: 250 µs to 10 s.
var latencyBuckets = []float64{.00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns the metrics, registered with the Go runtime and process collectors in a
// registry of their own.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	for i := 100; i < len(m.statuses); i++ {
		m.statuses[i] = strconv.Itoa(i)
	}
	f := factory{m.reg}
	m.requests = f.counterVec("http_requests_total",
		"HTTP requests answered, by the contract's operationId (unknown outside the contract) and status code.", "operation", "code")
	m.duration = f.histogramVec("http_request_duration_seconds",
		"Time from receiving a request to the end of its answer, by operationId.", latencyBuckets, "operation")
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "http_requests_in_flight",
		Help: "HTTP requests being served."})
	m.rateLimited = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "http_rate_limited_total",
		Help: "Requests refused with 429 because their API key exceeded the rate limit."})
	m.refused = f.counterVec("http_validation_refusals_total",
		"Requests refused before reaching an operation (contract validation, authentication, rate limit), by the error body's code.", "error_code")
	m.commitDuration = f.histogramVec("store_commit_duration_seconds",
		"Duration of a store write transaction from its start to the end of its commit, by kind.", latencyBuckets, "operation")
	m.commitWrites = f.histogramVec("store_commit_writes",
		"Callers' writes carried by one store transaction (group commit size), by kind.", []float64{1, 2, 4, 8, 16, 32, 64, 128}, "operation")
	m.attempts = f.counterVec("webhook_attempts_total",
		"Webhook delivery attempts, by outcome (succeeded, failed, gone).", "outcome")
	m.firstAttempt = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace,
		Name:    "webhook_first_attempt_delay_seconds",
		Help:    "Time from the commit of a change to the first attempt to deliver its event to a webhook.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}})
	m.pushes = f.counterVec("ocpi_push_attempts_total",
		"OCPI push attempts to partners' Locations receivers, by outcome (succeeded, failed).", "outcome")
	m.pushLag = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace,
		Name:    "ocpi_push_lag_seconds",
		Help:    "Time from the commit of a change to a partner's acceptance of its OCPI push.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}})
	m.notifications = f.counterVec("status_notifications_total",
		"Charge-box status notifications ingested, by result (applied, stale, unknown_chargebox, invalid, failed).", "result")
	m.reg.MustRegister(m.inFlight, m.rateLimited, m.firstAttempt, m.pushLag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

type factory struct{ reg *prometheus.Registry }

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

// Registry returns the registry holding every collector.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Operation is what the HTTP middleware records for one operation.
type Operation struct {
	m        *Metrics
	requests *prometheus.CounterVec // curried with the operation
	duration prometheus.Observer
	// byStatus holds the counters of the statuses the service answers, looked up once,
	// so that counting a request is an index instead of a hash of its label values.
	// Read only after Operation returns.
	byStatus [600]prometheus.Counter
}

// Operation returns the collectors of operation id, to be looked up once at start-up
// and used for every request of the operation. It returns nil on a nil *Metrics.
func (m *Metrics) Operation(id string) *Operation {
	if m == nil {
		return nil
	}
	o := &Operation{m: m, requests: m.requests.MustCurryWith(prometheus.Labels{"operation": id}),
		duration: m.duration.WithLabelValues(id)}
	for _, code := range []int{200, 201, 204, 304, 400, 403, 404, 405, 409, 412, 413, 415, 429, 500, 503} {
		o.byStatus[code] = o.requests.WithLabelValues(m.status(code)) // present at 0 from the start
	}
	return o
}

// Begin counts a request in flight; call Done when it is answered.
func (o *Operation) Begin() {
	if o != nil {
		o.m.inFlight.Inc()
	}
}

// Done records a request answered with status after d.
func (o *Operation) Done(status int, d time.Duration) {
	if o == nil {
		return
	}
	o.m.inFlight.Dec()
	if status >= 0 && status < len(o.byStatus) && o.byStatus[status] != nil {
		o.byStatus[status].Inc()
	} else {
		o.requests.WithLabelValues(o.m.status(status)).Inc()
	}
	o.duration.Observe(d.Seconds())
}

func (m *Metrics) status(code int) string {
	if code >= 100 && code < len(m.statuses) {
		return m.statuses[code]
	}
	return strconv.Itoa(code)
}

// Refused counts a request refused before its operation ran, with the error body's
// code; chargenet.CodeRateLimited also counts a rate-limit refusal.
func (m *Metrics) Refused(code string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(code).Inc()
	if code == chargenet.CodeRateLimited {
		m.rateLimited.Inc()
	}
}

// Commit records a store transaction of kind op that took d and carried writes
// callers' writes: the function to set with the store's chargenet.Hooks.OnCommit.
func (m *Metrics) Commit(op string, d time.Duration, writes int) {
	if m == nil {
		return
	}
	m.commitDuration.WithLabelValues(op).Observe(d.Seconds())
	m.commitWrites.WithLabelValues(op).Observe(float64(writes))
}

// WebhookAttempt records one delivery attempt with its outcome; for a first attempt,
// sinceCommit is the time from the change's commit to the attempt.
func (m *Metrics) WebhookAttempt(outcome string, attempt int, sinceCommit time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(outcome).Inc()
	if attempt == 1 {
		m.firstAttempt.Observe(max(sinceCommit, 0).Seconds())
	}
}

// OCPIPush records one OCPI push attempt with its outcome; for a push the partner took,
// sinceCommit is the time from the change's commit to the partner's answer.
func (m *Metrics) OCPIPush(outcome string, sinceCommit time.Duration) {
	if m == nil {
		return
	}
	m.pushes.WithLabelValues(outcome).Inc()
	if outcome == chargenet.OutcomeSucceeded {
		m.pushLag.Observe(max(sinceCommit, 0).Seconds())
	}
}

// Results of a status notification.
const (
	NotificationApplied          = "applied"           // newer than what was applied: EVSEs changed
	NotificationStale            = "stale"             // not newer than what was applied: nothing changed
	NotificationUnknownChargebox = "unknown_chargebox" // the charge box has no EVSE
	NotificationInvalid          = "invalid"           // refused by a rule
	NotificationFailed           = "failed"            // the store failed
)

// StatusNotification counts a status notification with its result.
func (m *Metrics) StatusNotification(result string) {
	if m != nil {
		m.notifications.WithLabelValues(result).Inc()
	}
}

// Outbox is what ObserveStore reads of a store at each scrape.
type Outbox interface {
	// OutboxStats counts the pending webhook deliveries and OCPI pushes, and the
	// disabled webhooks (chargenet.Inspector).
	OutboxStats(ctx context.Context) (chargenet.OutboxStats, error)
}

// ObserveStore registers the collectors of the store's outbox, read at each scrape
// within timeout. (Its commits are recorded by Commit, set as its hook.)
func (m *Metrics) ObserveStore(store Outbox, timeout time.Duration) {
	if m != nil {
		m.reg.MustRegister(&outboxCollector{store: store, timeout: timeout, now: time.Now})
	}
}

// ObserveReadCache registers the counters of a store's read cache: stats returns how
// many reads it answered and how many it sent to the database so far (the SQLite
// store's ReadCacheStats).
func (m *Metrics) ObserveReadCache(stats func() (hits, misses uint64)) {
	if m == nil {
		return
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "store_read_cache_hits_total",
			Help: "Reads answered from the SQLite read cache."}, func() float64 { h, _ := stats(); return float64(h) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "store_read_cache_misses_total",
			Help: "Reads the SQLite read cache sent to the database."}, func() float64 { _, x := stats(); return float64(x) }))
}

// ObservePool registers the collector of a store's connection pool: stats returns a
// snapshot of it (the PostgreSQL store's PoolStats).
func (m *Metrics) ObservePool(stats func() chargenet.PoolStats) {
	if m != nil {
		m.reg.MustRegister(poolCollector{stats})
	}
}

var (
	poolMax = prometheus.NewDesc(Namespace+"_db_pool_max_connections",
		"Largest number of connections the PostgreSQL pool opens.", nil, nil)
	poolTotal = prometheus.NewDesc(Namespace+"_db_pool_connections",
		"Connections of the PostgreSQL pool, by state (acquired, idle, constructing).", []string{"state"}, nil)
	poolAcquires = prometheus.NewDesc(Namespace+"_db_pool_acquires_total",
		"Connections taken from the PostgreSQL pool.", nil, nil)
	poolEmptyAcquires = prometheus.NewDesc(Namespace+"_db_pool_empty_acquires_total",
		"Connections taken from the PostgreSQL pool that had to wait because none was idle.", nil, nil)
	poolAcquireSeconds = prometheus.NewDesc(Namespace+"_db_pool_acquire_wait_seconds_total",
		"Time spent waiting for a connection from the PostgreSQL pool.", nil, nil)
)

// poolCollector reads the pool's statistics at each scrape.
type poolCollector struct{ stats func() chargenet.PoolStats }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolMax
	ch <- poolTotal
	ch <- poolAcquires
	ch <- poolEmptyAcquires
	ch <- poolAcquireSeconds
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.Max))
	ch <- prometheus.MustNewConstMetric(poolTotal, prometheus.GaugeValue, float64(s.Acquired), "acquired")
	ch <- prometheus.MustNewConstMetric(poolTotal, prometheus.GaugeValue, float64(s.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(poolTotal, prometheus.GaugeValue, float64(s.Constructing), "constructing")
	ch <- prometheus.MustNewConstMetric(poolAcquires, prometheus.CounterValue, float64(s.AcquireCount))
	ch <- prometheus.MustNewConstMetric(poolEmptyAcquires, prometheus.CounterValue, float64(s.EmptyAcquireCount))
	ch <- prometheus.MustNewConstMetric(poolAcquireSeconds, prometheus.CounterValue, s.AcquireDuration.Seconds())
}

var (
	outboxPending = prometheus.NewDesc(Namespace+"_webhook_pending_deliveries",
		"Webhook deliveries waiting in the outbox for enabled webhooks (due or scheduled for a retry).", nil, nil)
	outboxOldest = prometheus.NewDesc(Namespace+"_webhook_oldest_pending_age_seconds",
		"Age of the change behind the oldest pending webhook delivery; 0 when none is pending.", nil, nil)
	webhooksDisabled = prometheus.NewDesc(Namespace+"_webhook_disabled_subscriptions",
		"Webhooks that are disabled, by their owner or after a receiver answered 410 Gone.", nil, nil)
	pushesPending = prometheus.NewDesc(Namespace+"_ocpi_pending_pushes",
		"OCPI pushes waiting in the outbox for partners' Locations receivers (due or scheduled for a retry).", nil, nil)
	pushOldest = prometheus.NewDesc(Namespace+"_ocpi_oldest_pending_push_age_seconds",
		"Age of the change behind the oldest pending OCPI push; 0 when none is pending.", nil, nil)
	outboxUp = prometheus.NewDesc(Namespace+"_webhook_outbox_stats_up",
		"1 when the outbox could be read for this scrape, 0 when the store failed.", nil, nil)
)

// outboxCollector reads the outbox at each scrape.
type outboxCollector struct {
	store   Outbox
	timeout time.Duration
	now     func() time.Time
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxPending
	ch <- outboxOldest
	ch <- webhooksDisabled
	ch <- pushesPending
	ch <- pushOldest
	ch <- outboxUp
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s, err := c.store.OutboxStats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(outboxUp, prometheus.GaugeValue, 0)
		return
	}
	age := 0.0
	if s.Pending > 0 && !s.Oldest.IsZero() {
		age = max(c.now().Sub(s.Oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(outboxUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(outboxPending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(outboxOldest, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(webhooksDisabled, prometheus.GaugeValue, float64(s.DisabledWebhooks))
	pushAge := 0.0
	if s.PendingPushes > 0 && !s.OldestPush.IsZero() {
		pushAge = max(c.now().Sub(s.OldestPush).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(pushesPending, prometheus.GaugeValue, float64(s.PendingPushes))
	ch <- prometheus.MustNewConstMetric(pushOldest, prometheus.GaugeValue, pushAge)
}

var (
	ready = prometheus.NewDesc(Namespace+"_ready",
		"1 when every readiness check passes (GET /readyz answers 200), 0 otherwise.", nil, nil)
	readyCheck = prometheus.NewDesc(Namespace+"_readiness_check_ok",
		"1 when the readiness check passes, 0 when it fails, by check.", []string{"check"}, nil)
)

// ObserveReadiness registers chargenet_ready and chargenet_readiness_check_ok, computed at
// each scrape by run (bounded by timeout), which returns each check's name and result
// in a stable order.
func (m *Metrics) ObserveReadiness(run func(ctx context.Context) (names []string, ok []bool), timeout time.Duration) {
	if m != nil {
		m.reg.MustRegister(readinessCollector{run, timeout})
	}
}

type readinessCollector struct {
	run     func(ctx context.Context) ([]string, []bool)
	timeout time.Duration
}

func (c readinessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ready
	ch <- readyCheck
}

func (c readinessCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	names, ok := c.run(ctx)
	all := 1.0
	for i, name := range names {
		v := 0.0
		if ok[i] {
			v = 1
		} else {
			all = 0
		}
		ch <- prometheus.MustNewConstMetric(readyCheck, prometheus.GaugeValue, v, name)
	}
	ch <- prometheus.MustNewConstMetric(ready, prometheus.GaugeValue, all)
}
