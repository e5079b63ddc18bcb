package client

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Response describes the HTTP answer to one call: the headers the service sends with
// every answer (X-Request-Id, the X-RateLimit-* headers) and those of the operations
// that change something (ETag, Location, Idempotent-Replayed). Pass WithResponse to a
// call to have it filled in; it is filled in for failed calls too, whenever an answer
// arrived (a network error leaves it as it was).
type Response struct {
	// StatusCode is the HTTP status of the answer, for example 201 for a created EVSE.
	StatusCode int
	// RequestID identifies the request at the service (the X-Request-Id header); quote
	// it when you contact support.
	RequestID string
	// RateLimit is the API key's request budget as the answer reported it, or nil when
	// the answer had no X-RateLimit-* headers (an answer to an unaccepted API key has
	// none).
	RateLimit *RateLimit
	// ETag is the ETag header: the tag of the EVSE's state after the call, on the EVSE
	// operations; empty otherwise.
	ETag string
	// Location is the Location header of a 201 answer: the path of what was created,
	// for example "/v2/evses/2001"; empty otherwise.
	Location string
	// Replayed reports that the answer is the kept answer of an earlier request with the
	// same Idempotency-Key (the Idempotent-Replayed header): the call created nothing.
	Replayed bool
	// IdempotencyKey is the Idempotency-Key the call sent (the caller's, given with
	// WithIdempotencyKey, or the one the client made), or empty for operations that
	// take none.
	IdempotencyKey string
}

// RateLimit is the request budget of the API key in the service's current window, read
// from the X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset headers.
type RateLimit struct {
	// Limit is the number of requests allowed per window.
	Limit int
	// Remaining is the number of requests left in the current window.
	Remaining int
	// Reset is the time until the current window ends and Remaining is back at Limit.
	Reset time.Duration
}

// rateLimitFrom reads the X-RateLimit-* headers; nil when one is absent or malformed.
func rateLimitFrom(h http.Header) *RateLimit {
	var v [3]int
	for i, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		n, err := strconv.Atoi(strings.TrimSpace(h.Get(name)))
		if err != nil || n < 0 {
			return nil
		}
		v[i] = n
	}
	return &RateLimit{Limit: v[0], Remaining: v[1], Reset: time.Duration(v[2]) * time.Second}
}

// CallOption configures one call of a Client method: WithResponse, IfMatch,
// WithIdempotencyKey. An option a method has no use for is ignored (IfMatch on a read,
// for example).
type CallOption func(*callOptions)

// UpdateOption is the former name of CallOption.
type UpdateOption = CallOption

type callOptions struct {
	ifMatch    string
	hasIfMatch bool
	idemKey    string
	hasIdemKey bool
	response   *Response
}

func newCallOptions(opts []CallOption) *callOptions {
	o := &callOptions{}
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
	return o
}

// WithResponse makes the call fill *r with the HTTP answer's status and headers (see
// Response), on success and on failure alike:
//
//	var r client.Response
//	evse, _, err := c.CreateEVSE(ctx, e, client.WithResponse(&r))
//	log.Print(r.RequestID, r.RateLimit, r.Replayed)
func WithResponse(r *Response) CallOption {
	return func(o *callOptions) { o.response = r }
}

// IfMatch makes a change conditional: it applies only if the EVSE's current ETag is
// etag (as returned by EVSE or a previous change), otherwise it fails with
// ErrPreconditionFailed and changes nothing. "*" matches any ETag. It applies to
// UpdateConnector, UpdateEVSE, RemoveEVSE, CreateConnector and DeleteConnector. A
// conditional PATCH is also retried on network errors and 429/502/503/504 answers (see
// RetryPolicy). An empty etag makes the call fail with ErrInvalid before sending
// anything, so that a missing ETag never turns into an unconditional change.
func IfMatch(etag string) CallOption {
	return func(o *callOptions) { o.ifMatch, o.hasIfMatch = etag, true }
}

// WithIdempotencyKey makes a creating call (CreateEVSE, CreateConnector) send key as
// its Idempotency-Key instead of one the client makes up. Reuse a key to repeat a call
// whose outcome you do not know, for example after a restart of your program: the
// service answers with the first call's answer (Response.Replayed) and creates nothing.
// The same key with another body fails with ErrIdempotencyKeyReused. key must be 1 to 255
// characters; an empty key makes the call fail with ErrInvalid before sending anything.
func WithIdempotencyKey(key string) CallOption {
	return func(o *callOptions) { o.idemKey, o.hasIdemKey = key, true }
}

// ifMatchParam returns the If-Match to send, nil for none, or an error for an empty ETag.
func (o *callOptions) ifMatchParam(op string) (*string, error) {
	if !o.hasIfMatch {
		return nil, nil
	}
	if o.ifMatch == "" {
		return nil, fmt.Errorf("chargenet: %s: IfMatch with an empty ETag: %w", op, ErrInvalid)
	}
	return &o.ifMatch, nil
}

// idempotencyKeyParam returns the caller's Idempotency-Key or a new one, or an error
// for an empty key.
func (o *callOptions) idempotencyKeyParam(op string) (*string, error) {
	if !o.hasIdemKey {
		key := newIdempotencyKey()
		return &key, nil
	}
	if o.idemKey == "" {
		return nil, fmt.Errorf("chargenet: %s: WithIdempotencyKey with an empty key: %w", op, ErrInvalid)
	}
	return &o.idemKey, nil
}

// record fills the caller's Response, if one was asked for, from the answer res to a
// request that carried the Idempotency-Key idemKey (or none).
func (o *callOptions) record(res *http.Response, idemKey *string) {
	if o.response == nil || res == nil {
		return
	}
	r := Response{
		StatusCode: res.StatusCode,
		RequestID:  res.Header.Get("X-Request-Id"),
		RateLimit:  rateLimitFrom(res.Header),
		ETag:       res.Header.Get("ETag"),
		Replayed:   res.Header.Get("Idempotent-Replayed") == "true",
	}
	if res.StatusCode == http.StatusCreated {
		r.Location = res.Header.Get("Location")
	}
	if idemKey != nil {
		r.IdempotencyKey = *idemKey
	}
	*o.response = r
}

// newIdempotencyKey returns a random key in the form of a version 4 UUID.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
