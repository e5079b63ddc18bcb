package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/client"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/apitest"
	"github.com/chargenet/chargenet/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---------------------------------------------------------------------------------
// Harness

// newServer starts the real service in-process (see startDemoServer) for one test.
func newServer(t *testing.T, cfg serverConfig) *demoServer {
	t.Helper()
	s, err := startDemoServer(cfg)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// newClient returns a client of baseURL with demoKey whose every exchange with the
// service is checked against the contract. Later options override earlier ones.
func newClient(t *testing.T, baseURL string, opts ...client.Option) *client.Client {
	t.Helper()
	all := append([]client.Option{
		client.WithAPIKey(demoKey),
		client.WithHTTPClient(&http.Client{Transport: apitest.Transport(t, nil)}),
	}, opts...)
	c, err := client.New(baseURL, all...)
	require.NoError(t, err)
	return c
}

// step answers one request in place of the service (or around it, through next).
type step func(req *http.Request, next http.RoundTripper) (*http.Response, error)

// recorder sits between the client and the contract-checking transport to the real
// service: it records every request and answers the i-th one with steps[i] when that is
// present and not nil, forwarding it otherwise.
type recorder struct {
	next  http.RoundTripper
	steps []step

	mu       sync.Mutex
	requests []*http.Request // clones without bodies
	answers  []http.Header   // headers of the answers the client got (nil for errors)
}

func newRecorder(t *testing.T, steps ...step) *recorder {
	return &recorder{next: apitest.Transport(t, nil), steps: steps}
}

// option makes a client send through r.
func (r *recorder) option() client.Option {
	return client.WithHTTPClient(&http.Client{Transport: r})
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	clone := req.Clone(context.Background())
	clone.Body = nil
	r.mu.Lock()
	i := len(r.requests)
	r.requests = append(r.requests, clone)
	r.answers = append(r.answers, nil)
	r.mu.Unlock()
	var res *http.Response
	var err error
	if i < len(r.steps) && r.steps[i] != nil {
		res, err = r.steps[i](req, r.next)
	} else {
		res, err = r.next.RoundTrip(req)
	}
	if err == nil {
		r.mu.Lock()
		r.answers[i] = res.Header.Clone()
		r.mu.Unlock()
	}
	return res, err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

func (r *recorder) request(i int) *http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[i]
}

func (r *recorder) answer(i int) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answers[i]
}

// respond answers with status, body and the given header name/value pairs; a JSON
// Content-Type and an X-Request-Id are set unless the pairs replace them.
func respond(status int, body string, header ...string) step {
	return func(req *http.Request, _ http.RoundTripper) (*http.Response, error) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"synthetic-request"}}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{
			StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req,
		}, nil
	}
}

// errorBody is a contract Error body.
func errorBody(code string) string {
	return fmt.Sprintf(`{"code":%q,"message":"synthetic %s","requestId":"synthetic-request"}`, code, code)
}

// failWith answers with status and a contract Error body of code.
func failWith(status int, code string, header ...string) step {
	return respond(status, errorBody(code), header...)
}

// netError fails the request as a dropped connection would, before it reaches the service.
func netError(req *http.Request, _ http.RoundTripper) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, errors.New("injected: connection reset by peer")
}

// loseAnswer forwards the request to the service but drops its answer.
func loseAnswer(req *http.Request, next http.RoundTripper) (*http.Response, error) {
	res, err := next.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
	return nil, errors.New("injected: connection reset after the request was sent")
}

func repeat(n int, s step) []step {
	steps := make([]step, n)
	for i := range steps {
		steps[i] = s
	}
	return steps
}

// sleeps records the waits between attempts instead of sleeping. onSleep, if set, runs
// for each wait (for example to move a fake clock).
type sleeps struct {
	mu      sync.Mutex
	waits   []time.Duration
	onSleep func(time.Duration)
}

func (s *sleeps) option() client.Option { return client.WithSleep(s.sleep) }

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	if s.onSleep != nil {
		s.onSleep(d)
	}
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// exactJitter makes the backoff deterministic: always the cap.
var exactJitter = client.WithJitter(func(d time.Duration) time.Duration { return d })

// flakyStore fails the next Fail calls of EVSE and UpdateConnector with
// chargenet.ErrUnavailable, as a store that lost its database does, and counts calls.
type flakyStore struct {
	chargenet.Store
	Fail  atomic.Int32
	Calls atomic.Int32
}

func (s *flakyStore) fail() error {
	s.Calls.Add(1)
	if s.Fail.Add(-1) >= 0 {
		return fmt.Errorf("flaky store: %w", chargenet.ErrUnavailable)
	}
	return nil
}

func (s *flakyStore) EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	if err := s.fail(); err != nil {
		return nil, 0, err
	}
	return s.Store.EVSEDoc(ctx, uid)
}

func (s *flakyStore) UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch, actor string, now time.Time) (*chargenet.EVSE, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Store.UpdateConnector(ctx, uid, connectorID, patch, ifMatch, actor, now)
}

func newFlakyServer(t *testing.T) (*demoServer, *flakyStore) {
	flaky := &flakyStore{}
	srv := newServer(t, serverConfig{wrap: func(s chargenet.Store) chargenet.Store {
		flaky.Store = s
		return flaky
	}})
	return srv, flaky
}

// wantEVSE is the EVSE uid as the store holds it, in the client's types.
func wantEVSE(t *testing.T, store chargenet.Store, uid int64) client.EVSE {
	t.Helper()
	e, err := store.EVSE(context.Background(), uid)
	require.NoError(t, err)
	out := client.EVSE{
		UID: e.UID, EVSEID: e.EvseID, ChargeboxID: e.ChargeboxID, LocationID: e.LocationID,
		Status: client.EVSEStatus(e.Status), LastUpdated: e.LastUpdated.UTC(), Version: e.Version, Connectors: []client.Connector{},
	}
	for _, c := range e.Connectors {
		cc := client.Connector{
			ID: c.ID, Standard: client.Standard(c.Standard), Format: client.Format(c.Format),
			PowerType: client.PowerType(c.PowerType), MaxElectricPower: c.MaxElectricPower,
			MaxAmperage: c.MaxAmperage, MaxVoltage: c.MaxVoltage, TariffIDs: c.TariffIDs,
		}
		if cc.TariffIDs == nil {
			cc.TariffIDs = []string{}
		}
		if c.Error != nil {
			cc.Error = &client.ConnectorError{Code: client.ConnectorErrorCode(c.Error.Code), Info: c.Error.Info, VendorErrorCode: c.Error.VendorErrorCode}
		}
		if c.DeletedAt != nil {
			d := c.DeletedAt.UTC()
			cc.DeletedAt = &d
		}
		out.Connectors = append(out.Connectors, cc)
	}
	return out
}

// wantLocation is the location id as the store holds it, in the client's types.
func wantLocation(t *testing.T, store chargenet.Store, id string) client.Location {
	t.Helper()
	l, err := store.Location(context.Background(), id)
	require.NoError(t, err)
	out := client.Location{
		ID: l.ID, Name: l.Name, Address: l.Address, City: l.City, PostalCode: l.PostalCode,
		Country: l.Country, Latitude: l.Latitude, Longitude: l.Longitude, TimeZone: l.TimeZone,
		EVSEUIDs: l.EvseUIDs, LastUpdated: l.LastUpdated.UTC(), Version: l.Version,
	}
	if l.DeletedAt != nil {
		d := l.DeletedAt.UTC()
		out.DeletedAt = &d
	}
	if out.EVSEUIDs == nil {
		out.EVSEUIDs = []int64{}
	}
	return out
}

// storedKey stores an API key of srv named name with scopes (see demoServer.newKey) and
// returns its secret.
func storedKey(t *testing.T, srv *demoServer, name string, scopes ...string) string {
	t.Helper()
	secret, err := srv.newKey(name, scopes...)
	require.NoError(t, err)
	return secret
}

func demoLocationIDs() []string {
	ids := make([]string, 120)
	for i := range ids {
		ids[i] = fmt.Sprintf("LOC-%04d", i+1)
	}
	return ids
}

func demoEVSEUIDs() []int64 {
	uids := make([]int64, 40)
	for i := range uids {
		uids[i] = int64(1001 + i)
	}
	return uids
}

