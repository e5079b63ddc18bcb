package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy says when and how long the client waits before repeating a request that
// failed in a way that may pass on its own: a network error, or an answer 429, 502, 503
// or 504 (and, for a request with an Idempotency-Key, a 409 idempotency_key_in_use: the
// first attempt is still running).
//
// Only requests that cannot change anything twice are repeated:
//   - reads (GET);
//   - PUT and DELETE (PutLocation, DeleteLocation, RemoveEVSE, DeleteConnector,
//     RevokeAPIKey), which leave the same state however often they are applied;
//   - POST with an Idempotency-Key (CreateEVSE, CreateConnector). The client sends one
//     on every POST but those sent once (below): the caller's (WithIdempotencyKey) or a
//     random one it makes per call and sends again on each of that call's attempts, so a
//     repeat after a lost answer gets the first answer again (Response.Replayed) instead
//     of creating twice. CreateAPIKey, RotateAPIKey, TestWebhook and ReplayWebhook are
//     sent once, without one: the service keeps no answer for them (a key's would hold a
//     secret), so a repeat would rotate, ping or queue again;
//   - PATCH (UpdateConnector, UpdateEVSE) only when it carries IfMatch. A PATCH without
//     IfMatch is sent once, because a lost answer does not tell whether it was applied.
//     One with IfMatch whose first attempt was applied but whose answer was lost is
//     answered 412 on the repeat (the ETag has moved on), so it fails with
//     ErrPreconditionFailed rather than being applied twice; read the EVSE to see
//     whether it holds the change. The same holds for a DELETE with IfMatch.
//
// Between attempts the client waits for the Retry-After the service sent (in seconds or
// as an HTTP date), or else for a random time between zero and BaseDelay·2ⁿ⁻¹ after the
// n-th attempt, capped at MaxDelay ("full jitter"). It does not wait, and returns the
// last error instead, when the Retry-After exceeds MaxRetryAfter or the wait would
// outlast the context's deadline; it stops waiting when the context is done.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts per call, the first one included; 1 disables
	// retries. Zero means DefaultRetryPolicy's.
	MaxAttempts int
	// BaseDelay is the cap of the random wait after the first attempt; it doubles with
	// each further attempt. Zero means DefaultRetryPolicy's.
	BaseDelay time.Duration
	// MaxDelay caps the random wait. Zero means DefaultRetryPolicy's.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a longer one ends
	// the retries at once with the error (whose RetryAfter tells the caller how long
	// the service asked to wait). Zero means DefaultRetryPolicy's.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is the policy of a client made without WithRetry: four attempts,
// random waits capped at 200 ms, 400 ms and 800 ms, and a Retry-After honoured up to one
// minute (the service's rate-limit window).
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:   4,
	BaseDelay:     200 * time.Millisecond,
	MaxDelay:      5 * time.Second,
	MaxRetryAfter: time.Minute,
}

// withDefaults fills zero fields from DefaultRetryPolicy and checks the others.
func (p RetryPolicy) withDefaults() (RetryPolicy, error) {
	if p.MaxAttempts < 0 || p.BaseDelay < 0 || p.MaxDelay < 0 || p.MaxRetryAfter < 0 {
		return p, fmt.Errorf("chargenet: RetryPolicy %+v has a negative field", p)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultRetryPolicy.MaxAttempts
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = DefaultRetryPolicy.MaxDelay
	}
	if p.MaxRetryAfter == 0 {
		p.MaxRetryAfter = DefaultRetryPolicy.MaxRetryAfter
	}
	return p, nil
}

// backoffCap is the upper bound of the random wait after attempt n (1-based).
func (p RetryPolicy) backoffCap(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// parseRetryAfter reads a Retry-After header: delay seconds, or an HTTP date (a date in
// the past means no wait). ok is false when the header is absent or malformed.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(365*24*time.Hour/time.Second) {
			secs = int64(365 * 24 * time.Hour / time.Second) // avoids overflow; far beyond any cap
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryableStatus reports whether an answer may be worth repeating.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// repeatable reports whether req can be sent again without risk of applying a change
// twice, and its body replayed: a read, a PUT or DELETE, a POST with an Idempotency-Key,
// or a conditional (If-Match) request.
func repeatable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
	case http.MethodPost:
		if req.Header.Get(headerIdempotencyKey) == "" {
			return false
		}
	default:
		if req.Header.Get("If-Match") == "" {
			return false
		}
	}
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// headerIdempotencyKey is the request header that makes a POST safe to repeat.
const headerIdempotencyKey = "Idempotency-Key"

