package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chargenet/chargenet/gen"
)

// Version is the version of this client package. It is sent in the User-Agent header
// as "chargenet-go/<Version>".
const Version = "0.1.0"

// APIVersion is the version of the API contract (openapi/openapi.yaml) this client was
// built against.
const APIVersion = "2.15.0"

// DefaultTimeout bounds each attempt of a request when the client was made without
// WithHTTPClient.
const DefaultTimeout = 30 * time.Second

// Client calls the Charging Network Integration API. Make one with New and share it: it
// is safe for concurrent use.
type Client struct {
	api *gen.ClientWithResponses
	now func() time.Time
}

// Option configures a Client made by New.
type Option func(*options) error

type options struct {
	apiKey    string
	hc        *http.Client
	uaSuffix  string
	policy    RetryPolicy
	sleep     func(context.Context, time.Duration) error
	now       func() time.Time
	jitter    func(time.Duration) time.Duration
	userAgent string
}

// WithAPIKey makes the client authenticate every request with key, sent as
// "Authorization: Bearer <key>". Without it every operation fails with ErrForbidden.
func WithAPIKey(key string) Option {
	return func(o *options) error {
		o.apiKey = key
		return nil
	}
}

// WithHTTPClient makes the client send its requests through hc (for its Transport,
// proxies, TLS settings or Timeout, which bounds each attempt). By default the client
// uses its own http.Client with http.DefaultTransport and DefaultTimeout. New fails if
// hc is nil.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *options) error {
		if hc == nil {
			return errors.New("chargenet: WithHTTPClient: nil *http.Client")
		}
		o.hc = hc
		return nil
	}
}

// WithUserAgent appends suffix (for example "fleet-sync/1.4") to the User-Agent header,
// after "chargenet-go/<Version>", so the service's operators can tell your application
// apart.
func WithUserAgent(suffix string) Option {
	return func(o *options) error {
		o.uaSuffix = strings.TrimSpace(suffix)
		return nil
	}
}

// WithRetry replaces DefaultRetryPolicy; zero fields of p take their default, and
// RetryPolicy{MaxAttempts: 1} disables retries. New fails if a field is negative.
func WithRetry(p RetryPolicy) Option {
	return func(o *options) error {
		var err error
		o.policy, err = p.withDefaults()
		return err
	}
}

// New returns a client of the service at baseURL, an absolute http or https URL such as
// "https://api.example.com" (a path prefix is kept: "https://example.com/charging"). It
// fails if baseURL is not such a URL or an option is invalid; it does not contact the
// service.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("chargenet: base URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("chargenet: base URL %q: want an http or https URL", baseURL)
	case u.Host == "":
		return nil, fmt.Errorf("chargenet: base URL %q has no host", baseURL)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("chargenet: base URL %q: want no query, fragment or user info", baseURL)
	}
	o := options{policy: DefaultRetryPolicy, sleep: sleepContext, now: time.Now, jitter: fullJitter}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.hc == nil {
		o.hc = &http.Client{Timeout: DefaultTimeout}
	}
	o.userAgent = "chargenet-go/" + Version
	if o.uaSuffix != "" {
		o.userAgent += " " + o.uaSuffix
	}
	d := &doer{hc: o.hc, apiKey: o.apiKey, userAgent: o.userAgent, policy: o.policy, sleep: o.sleep, now: o.now, jitter: o.jitter}
	api, err := gen.NewClientWithResponses(strings.TrimSuffix(u.String(), "/"), gen.WithHTTPClient(d))
	if err != nil {
		return nil, fmt.Errorf("chargenet: %w", err)
	}
	return &Client{api: api, now: o.now}, nil
}

// answer checks the outcome of one generated-client call: a transport error is wrapped
// (a *waitError already is), and an answer whose status is not among ok (200 when ok is
// empty) becomes an *Error (its body read and closed). The answer's headers go to the
// caller's Response, if o asked for one; idemKey is the Idempotency-Key sent, or nil. On
// nil the caller owns res.
func (c *Client) answer(op string, o *callOptions, idemKey *string, res *http.Response, err error, ok ...int) error {
	if err != nil {
		if _, isWait := err.(*waitError); isWait {
			return err
		}
		return fmt.Errorf("chargenet: %w", err)
	}
	o.record(res, idemKey)
	if len(ok) == 0 {
		ok = []int{http.StatusOK}
	}
	if slices.Contains(ok, res.StatusCode) {
		return nil
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	return newError(op, res.StatusCode, res.Header, body, c.now())
}

// decodeError reports a success answer whose body the generated client could not
// decode.
func decodeError(op string, res *http.Response, err error) error {
	if err != nil {
		return fmt.Errorf("chargenet: %s: decoding the answer: %w", op, err)
	}
	return fmt.Errorf("chargenet: %s: answer %d has Content-Type %q, want application/json", op, res.StatusCode, res.Header.Get("Content-Type"))
}