var sentinels = []error{
	client.ErrInvalid, client.ErrForbidden, client.ErrNotFound, client.ErrConflict,
	client.ErrPreconditionFailed, client.ErrIdempotencyKeyReused, client.ErrRateLimited, client.ErrUnavailable,
}

// requireAPIError checks that err is an *Error with status and code that matches
// sentinel and no other sentinel, and returns it.
func requireAPIError(t *testing.T, err error, sentinel error, status int, code string) *client.Error {
	t.Helper()
	require.Error(t, err)
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, status, apiErr.StatusCode, err.Error())
	assert.Equal(t, code, apiErr.Code, err.Error())
	for _, s := range sentinels {
		assert.Equal(t, s == sentinel, errors.Is(err, s), "errors.Is(%v, %v)", err, s)
	}
	return apiErr
}

// ---------------------------------------------------------------------------------
// Construction

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		baseURL string
		opts    []client.Option
		wantErr string
	}{
		{"plain", "http://127.0.0.1:8080", nil, ""},
		{"trailing slash", "https://api.example.com/", nil, ""},
		{"path prefix", "https://example.com/charging", nil, ""},
		{"empty", "", nil, "want an http or https URL"},
		{"relative", "/v2/evses", nil, "want an http or https URL"},
		{"other scheme", "ftp://example.com", nil, "want an http or https URL"},
		{"no host", "http://", nil, "has no host"},
		{"query", "http://example.com?x=1", nil, "want no query"},
		{"user info", "http://u:p@example.com", nil, "want no query, fragment or user info"},
		{"unparsable", "http://[::1", nil, "base URL"},
		{"nil http client", "http://example.com", []client.Option{client.WithHTTPClient(nil)}, "nil *http.Client"},
		{"negative attempts", "http://example.com", []client.Option{client.WithRetry(client.RetryPolicy{MaxAttempts: -1})}, "negative"},
		{"negative delay", "http://example.com", []client.Option{client.WithRetry(client.RetryPolicy{BaseDelay: -time.Second})}, "negative"},
		{"all options", "http://example.com", []client.Option{
			client.WithAPIKey("k"), client.WithUserAgent("app/1"), client.WithHTTPClient(&http.Client{}),
			client.WithRetry(client.RetryPolicy{MaxAttempts: 1}),
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(tt.baseURL, tt.opts...)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.NotNil(t, c)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Nil(t, c)
		})
	}
}

func TestAPIVersionMatchesContract(t *testing.T) {
	t.Parallel()
	doc, err := gen.GetSpec()
	require.NoError(t, err)
	assert.Equal(t, doc.Info.Version, client.APIVersion)
}

func TestBaseURLWithPathPrefix(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	proxy := httptest.NewServer(http.StripPrefix("/charging", httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)

	rec := newRecorder(t)
	rec.next = http.DefaultTransport // the contract checker does not know the prefix
	c := newClient(t, proxy.URL+"/charging/", rec.option())
	e, _, err := c.EVSE(context.Background(), 1001)
	require.NoError(t, err)
	assert.Equal(t, int64(1001), e.UID)
	assert.Equal(t, "/charging/v2/evses/1001", rec.request(0).URL.Path)
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	tests := []struct {
		name, suffix, want string
	}{
		{"default", "", "chargenet-go/" + client.Version},
		{"with suffix", "fleet-sync/1.4", "chargenet-go/" + client.Version + " fleet-sync/1.4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Two synthetic 503s, so the headers are checked on retries too.
			rec := newRecorder(t, failWith(503, "unavailable"), failWith(503, "unavailable"))
			var s sleeps
			c := newClient(t, srv.URL, rec.option(), s.option(), client.WithUserAgent(tt.suffix))
			_, err := c.EventTypes(context.Background())
			require.NoError(t, err)
			require.Equal(t, 3, rec.count())
			for i := range rec.count() {
				h := rec.request(i).Header
				assert.Equal(t, tt.want, h.Get("User-Agent"))
				assert.Equal(t, "Bearer "+demoKey, h.Get("Authorization"))
				assert.Equal(t, "application/json", h.Get("Accept"))
			}
		})
	}
	assert.Regexp(t, `^[0-9]+\.[0-9]+\.[0-9]+$`, client.Version)
}

// ---------------------------------------------------------------------------------
// Operations

func TestEVSE(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)
	for _, uid := range []int64{1001, 1002, 1004, 1040} {
		t.Run(strconv.FormatInt(uid, 10), func(t *testing.T) {
			e, etag, err := c.EVSE(context.Background(), uid)
			require.NoError(t, err)
			assert.Equal(t, wantEVSE(t, srv.Store, uid), *e)
			assert.NotEmpty(t, etag)
		})
	}

	e, _, err := c.EVSE(context.Background(), 1004)
	require.NoError(t, err)
	require.Len(t, e.Connectors, 4)
	assert.True(t, e.Connector(4).Deleted())
	assert.False(t, e.Connector(1).Deleted())
	assert.Nil(t, e.Connector(5))
}

func TestLocation(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)
	for _, id := range []string{"LOC-0001", "LOC-0020", "LOC-0120"} {
		t.Run(id, func(t *testing.T) {
			l, err := c.Location(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, wantLocation(t, srv.Store, id), *l)
		})
	}
	l, err := c.Location(context.Background(), "LOC-0001")
	require.NoError(t, err)
	assert.Equal(t, []int64{1001, 1002}, l.EVSEUIDs)
}

func TestEventTypes(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)
	got, err := c.EventTypes(context.Background())
	require.NoError(t, err)
	domain, err := chargenet.EventTypes()
	require.NoError(t, err)
	want := make([]client.EventType, len(domain))
	for i, d := range domain {
		want[i] = client.EventType{Type: d.Type, APIVersions: d.APIVersions, Latest: d.Latest}
	}
	assert.Equal(t, want, got)
	assert.NotEmpty(t, got)
}

func TestUpdateConnector(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)

	before, etag0, err := c.EVSE(ctx, 1002)
	require.NoError(t, err)
	conn := *before.Connector(1)

	// A conditional update with the current ETag applies, and only to the fields set.
	after, etag1, err := c.UpdateConnector(ctx, 1002, 1, client.ConnectorPatch{MaxElectricPower: new(42.5)}, client.IfMatch(etag0))
	require.NoError(t, err)
	assert.NotEmpty(t, etag1)
	assert.NotEqual(t, etag0, etag1)
	want := conn
	want.MaxElectricPower = 42.5
	assert.Equal(t, want, *after.Connector(1))

	// EVSE shows the change and the same ETag.
	read, etagRead, err := c.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, *after, *read)
	assert.Equal(t, etag1, etagRead)
	assert.Equal(t, wantEVSE(t, srv.Store, 1002), *read)

	// The stale ETag is refused and changes nothing.
	_, _, err = c.UpdateConnector(ctx, 1002, 1, client.ConnectorPatch{MaxElectricPower: new(10.0)}, client.IfMatch(etag0))
	apiErr := requireAPIError(t, err, client.ErrPreconditionFailed, http.StatusPreconditionFailed, client.CodePreconditionFailed)
	assert.Equal(t, "If-Match", apiErr.Param)
	unchanged, etagUnchanged, err := c.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, *read, *unchanged)
	assert.Equal(t, etag1, etagUnchanged)

	// "*" matches any ETag; an update without IfMatch is unconditional.
	_, etag2, err := c.UpdateConnector(ctx, 1002, 1, client.ConnectorPatch{MaxAmperage: new(100.0)}, client.IfMatch("*"))
	require.NoError(t, err)
	after, etag3, err := c.UpdateConnector(ctx, 1002, 1, client.ConnectorPatch{MaxVoltage: new(800.0)})
	require.NoError(t, err)
	assert.NotEqual(t, etag2, etag3)
	got := after.Connector(1)
	assert.Equal(t, []float64{42.5, 100, 800}, []float64{got.MaxElectricPower, got.MaxAmperage, got.MaxVoltage})

	// Standard and format together.
	after, _, err = c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{Standard: new(client.StandardIEC62196T1), Format: new(client.FormatCable)})
	require.NoError(t, err)
	assert.Equal(t, client.StandardIEC62196T1, after.Connector(1).Standard)
	assert.Equal(t, client.FormatCable, after.Connector(1).Format)
}