// sendOnceKey marks the context of a request that the doer sends once, without an
// Idempotency-Key: its operation takes none and a repeat would do it again.
type sendOnceKey struct{}

// sendOnce returns ctx marked so that its request is sent once (see sendOnceKey).
func sendOnce(ctx context.Context) context.Context {
	return context.WithValue(ctx, sendOnceKey{}, true)
}

func isSendOnce(ctx context.Context) bool {
	once, _ := ctx.Value(sendOnceKey{}).(bool)
	return once
}

// keyInUse reports whether an answer says that an earlier attempt with the same
// Idempotency-Key is still running at the service (409 idempotency_key_in_use).
func keyInUse(status int, body []byte) bool {
	if status != http.StatusConflict {
		return false
	}
	var b struct {
		Code string `json:"code"`
	}
	return json.Unmarshal(body, &b) == nil && b.Code == CodeIdempotencyKeyInUse
}

// retryableNetError reports whether a transport error may pass on its own. A rejected
// certificate will not.
func retryableNetError(err error) bool {
	var cert *tls.CertificateVerificationError
	return !errors.As(err, &cert)
}

// waitError is returned when the context ends while the client waits to repeat a
// request: it matches both the context's error and the last attempt's error.
type waitError struct {
	ctxErr, last error
}

func (e *waitError) Error() string {
	return fmt.Sprintf("chargenet: %v while waiting to retry; last attempt: %v", e.ctxErr, e.last)
}

func (e *waitError) Unwrap() []error { return []error{e.ctxErr, e.last} }

// sleepContext waits for d or until ctx is done, whichever comes first.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fullJitter returns a random duration in [0, d].
func fullJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

// doer sends the generated client's requests: it adds the client's headers and repeats
// requests according to the RetryPolicy. It implements gen.HttpRequestDoer.
type doer struct {
	hc        *http.Client
	apiKey    string
	userAgent string
	policy    RetryPolicy
	sleep     func(context.Context, time.Duration) error
	now       func() time.Time
	jitter    func(time.Duration) time.Duration
}

// Do sends req, repeating it while the policy allows. It returns the last answer, or
// the last transport error, or a *waitError if the context ended during a wait.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", d.userAgent)
	req.Header.Set("Accept", "application/json")
	if d.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+d.apiKey)
	}
	ctx := req.Context()
	once := isSendOnce(ctx)
	if req.Method == http.MethodPost && !once && req.Header.Get(headerIdempotencyKey) == "" {
		// One key for all attempts of this call: a repeat is recognised as one.
		req.Header.Set(headerIdempotencyKey, newIdempotencyKey())
	}
	attempts := 1
	if !once && repeatable(req) {
		attempts = d.policy.MaxAttempts
	}
	for n := 1; ; n++ {
		send := req
		if n > 1 {
			send = req.Clone(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				send.Body = body
			}
		}
		res, err := d.hc.Do(send)
		if n >= attempts {
			return res, err
		}

		// Decide whether to wait and repeat; if not, hand back what this attempt gave.
		var wait time.Duration
		var last error // this attempt's failure, reported if the context ends during the wait
		switch {
		case err != nil:
			if ctx.Err() != nil || !retryableNetError(err) {
				return nil, err
			}
			wait, last = d.jitter(d.policy.backoffCap(n)), err
		case retryableStatus(res.StatusCode) || (res.StatusCode == http.StatusConflict && req.Header.Get(headerIdempotencyKey) != ""):
			body, rerr := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			_ = res.Body.Close()
			if rerr != nil {
				return nil, rerr
			}
			res.Body = io.NopCloser(bytes.NewReader(body)) // intact, in case it is handed back
			if !retryableStatus(res.StatusCode) && !keyInUse(res.StatusCode, body) {
				return res, nil // a 409 of another kind: final
			}
			now := d.now()
			last = newError(req.Method+" "+req.URL.EscapedPath(), res.StatusCode, res.Header, body, now)
			if ra, ok := parseRetryAfter(res.Header.Get("Retry-After"), now); ok {
				if ra > d.policy.MaxRetryAfter {
					return res, nil
				}
				wait = ra
			} else {
				wait = d.jitter(d.policy.backoffCap(n))
			}
		default:
			return res, nil
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return res, err // waiting would outlast the caller's patience
		}
		if serr := d.sleep(ctx, wait); serr != nil {
			return nil, &waitError{ctxErr: serr, last: last}
		}
	}
}