func TestUpdateConnectorEmptyIfMatchSendsNothing(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	rec := newRecorder(t)
	c := newClient(t, srv.URL, rec.option())
	_, _, err := c.UpdateConnector(context.Background(), 1001, 1, client.ConnectorPatch{MaxVoltage: new(300.0)}, client.IfMatch(""))
	require.ErrorIs(t, err, client.ErrInvalid)
	assert.Equal(t, 0, rec.count())
}

func TestLocationEmptyIDSendsNothing(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	c := newClient(t, "http://127.0.0.1:1", rec.option())
	_, err := c.Location(context.Background(), "")
	require.ErrorIs(t, err, client.ErrInvalid)
	var apiErr *client.Error
	assert.False(t, errors.As(err, &apiErr), "no answer of the service")
	assert.Equal(t, 0, rec.count())
}

// ---------------------------------------------------------------------------------
// Pagination

func TestLocationsIterator(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	for _, size := range []int{1, 7, 100, 0} {
		t.Run(fmt.Sprintf("page size %d", size), func(t *testing.T) {
			rec := newRecorder(t)
			c := newClient(t, srv.URL, rec.option())
			var ids []string
			for l, err := range c.Locations(context.Background(), client.ListOptions{PageSize: size}) {
				require.NoError(t, err)
				ids = append(ids, l.ID)
				if l.ID == "LOC-0001" || l.ID == "LOC-0120" {
					assert.Equal(t, wantLocation(t, srv.Store, l.ID), l)
				}
			}
			assert.Equal(t, demoLocationIDs(), ids) // every one, once, in order
			limit := size
			if limit == 0 {
				limit = client.MaxPageSize
			}
			assert.Equal(t, (120+limit-1)/limit, rec.count())
			assert.Equal(t, strconv.Itoa(limit), rec.request(0).URL.Query().Get("limit"))
			assert.Empty(t, rec.request(0).URL.Query().Get("cursor"))
			if rec.count() > 1 {
				assert.NotEmpty(t, rec.request(1).URL.Query().Get("cursor"))
			}
		})
	}
}

func TestEVSEsIterator(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	for _, size := range []int{1, 7, 100} {
		t.Run(fmt.Sprintf("page size %d", size), func(t *testing.T) {
			c := newClient(t, srv.URL)
			var uids []int64
			for e, err := range c.EVSEs(context.Background(), client.ListOptions{PageSize: size}) {
				require.NoError(t, err)
				uids = append(uids, e.UID)
				assert.Equal(t, wantEVSE(t, srv.Store, e.UID), e)
			}
			assert.Equal(t, demoEVSEUIDs(), uids)
		})
	}
}

func TestIteratorBreakStopsFetching(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	tests := []struct {
		name         string
		take         int
		wantRequests int
	}{
		{"within the first page", 1, 1},
		{"at the end of the first page", 5, 1},
		{"within the second page", 7, 2},
	}
	for _, tt := range tests {
		t.Run("locations "+tt.name, func(t *testing.T) {
			rec := newRecorder(t)
			c := newClient(t, srv.URL, rec.option())
			n := 0
			for _, err := range c.Locations(context.Background(), client.ListOptions{PageSize: 5}) {
				require.NoError(t, err)
				if n++; n == tt.take {
					break
				}
			}
			assert.Equal(t, tt.take, n)
			assert.Equal(t, tt.wantRequests, rec.count())
		})
		t.Run("EVSEs "+tt.name, func(t *testing.T) {
			rec := newRecorder(t)
			c := newClient(t, srv.URL, rec.option())
			n := 0
			for _, err := range c.EVSEs(context.Background(), client.ListOptions{PageSize: 5}) {
				require.NoError(t, err)
				if n++; n == tt.take {
					break
				}
			}
			assert.Equal(t, tt.wantRequests, rec.count())
		})
	}
}

func TestIteratorErrors(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	ctx := context.Background()

	t.Run("rejected key", func(t *testing.T) {
		c := newClient(t, srv.URL, client.WithAPIKey("not-a-known-key-0123456789"))
		n := 0
		for l, err := range c.Locations(ctx, client.ListOptions{}) {
			n++
			assert.Equal(t, client.Location{}, l)
			_ = requireAPIError(t, err, client.ErrForbidden, 403, client.CodeUnauthorized)
		}
		assert.Equal(t, 1, n, "the error is yielded once")
	})
	t.Run("page size out of range", func(t *testing.T) {
		c := newClient(t, srv.URL)
		for _, err := range c.EVSEs(ctx, client.ListOptions{PageSize: client.MaxPageSize + 1}) {
			apiErr := requireAPIError(t, err, client.ErrInvalid, 400, client.CodeInvalidParameter)
			assert.Equal(t, "limit", apiErr.Param)
		}
	})
	t.Run("error on a later page", func(t *testing.T) {
		rec := newRecorder(t, nil, failWith(500, client.CodeInternalError))
		c := newClient(t, srv.URL, rec.option())
		var ids []string
		var errs []error
		for l, err := range c.Locations(ctx, client.ListOptions{PageSize: 3}) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ids = append(ids, l.ID)
		}
		assert.Equal(t, demoLocationIDs()[:3], ids)
		require.Len(t, errs, 1)
		_ = requireAPIError(t, errs[0], nil, 500, client.CodeInternalError)
		assert.Equal(t, 2, rec.count(), "500 is not retried")
	})
	t.Run("has_more without next_cursor", func(t *testing.T) {
		page := `{"data":[],"pagination":{"next_cursor":null,"previous_cursor":null,"has_more":true}}`
		rec := newRecorder(t, respond(200, page))
		c := newClient(t, srv.URL, rec.option())
		n := 0
		for _, err := range c.Locations(ctx, client.ListOptions{}) {
			n++
			require.Error(t, err)
			assert.Contains(t, err.Error(), "no new next_cursor")
		}
		assert.Equal(t, 1, n)
		assert.Equal(t, 1, rec.count())
	})
}

func TestLocationsPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)
	ids := demoLocationIDs()

	first, err := c.LocationsPage(ctx, client.PageRequest{Limit: 7})
	require.NoError(t, err)
	assert.Equal(t, ids[:7], locationIDs(first.Items))
	assert.True(t, first.HasMore)
	assert.NotEmpty(t, first.NextCursor)
	assert.Empty(t, first.PreviousCursor)
	assert.Equal(t, wantLocation(t, srv.Store, "LOC-0001"), first.Items[0])

	second, err := c.LocationsPage(ctx, client.PageRequest{Cursor: first.NextCursor, Limit: 7})
	require.NoError(t, err)
	assert.Equal(t, ids[7:14], locationIDs(second.Items))
	assert.NotEmpty(t, second.PreviousCursor)

	back, err := c.LocationsPage(ctx, client.PageRequest{Cursor: second.PreviousCursor, Limit: 7})
	require.NoError(t, err)
	assert.Equal(t, ids[:7], locationIDs(back.Items))

	defaultSize, err := c.LocationsPage(ctx, client.PageRequest{})
	require.NoError(t, err)
	assert.Len(t, defaultSize.Items, 25)

	full, err := c.LocationsPage(ctx, client.PageRequest{Limit: 100})
	require.NoError(t, err)
	last, err := c.LocationsPage(ctx, client.PageRequest{Cursor: full.NextCursor, Limit: 100})
	require.NoError(t, err)
	assert.Equal(t, ids[100:], locationIDs(last.Items))
	assert.False(t, last.HasMore)
	assert.Empty(t, last.NextCursor)
	assert.NotEmpty(t, last.PreviousCursor)
}

func TestEVSEsPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)

	first, err := c.EVSEsPage(ctx, client.PageRequest{Limit: 30})
	require.NoError(t, err)
	assert.Equal(t, demoEVSEUIDs()[:30], evseUIDs(first.Items))
	assert.True(t, first.HasMore)
	assert.Empty(t, first.PreviousCursor)

	second, err := c.EVSEsPage(ctx, client.PageRequest{Cursor: first.NextCursor, Limit: 30})
	require.NoError(t, err)
	assert.Equal(t, demoEVSEUIDs()[30:], evseUIDs(second.Items))
	assert.False(t, second.HasMore)
	assert.Empty(t, second.NextCursor)
	assert.Equal(t, wantEVSE(t, srv.Store, 1040), second.Items[9])

	back, err := c.EVSEsPage(ctx, client.PageRequest{Cursor: second.PreviousCursor, Limit: 30})
	require.NoError(t, err)
	assert.Equal(t, evseUIDs(first.Items), evseUIDs(back.Items))
}

func TestPageRequestErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)
	evses, err := c.EVSEsPage(ctx, client.PageRequest{Limit: 1})
	require.NoError(t, err)
	locations, err := c.LocationsPage(ctx, client.PageRequest{Limit: 1})
	require.NoError(t, err)

	tests := []struct {
		name      string
		call      func() error
		code      string
		wantParam string
	}{
		{"locations limit too large", func() error { _, err := c.LocationsPage(ctx, client.PageRequest{Limit: 101}); return err }, client.CodeInvalidParameter, "limit"},
		{"locations limit negative", func() error { _, err := c.LocationsPage(ctx, client.PageRequest{Limit: -1}); return err }, client.CodeInvalidParameter, "limit"},
		{"EVSEs limit too large", func() error { _, err := c.EVSEsPage(ctx, client.PageRequest{Limit: 101}); return err }, client.CodeInvalidParameter, "limit"},
		{"malformed cursor", func() error { _, err := c.LocationsPage(ctx, client.PageRequest{Cursor: "garbage"}); return err }, client.CodeInvalidCursor, "cursor"},
		{"cursor of the other list", func() error {
			_, err := c.LocationsPage(ctx, client.PageRequest{Cursor: evses.NextCursor})
			return err
		}, client.CodeInvalidCursor, "cursor"},
		{"cursor of the other list, reversed", func() error {
			_, err := c.EVSEsPage(ctx, client.PageRequest{Cursor: locations.NextCursor})
			return err
		}, client.CodeInvalidCursor, "cursor"},
		{"altered cursor", func() error {
			_, err := c.LocationsPage(ctx, client.PageRequest{Cursor: alter(locations.NextCursor)})
			return err
		}, client.CodeInvalidCursor, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiErr := requireAPIError(t, tt.call(), client.ErrInvalid, 400, tt.code)
			assert.Equal(t, tt.wantParam, apiErr.Param)
		})
	}
}

// alter changes the first character of a cursor to another valid one.
func alter(cursor string) string {
	if cursor[0] == 'A' {
		return "B" + cursor[1:]
	}
	return "A" + cursor[1:]
}

func locationIDs(ls []client.Location) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ID
	}
	return ids
}

func evseUIDs(es []client.EVSE) []int64 {
	uids := make([]int64, len(es))
	for i, e := range es {
		uids[i] = e.UID
	}
	return uids
}

// ---------------------------------------------------------------------------------
// Errors

func TestErrorsFromTheService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	_, staleETag, err := newClient(t, srv.URL).EVSE(ctx, 1003)
	require.NoError(t, err)
	_, _, err = newClient(t, srv.URL).UpdateConnector(ctx, 1003, 1, client.ConnectorPatch{MaxVoltage: new(399.0)})
	require.NoError(t, err)

	tests := []struct {
		name      string
		key       string
		call      func(c *client.Client) error
		sentinel  error
		status    int
		code      string
		wantParam string
	}{
		{"unknown EVSE", demoKey, func(c *client.Client) error { _, _, err := c.EVSE(ctx, 9999); return err },
			client.ErrNotFound, 404, client.CodeNotFound, "uid"},
		{"uid not positive", demoKey, func(c *client.Client) error { _, _, err := c.EVSE(ctx, 0); return err },
			client.ErrInvalid, 400, client.CodeInvalidParameter, "uid"},
		{"unknown location", demoKey, func(c *client.Client) error { _, err := c.Location(ctx, "LOC-9999"); return err },
			client.ErrNotFound, 404, client.CodeNotFound, "id"},
		{"malformed location id", demoKey, func(c *client.Client) error { _, err := c.Location(ctx, "no spaces"); return err },
			client.ErrInvalid, 400, client.CodeInvalidParameter, "id"},
		{"unknown connector", demoKey, func(c *client.Client) error {
			_, _, err := c.UpdateConnector(ctx, 1001, 9, client.ConnectorPatch{MaxVoltage: new(300.0)})
			return err
		}, client.ErrNotFound, 404, client.CodeNotFound, "connectorId"},
		{"unknown key", "not-a-known-key-0123456789", func(c *client.Client) error { _, _, err := c.EVSE(ctx, 1001); return err },
			client.ErrForbidden, 403, client.CodeUnauthorized, "Authorization"},
		{"no key", "", func(c *client.Client) error { _, err := c.EventTypes(ctx); return err },
			client.ErrForbidden, 403, client.CodeUnauthorized, "Authorization"},
		{"value out of range", demoKey, func(c *client.Client) error {
			_, _, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxVoltage: new(2000.0)})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, "maxVoltage"},
		{"connector rule broken", demoKey, func(c *client.Client) error {
			_, _, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{Standard: new(client.StandardChademo)})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidConnector, "standard"},
		{"empty patch", demoKey, func(c *client.Client) error {
			_, _, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidBody, ""},
		{"deleted connector", demoKey, func(c *client.Client) error {
			_, _, err := c.UpdateConnector(ctx, 1004, 4, client.ConnectorPatch{MaxVoltage: new(300.0)})
			return err
		}, client.ErrConflict, 409, client.CodeConnectorDeleted, "connectorId"},
		{"stale ETag", demoKey, func(c *client.Client) error {
			_, _, err := c.UpdateConnector(ctx, 1003, 1, client.ConnectorPatch{MaxVoltage: new(300.0)}, client.IfMatch(staleETag))
			return err
		}, client.ErrPreconditionFailed, 412, client.CodePreconditionFailed, "If-Match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t)
			c := newClient(t, srv.URL, rec.option(), client.WithAPIKey(tt.key))
			err := tt.call(c)
			apiErr := requireAPIError(t, err, tt.sentinel, tt.status, tt.code)
			assert.Equal(t, tt.wantParam, apiErr.Param)
			assert.NotEmpty(t, apiErr.Message)
			require.Equal(t, 1, rec.count(), "client errors are not retried")
			assert.Equal(t, rec.answer(0).Get("X-Request-Id"), apiErr.RequestID)
			assert.NotEmpty(t, apiErr.RequestID)
			assert.Contains(t, err.Error(), apiErr.Message)
			assert.Contains(t, err.Error(), apiErr.RequestID)
			assert.Contains(t, err.Error(), rec.request(0).Method+" "+rec.request(0).URL.EscapedPath())
		})
	}
}

func TestRateLimitedByTheService(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{rateLimit: &server.RateLimit{Requests: 1, Window: time.Minute}})
	c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	_, err := c.EventTypes(context.Background())
	require.NoError(t, err)
	_, err = c.EventTypes(context.Background())
	apiErr := requireAPIError(t, err, client.ErrRateLimited, 429, client.CodeRateLimited)
	assert.Greater(t, apiErr.RetryAfter, time.Duration(0))
	assert.LessOrEqual(t, apiErr.RetryAfter, time.Minute)
}

func TestUnavailableService(t *testing.T) {
	t.Parallel()
	srv, flaky := newFlakyServer(t)
	flaky.Fail.Store(1)
	c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	_, _, err := c.EVSE(context.Background(), 1001)
	_ = requireAPIError(t, err, client.ErrUnavailable, 503, client.CodeUnavailable)
}

func TestErrorWithoutContractBody(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 500)
	tests := []struct {
		name        string
		answer      step
		status      int
		sentinel    error
		wantMessage string
		wantID      string
	}{
		{"HTML from a proxy", respond(502, "<html>\n<body>Bad   Gateway</body></html>", "Content-Type", "text/html", "X-Request-Id", ""),
			502, client.ErrUnavailable, "Bad Gateway: <html> <body>Bad Gateway</body></html>", ""},
		{"empty body", respond(504, "", "X-Request-Id", "lb-1"), 504, client.ErrUnavailable, "Gateway Timeout", "lb-1"},
		{"JSON that is not an Error", respond(500, `{"error":"boom"}`), 500, nil, `Internal Server Error: {"error":"boom"}`, "synthetic-request"},
		{"broken JSON claiming to be JSON", respond(404, `{"code":`), 404, client.ErrNotFound, `Not Found: {"code":`, "synthetic-request"},
		{"long text", respond(400, long, "Content-Type", "text/plain"), 400, client.ErrInvalid, "Bad Request: " + long[:200] + "…", "synthetic-request"},
		{"binary", respond(403, "\xff\xfe\x00"), 403, client.ErrForbidden, "Forbidden", "synthetic-request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, tt.answer)
			c := newClient(t, "http://127.0.0.1:1", rec.option(), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
			_, _, err := c.EVSE(context.Background(), 1001)
			apiErr := requireAPIError(t, err, tt.sentinel, tt.status, "")
			assert.Equal(t, tt.wantMessage, apiErr.Message)
			assert.Equal(t, tt.wantID, apiErr.RequestID)
			assert.Empty(t, apiErr.Param)
		})
	}
}

func TestUndecodableSuccess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer step
		want   string
	}{
		{"broken JSON", respond(200, `{"uid":`), "decoding the answer"},
		{"not JSON", respond(200, `uid=1001`, "Content-Type", "text/plain"), `Content-Type "text/plain"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, tt.answer)
			c := newClient(t, "http://127.0.0.1:1", rec.option())
			_, _, err := c.EVSE(context.Background(), 1001)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var apiErr *client.Error
			assert.False(t, errors.As(err, &apiErr))
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	err := &client.Error{StatusCode: 404, Code: "not_found", Message: "EVSE with uid 9 not found", RequestID: "R1"}
	assert.Equal(t, "chargenet: 404 not_found: EVSE with uid 9 not found (request id R1)", err.Error())
	assert.ErrorIs(t, err, client.ErrNotFound)
	assert.NotErrorIs(t, err, nil)
	assert.Equal(t, "chargenet: 500", (&client.Error{StatusCode: 500}).Error())
}

// ---------------------------------------------------------------------------------
// Retries

func TestRetryReadsUntilSuccess(t *testing.T) {
	t.Parallel()
	srv, flaky := newFlakyServer(t)
	flaky.Fail.Store(2) // the real service answers 503 twice
	var s sleeps
	policy := client.RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	c := newClient(t, srv.URL, client.WithRetry(policy), s.option(), exactJitter)
	e, etag, err := c.EVSE(context.Background(), 1001)
	require.NoError(t, err)
	assert.Equal(t, int64(1001), e.UID)
	assert.NotEmpty(t, etag)
	assert.Equal(t, int32(3), flaky.Calls.Load())
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, s.all())
}

func TestRetryBoundedAttempts(t *testing.T) {
	t.Parallel()
	srv, flaky := newFlakyServer(t)
	flaky.Fail.Store(100)
	var s sleeps
	policy := client.RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond}
	c := newClient(t, srv.URL, client.WithRetry(policy), s.option(), exactJitter)
	_, _, err := c.EVSE(context.Background(), 1001)
	_ = requireAPIError(t, err, client.ErrUnavailable, 503, client.CodeUnavailable)
	assert.Equal(t, int32(5), flaky.Calls.Load())
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}, s.all())
}

func TestRetryJitterStaysWithinBackoff(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	var s sleeps
	rec := newRecorder(t, repeat(7, failWith(503, client.CodeUnavailable))...)
	policy := client.RetryPolicy{MaxAttempts: 8, BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}
	c := newClient(t, srv.URL, rec.option(), client.WithRetry(policy), s.option())
	_, err := c.EventTypes(context.Background())
	require.NoError(t, err)
	caps := []time.Duration{10, 20, 40, 50, 50, 50, 50}
	waits := s.all()
	require.Len(t, waits, len(caps))
	for i, w := range waits {
		assert.GreaterOrEqual(t, w, time.Duration(0))
		assert.LessOrEqual(t, w, caps[i]*time.Millisecond, "wait %d", i)
	}
}

func TestRetryDefaultPolicy(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	var s sleeps
	rec := newRecorder(t, repeat(10, failWith(503, client.CodeUnavailable))...)
	c := newClient(t, srv.URL, rec.option(), s.option(), exactJitter)
	_, err := c.EventTypes(context.Background())
	_ = requireAPIError(t, err, client.ErrUnavailable, 503, client.CodeUnavailable)
	assert.Equal(t, client.DefaultRetryPolicy.MaxAttempts, rec.count())
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}, s.all())
}

func TestRetryWhichFailures(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	tests := []struct {
		name      string
		failure   step
		retried   bool
		wantErrIs error
	}{
		{"429", failWith(429, client.CodeRateLimited), true, client.ErrRateLimited},
		{"502", failWith(502, "bad_gateway"), true, client.ErrUnavailable},
		{"503", failWith(503, client.CodeUnavailable), true, client.ErrUnavailable},
		{"504", failWith(504, "gateway_timeout"), true, client.ErrUnavailable},
		{"network error", netError, true, nil},
		{"500", failWith(500, client.CodeInternalError), false, nil},
		{"400", failWith(400, client.CodeInvalidParameter), false, client.ErrInvalid},
		{"403", failWith(403, client.CodeUnauthorized), false, client.ErrForbidden},
		{"404", failWith(404, client.CodeNotFound), false, client.ErrNotFound},
		{"409", failWith(409, client.CodeConnectorDeleted), false, client.ErrConflict},
		{"412", failWith(412, client.CodePreconditionFailed), false, client.ErrPreconditionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s sleeps
			rec := newRecorder(t, tt.failure, tt.failure) // twice, then the real service
			c := newClient(t, srv.URL, rec.option(), s.option())
			e, _, err := c.EVSE(context.Background(), 1001)
			if tt.retried {
				require.NoError(t, err)
				assert.Equal(t, int64(1001), e.UID)
				assert.Equal(t, 3, rec.count())
				assert.Len(t, s.all(), 2)
				return
			}
			require.Error(t, err)
			if tt.wantErrIs != nil {
				assert.ErrorIs(t, err, tt.wantErrIs)
			}
			assert.Equal(t, 1, rec.count())
			assert.Empty(t, s.all())
		})
	}
}

func TestRetryExhaustedNetworkError(t *testing.T) {
	t.Parallel()
	var s sleeps
	rec := newRecorder(t, repeat(3, netError)...)
	c := newClient(t, "http://127.0.0.1:1", rec.option(), s.option(), client.WithRetry(client.RetryPolicy{MaxAttempts: 3}))
	_, err := c.Location(context.Background(), "LOC-0001")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "injected: connection reset by peer")
	assert.True(t, strings.HasPrefix(err.Error(), "chargenet: "), err.Error())
	var urlErr *url.Error
	assert.ErrorAs(t, err, &urlErr)
	assert.Equal(t, 3, rec.count())
}

func TestRetryPatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("without IfMatch a 503 is not retried", func(t *testing.T) {
		srv, flaky := newFlakyServer(t)
		flaky.Fail.Store(1)
		var s sleeps
		c := newClient(t, srv.URL, s.option())
		_, _, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxVoltage: new(300.0)})
		_ = requireAPIError(t, err, client.ErrUnavailable, 503, client.CodeUnavailable)
		assert.Equal(t, int32(1), flaky.Calls.Load())
		assert.Empty(t, s.all())
		assert.Equal(t, 400.0, wantEVSE(t, srv.Store, 1001).Connectors[0].MaxVoltage, "nothing changed")
	})
	t.Run("without IfMatch a network error is not retried", func(t *testing.T) {
		srv := newServer(t, serverConfig{})
		var s sleeps
		rec := newRecorder(t, netError)
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, _, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxVoltage: new(300.0)})
		require.Error(t, err)
		assert.Equal(t, 1, rec.count())
		assert.Empty(t, s.all())
	})
	t.Run("with IfMatch a 503 is retried", func(t *testing.T) {
		srv, flaky := newFlakyServer(t)
		var s sleeps
		c := newClient(t, srv.URL, s.option())
		_, etag, err := c.EVSE(ctx, 1001)
		require.NoError(t, err)
		flaky.Calls.Store(0)
		flaky.Fail.Store(2)
		e, newETag, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxVoltage: new(300.0)}, client.IfMatch(etag))
		require.NoError(t, err)
		assert.Equal(t, 300.0, e.Connector(1).MaxVoltage)
		assert.Equal(t, int32(3), flaky.Calls.Load())
		assert.Len(t, s.all(), 2)
		_, current, err := c.EVSE(ctx, 1001)
		require.NoError(t, err)
		assert.Equal(t, newETag, current)
	})
	t.Run("with IfMatch a lost answer is retried and cannot apply twice", func(t *testing.T) {
		srv := newServer(t, serverConfig{})
		var s sleeps
		rec := newRecorder(t, nil, loseAnswer) // the read passes; the update is applied, its answer lost
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, etag, err := c.EVSE(ctx, 1001)
		require.NoError(t, err)
		_, _, err = c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxElectricPower: new(11.0)}, client.IfMatch(etag))
		_ = requireAPIError(t, err, client.ErrPreconditionFailed, 412, client.CodePreconditionFailed)
		assert.Equal(t, 3, rec.count())
		assert.Equal(t, rec.request(1).Header.Get("If-Match"), rec.request(2).Header.Get("If-Match"))
		assert.Equal(t, 11.0, wantEVSE(t, srv.Store, 1001).Connectors[0].MaxElectricPower, "applied once")
	})
	t.Run("with IfMatch the body is sent again", func(t *testing.T) {
		srv := newServer(t, serverConfig{})
		var s sleeps
		rec := newRecorder(t, nil, failWith(502, "bad_gateway"), netError)
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, etag, err := c.EVSE(ctx, 1001)
		require.NoError(t, err)
		e, _, err := c.UpdateConnector(ctx, 1001, 1, client.ConnectorPatch{MaxAmperage: new(16.0)}, client.IfMatch(etag))
		require.NoError(t, err)
		assert.Equal(t, 16.0, e.Connector(1).MaxAmperage)
		assert.Equal(t, 4, rec.count())
	})
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		retryAfter string
		policy     client.RetryPolicy
		wantWaits  []time.Duration
		wantErr    time.Duration // the RetryAfter of the error when the client gives up, 0 if it succeeds
	}{
		{"seconds on 429", 429, "3", client.RetryPolicy{}, []time.Duration{3 * time.Second}, 0},
		{"seconds on 503", 503, "2", client.RetryPolicy{}, []time.Duration{2 * time.Second}, 0},
		{"zero", 429, "0", client.RetryPolicy{}, []time.Duration{0}, 0},
		{"HTTP date", 429, now.Add(5 * time.Second).Format(http.TimeFormat), client.RetryPolicy{}, []time.Duration{5 * time.Second}, 0},
		{"HTTP date in the past", 503, now.Add(-time.Hour).Format(http.TimeFormat), client.RetryPolicy{}, []time.Duration{0}, 0},
		{"malformed falls back to backoff", 429, "soon", client.RetryPolicy{BaseDelay: 70 * time.Millisecond}, []time.Duration{70 * time.Millisecond}, 0},
		{"at the cap", 429, "30", client.RetryPolicy{MaxRetryAfter: 30 * time.Second}, []time.Duration{30 * time.Second}, 0},
		{"beyond the cap", 429, "31", client.RetryPolicy{MaxRetryAfter: 30 * time.Second}, nil, 31 * time.Second},
		{"HTTP date beyond the cap", 503, now.Add(2 * time.Hour).Format(http.TimeFormat), client.RetryPolicy{}, nil, 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s sleeps
			rec := newRecorder(t, failWith(tt.status, "synthetic", "Retry-After", tt.retryAfter))
			c := newClient(t, srv.URL, rec.option(), s.option(), exactJitter,
				client.WithClock(func() time.Time { return now }), client.WithRetry(tt.policy))
			_, err := c.EventTypes(context.Background())
			assert.Equal(t, tt.wantWaits, s.all())
			if tt.wantErr == 0 {
				require.NoError(t, err)
				assert.Equal(t, 2, rec.count())
				return
			}
			var apiErr *client.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, tt.wantErr, apiErr.RetryAfter)
			assert.Equal(t, 1, rec.count())
		})
	}
}

func TestRetryAfterFromTheService(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	srv := newServer(t, serverConfig{rateLimit: &server.RateLimit{Requests: 2, Window: time.Minute}, now: clock.Now})
	s := sleeps{onSleep: clock.Advance} // waiting moves the service's clock
	rec := newRecorder(t)
	c := newClient(t, srv.URL, rec.option(), s.option())
	for range 3 {
		_, _, err := c.EVSE(context.Background(), 1001)
		require.NoError(t, err)
	}
	require.Equal(t, 4, rec.count())
	limited := rec.answer(2)
	secs, err := strconv.Atoi(limited.Get("Retry-After"))
	require.NoError(t, err, "the third request was answered 429 with Retry-After")
	assert.Equal(t, []time.Duration{time.Duration(secs) * time.Second}, s.all())
}

func TestRetryStopsWithTheContext(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverConfig{})

	t.Run("canceled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec := newRecorder(t, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
			time.AfterFunc(20*time.Millisecond, cancel)
			return failWith(503, client.CodeUnavailable)(req, next)
		})
		// The real wait: an hour, unless the context ends it.
		c := newClient(t, srv.URL, rec.option(), exactJitter, client.WithRetry(client.RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour}))
		done := make(chan error, 1)
		go func() {
			_, _, err := c.EVSE(ctx, 1001)
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, client.ErrUnavailable, "the last attempt's error is kept")
			var apiErr *client.Error
			assert.ErrorAs(t, err, &apiErr)
			assert.Equal(t, 1, rec.count())
		case <-time.After(30 * time.Second):
			t.Fatal("the client kept waiting after the context was canceled")
		}
	})
	t.Run("deadline before the wait ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var s sleeps
		rec := newRecorder(t, failWith(429, client.CodeRateLimited, "Retry-After", "30"))
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, _, err := c.EVSE(ctx, 1001)
		apiErr := requireAPIError(t, err, client.ErrRateLimited, 429, client.CodeRateLimited)
		assert.Equal(t, 30*time.Second, apiErr.RetryAfter)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		assert.Empty(t, s.all(), "no wait that would outlast the deadline")
		assert.Equal(t, 1, rec.count())
	})
	t.Run("canceled before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var s sleeps
		rec := newRecorder(t)
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, err := c.EventTypes(ctx)
		require.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, s.all())
	})
	t.Run("canceled during an attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var s sleeps
		rec := newRecorder(t, func(req *http.Request, _ http.RoundTripper) (*http.Response, error) {
			cancel()
			return netError(req, nil)
		})
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, err := c.EventTypes(ctx)
		require.Error(t, err)
		assert.Equal(t, 1, rec.count())
		assert.Empty(t, s.all())
	})
}

// ---------------------------------------------------------------------------------
// Lifecycle: locations and EVSEs created, changed and removed

// newLocation is a location the demo inventory does not hold.
func newLocation(id string) client.Location {
	return client.Location{
		ID: id, Name: "Depot Hafen", Address: "Hafenstraße 1", City: "Hamburg", PostalCode: "20457",
		Country: "DEU", Latitude: 53.5413, Longitude: 9.9842, TimeZone: "Europe/Berlin",
	}
}

// newEVSE is an EVSE to create at location with one AC connector.
func newEVSE(evseID, location string) client.NewEVSE {
	return client.NewEVSE{
		EVSEID: evseID, ChargeboxID: 9001, LocationID: location,
		Connectors: []client.NewConnector{{
			Standard: client.StandardIEC62196T2, Format: client.FormatSocket, PowerType: client.PowerAC3Phase,
			MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{"AC-STANDARD"},
		}},
	}
}

// dcConnector is a connector to add with CreateConnector.
var dcConnector = client.NewConnector{
	Standard: client.StandardIEC62196T2Combo, Format: client.FormatCable, PowerType: client.PowerDC,
	MaxElectricPower: 150, MaxAmperage: 375, MaxVoltage: 920,
}

// countEVSEs counts the EVSEs the service lists, walking every page.
func countEVSEs(t *testing.T, c *client.Client) int {
	t.Helper()
	n := 0
	for _, err := range c.EVSEs(context.Background(), client.ListOptions{}) {
		require.NoError(t, err)
		n++
	}
	return n
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)
	before := countEVSEs(t, c)

	// A new location: 201, then the same PUT again changes nothing (200).
	var r client.Response
	loc, created, err := c.PutLocation(ctx, newLocation("LOC-9001"), client.WithResponse(&r))
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, http.StatusCreated, r.StatusCode)
	assert.Equal(t, "/v1/locations/LOC-9001", r.Location)
	assert.Equal(t, wantLocation(t, srv.Store, "LOC-9001"), *loc)
	assert.Equal(t, "Depot Hafen", loc.Name)
	assert.Empty(t, loc.EVSEUIDs)
	again, created, err := c.PutLocation(ctx, newLocation("LOC-9001"), client.WithResponse(&r))
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, loc.LastUpdated, again.LastUpdated, "an unchanged PUT leaves lastUpdated")

	// A new EVSE with the caller's idempotency key: 201, ETag, Location.
	const key = "lifecycle-create-evse-1"
	evse, etag, err := c.CreateEVSE(ctx, newEVSE("DE*ABC*E9001*1", "LOC-9001"), client.WithIdempotencyKey(key), client.WithResponse(&r))
	require.NoError(t, err)
	assert.Equal(t, wantEVSE(t, srv.Store, evse.UID), *evse)
	assert.Equal(t, client.StatusPlanned, evse.Status, "status defaults to PLANNED")
	assert.Equal(t, "LOC-9001", evse.LocationID)
	require.Len(t, evse.Connectors, 1)
	assert.Equal(t, int64(1), evse.Connectors[0].ID)
	assert.NotEmpty(t, etag)
	assert.Equal(t, http.StatusCreated, r.StatusCode)
	assert.Equal(t, etag, r.ETag)
	assert.Equal(t, fmt.Sprintf("/v2/evses/%d", evse.UID), r.Location)
	assert.Equal(t, key, r.IdempotencyKey)
	assert.False(t, r.Replayed)
	assert.Equal(t, before+1, countEVSEs(t, c))

	// The same call again with the same key: the first answer, nothing created.
	replay, replayETag, err := c.CreateEVSE(ctx, newEVSE("DE*ABC*E9001*1", "LOC-9001"), client.WithIdempotencyKey(key), client.WithResponse(&r))
	require.NoError(t, err)
	assert.Equal(t, *evse, *replay)
	assert.Equal(t, etag, replayETag)
	assert.True(t, r.Replayed)
	assert.Equal(t, http.StatusCreated, r.StatusCode)
	assert.Equal(t, before+1, countEVSEs(t, c), "a replay creates nothing")

	// The same key with another body is refused; without the key the evseId is taken.
	_, _, err = c.CreateEVSE(ctx, newEVSE("DE*ABC*E9002*1", "LOC-9001"), client.WithIdempotencyKey(key))
	_ = requireAPIError(t, err, client.ErrIdempotencyKeyReused, 422, client.CodeIdempotencyKeyReused)
	_, _, err = c.CreateEVSE(ctx, newEVSE("DE*ABC*E9001*1", "LOC-9001"))
	_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeConflict)
	assert.Equal(t, before+1, countEVSEs(t, c))

	// The location lists its EVSE and cannot be deleted while it is not removed.
	loc, err = c.Location(ctx, "LOC-9001")
	require.NoError(t, err)
	assert.Equal(t, []int64{evse.UID}, loc.EVSEUIDs)
	_, err = c.DeleteLocation(ctx, "LOC-9001")
	_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeLocationInUse)

	// Add a connector (id 2), then delete it.
	evse, etag2, err := c.CreateConnector(ctx, evse.UID, dcConnector, client.IfMatch(etag), client.WithResponse(&r))
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, r.StatusCode)
	assert.NotEmpty(t, r.IdempotencyKey, "the client sends a key of its own")
	assert.NotEqual(t, etag, etag2)
	require.Len(t, evse.Connectors, 2)
	added := evse.Connectors[1]
	assert.Equal(t, int64(2), added.ID)
	assert.Equal(t, client.StandardIEC62196T2Combo, added.Standard)
	assert.Equal(t, 150.0, added.MaxElectricPower)
	assert.Equal(t, []string{}, added.TariffIDs)
	assert.Equal(t, wantEVSE(t, srv.Store, evse.UID), *evse)
	_, _, err = c.CreateConnector(ctx, evse.UID, dcConnector, client.IfMatch(etag))
	_ = requireAPIError(t, err, client.ErrPreconditionFailed, 412, client.CodePreconditionFailed)

	evse, etag3, err := c.DeleteConnector(ctx, evse.UID, 2, client.IfMatch(etag2))
	require.NoError(t, err)
	require.NotNil(t, evse.Connector(2))
	assert.True(t, evse.Connector(2).Deleted())
	assert.False(t, evse.Connector(1).Deleted())
	assert.Equal(t, wantEVSE(t, srv.Store, evse.UID), *evse)
	_, _, err = c.DeleteConnector(ctx, evse.UID, 3)
	_ = requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)

	// Commission it: PLANNED -> AVAILABLE; a stale ETag and a forbidden transition fail.
	_, _, err = c.UpdateEVSE(ctx, evse.UID, client.EVSEPatch{Status: new(client.StatusAvailable)}, client.IfMatch(etag2))
	_ = requireAPIError(t, err, client.ErrPreconditionFailed, 412, client.CodePreconditionFailed)
	evse, etag4, err := c.UpdateEVSE(ctx, evse.UID, client.EVSEPatch{Status: new(client.StatusAvailable)}, client.IfMatch(etag3))
	require.NoError(t, err)
	assert.Equal(t, client.StatusAvailable, evse.Status)
	assert.NotEqual(t, etag3, etag4)
	assert.Equal(t, wantEVSE(t, srv.Store, evse.UID), *evse)
	_, _, err = c.UpdateEVSE(ctx, evse.UID, client.EVSEPatch{Status: new(client.StatusPlanned)})
	apiErr := requireAPIError(t, err, client.ErrConflict, 409, client.CodeInvalidTransition)
	assert.Contains(t, apiErr.Message, "INOPERATIVE")
	_, _, err = c.UpdateEVSE(ctx, evse.UID, client.EVSEPatch{})
	_ = requireAPIError(t, err, client.ErrInvalid, 400, client.CodeInvalidBody)
	assert.Equal(t, client.StatusAvailable, wantEVSE(t, srv.Store, evse.UID).Status, "refused changes change nothing")

	// Remove it: REMOVED, twice is the same; later changes are refused.
	evse, _, err = c.RemoveEVSE(ctx, evse.UID)
	require.NoError(t, err)
	assert.Equal(t, client.StatusRemoved, evse.Status)
	again2, _, err := c.RemoveEVSE(ctx, evse.UID)
	require.NoError(t, err)
	assert.Equal(t, *evse, *again2)
	_, _, err = c.UpdateEVSE(ctx, evse.UID, client.EVSEPatch{Status: new(client.StatusAvailable)})
	_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeEVSERemoved)
	_, _, err = c.CreateConnector(ctx, evse.UID, dcConnector)
	_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeEVSERemoved)
	assert.Equal(t, before+1, countEVSEs(t, c), "a removed EVSE stays listed")

	// Delete the location: it stays readable, leaves the list, and its id is spent.
	deleted, err := c.DeleteLocation(ctx, "LOC-9001")
	require.NoError(t, err)
	require.True(t, deleted.Deleted())
	assert.Equal(t, wantLocation(t, srv.Store, "LOC-9001"), *deleted)
	read, err := c.Location(ctx, "LOC-9001")
	require.NoError(t, err)
	assert.Equal(t, *deleted, *read)
	for l, err := range c.Locations(ctx, client.ListOptions{}) {
		require.NoError(t, err)
		assert.NotEqual(t, "LOC-9001", l.ID)
	}
	_, _, err = c.PutLocation(ctx, newLocation("LOC-9001"))
	_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeLocationDeleted)
	_, _, err = c.CreateEVSE(ctx, newEVSE("DE*ABC*E9003*1", "LOC-9001"))
	_ = requireAPIError(t, err, client.ErrConflict, 409, client.CodeLocationDeleted)
	_, err = c.DeleteLocation(ctx, "LOC-9999")
	_ = requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)
}

func TestLifecycleRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := newRecorder(t)
	c := newClient(t, "http://127.0.0.1:1", rec.option())
	_, _, err := c.PutLocation(ctx, newLocation(""))
	assert.ErrorIs(t, err, client.ErrInvalid)
	_, err = c.DeleteLocation(ctx, "")
	assert.ErrorIs(t, err, client.ErrInvalid)
	_, _, err = c.CreateEVSE(ctx, newEVSE("DE*ABC*E9001*1", "LOC-0001"), client.WithIdempotencyKey(""))
	assert.ErrorIs(t, err, client.ErrInvalid)
	_, _, err = c.RemoveEVSE(ctx, 1001, client.IfMatch(""))
	assert.ErrorIs(t, err, client.ErrInvalid)
	_, _, err = c.DeleteConnector(ctx, 1001, 1, client.IfMatch(""))
	assert.ErrorIs(t, err, client.ErrInvalid)
	_, _, err = c.CreateConnector(ctx, 1001, dcConnector, client.IfMatch(""))
	assert.ErrorIs(t, err, client.ErrInvalid)
	_, _, err = c.UpdateEVSE(ctx, 1001, client.EVSEPatch{Status: new(client.StatusInoperative)}, client.IfMatch(""))
	assert.ErrorIs(t, err, client.ErrInvalid)
	assert.Equal(t, 0, rec.count())
}

func TestCreateEVSELostAnswerCreatesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	before := countEVSEs(t, newClient(t, srv.URL))
	// The service handles the first attempt and creates the EVSE; its answer is lost.
	var s sleeps
	rec := newRecorder(t, loseAnswer)
	c := newClient(t, srv.URL, rec.option(), s.option())
	var r client.Response
	evse, etag, err := c.CreateEVSE(ctx, newEVSE("DE*ABC*E9101*1", "LOC-0001"), client.WithResponse(&r))
	require.NoError(t, err)
	require.Equal(t, 2, rec.count(), "the lost answer was retried once")
	key := rec.request(0).Header.Get("Idempotency-Key")
	assert.NotEmpty(t, key)
	assert.Equal(t, key, rec.request(1).Header.Get("Idempotency-Key"), "one key for all attempts")
	assert.Equal(t, key, r.IdempotencyKey)
	assert.True(t, r.Replayed, "the retry got the first attempt's answer")
	assert.Len(t, s.all(), 1)
	assert.Equal(t, wantEVSE(t, srv.Store, evse.UID), *evse)
	assert.NotEmpty(t, etag)
	assert.Equal(t, before+1, countEVSEs(t, c), "exactly one EVSE created")
	n := 0
	for e, err := range c.EVSEs(ctx, client.ListOptions{}) {
		require.NoError(t, err)
		if e.EVSEID == "DE*ABC*E9101*1" {
			n++
		}
	}
	assert.Equal(t, 1, n)

	// Each call makes its own key: a second CreateEVSE is a new request.
	_, _, err = c.CreateEVSE(ctx, newEVSE("DE*ABC*E9102*1", "LOC-0001"))
	require.NoError(t, err)
	other := rec.request(rec.count() - 1).Header.Get("Idempotency-Key")
	assert.NotEmpty(t, other)
	assert.NotEqual(t, key, other)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, other)
	assert.Equal(t, before+2, countEVSEs(t, c))
}

func TestCreateConnectorLostAnswerCreatesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	var s sleeps
	rec := newRecorder(t, loseAnswer, netError) // applied and lost, then not delivered
	c := newClient(t, srv.URL, rec.option(), s.option())
	before := wantEVSE(t, srv.Store, 1001)
	evse, _, err := c.CreateConnector(ctx, 1001, dcConnector)
	require.NoError(t, err)
	assert.Equal(t, 3, rec.count())
	assert.Len(t, evse.Connectors, len(before.Connectors)+1, "one connector added")
	assert.Equal(t, wantEVSE(t, srv.Store, 1001), *evse)
}

func TestRetryIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	t.Run("in use is retried with the same key", func(t *testing.T) {
		var s sleeps
		rec := newRecorder(t, failWith(409, client.CodeIdempotencyKeyInUse))
		c := newClient(t, srv.URL, rec.option(), s.option())
		evse, _, err := c.CreateEVSE(ctx, newEVSE("DE*ABC*E9201*1", "LOC-0001"))
		require.NoError(t, err)
		assert.Equal(t, "DE*ABC*E9201*1", evse.EVSEID)
		require.Equal(t, 2, rec.count())
		assert.Equal(t, rec.request(0).Header.Get("Idempotency-Key"), rec.request(1).Header.Get("Idempotency-Key"))
		assert.Len(t, s.all(), 1)
	})
	t.Run("another conflict is final", func(t *testing.T) {
		var s sleeps
		rec := newRecorder(t, failWith(409, client.CodeConflict))
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, _, err := c.CreateEVSE(ctx, newEVSE("DE*ABC*E9202*1", "LOC-0001"))
		apiErr := requireAPIError(t, err, client.ErrConflict, 409, client.CodeConflict)
		assert.Equal(t, "synthetic-request", apiErr.RequestID)
		assert.Equal(t, 1, rec.count())
		assert.Empty(t, s.all())
	})
	t.Run("a PATCH without IfMatch carries no key and is not retried", func(t *testing.T) {
		var s sleeps
		rec := newRecorder(t, failWith(503, client.CodeUnavailable))
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, _, err := c.UpdateEVSE(ctx, 1001, client.EVSEPatch{Status: new(client.StatusInoperative)})
		_ = requireAPIError(t, err, client.ErrUnavailable, 503, client.CodeUnavailable)
		assert.Equal(t, 1, rec.count())
		assert.Empty(t, rec.request(0).Header.Get("Idempotency-Key"))
	})
	t.Run("PUT and DELETE are retried", func(t *testing.T) {
		var s sleeps
		rec := newRecorder(t, failWith(503, client.CodeUnavailable), nil, loseAnswer)
		c := newClient(t, srv.URL, rec.option(), s.option())
		_, created, err := c.PutLocation(ctx, newLocation("LOC-9301"))
		require.NoError(t, err)
		assert.True(t, created)
		evse, _, err := c.RemoveEVSE(ctx, 1040)
		require.NoError(t, err)
		assert.Equal(t, client.StatusRemoved, evse.Status)
		assert.Equal(t, 4, rec.count())
		assert.Equal(t, client.StatusRemoved, wantEVSE(t, srv.Store, 1040).Status)
	})
}

func TestResponseHeaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{rateLimit: &server.RateLimit{Requests: 50, Window: time.Minute}})
	c := newClient(t, srv.URL)

	var first, second client.Response
	_, _, err := c.EVSE(ctx, 1001, client.WithResponse(&first))
	require.NoError(t, err)
	_, err = c.Location(ctx, "LOC-0001", client.WithResponse(&second))
	require.NoError(t, err)
	for _, r := range []client.Response{first, second} {
		assert.Equal(t, http.StatusOK, r.StatusCode)
		assert.NotEmpty(t, r.RequestID)
		require.NotNil(t, r.RateLimit)
		assert.Equal(t, 50, r.RateLimit.Limit)
		assert.LessOrEqual(t, r.RateLimit.Reset, time.Minute)
		assert.False(t, r.Replayed)
		assert.Empty(t, r.IdempotencyKey)
	}
	assert.NotEmpty(t, first.ETag)
	assert.Empty(t, second.ETag)
	assert.NotEqual(t, first.RequestID, second.RequestID)
	assert.Equal(t, first.RateLimit.Remaining-1, second.RateLimit.Remaining)

	// On failure both the Response and the *Error carry them.
	var r client.Response
	_, _, err = c.EVSE(ctx, 999999, client.WithResponse(&r))
	apiErr := requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
	assert.Equal(t, r.RequestID, apiErr.RequestID)
	require.NotNil(t, apiErr.RateLimit)
	assert.Equal(t, *r.RateLimit, *apiErr.RateLimit)
	assert.Equal(t, second.RateLimit.Remaining-1, apiErr.RateLimit.Remaining)

	// An API key the service does not accept gets no rate limit.
	bad := newClient(t, srv.URL, client.WithAPIKey("not-a-key-0123456789abcdef"))
	_, err = bad.EventTypes(ctx, client.WithResponse(&r))
	apiErr = requireAPIError(t, err, client.ErrForbidden, 403, client.CodeUnauthorized)
	assert.Nil(t, apiErr.RateLimit)
	assert.Nil(t, r.RateLimit)
	assert.Equal(t, apiErr.RequestID, r.RequestID)
}
