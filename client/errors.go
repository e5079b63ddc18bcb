package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chargenet/chargenet/gen"
)

// Sentinel errors, one per kind of answer a caller may want to act on. Every answer
// other than the operation's success is returned as an *Error, and errors.Is matches
// that *Error against the sentinel of its HTTP status (see Error.Is):
//
//	if errors.Is(err, client.ErrNotFound) { ... }
var (
	// ErrInvalid matches a 400 answer: a parameter, cursor or request body that the
	// service rejected (codes invalid_parameter, invalid_cursor, invalid_body,
	// invalid_connector). Error.Param names the offending field.
	ErrInvalid = errors.New("chargenet: invalid request")
	// ErrForbidden matches a 403 answer: the API key is missing, malformed, unknown or
	// revoked (code unauthorized), has expired or its secret was replaced by a rotation
	// (code key_expired), or does not hold the scope the operation needs (code
	// insufficient_scope: Error.Scope names it). The service never answers 401.
	ErrForbidden = errors.New("chargenet: forbidden")
	// ErrNotFound matches a 404 answer: the EVSE, connector, location, charge box or API
	// key does not exist.
	ErrNotFound = errors.New("chargenet: not found")
	// ErrConflict matches a 409 answer: the change contradicts the state of what it
	// addresses. Error.Code says how: the connector was deleted (connector_deleted), the
	// EVSE is removed (evse_removed), the status transition is not allowed
	// (invalid_transition), the location was deleted (location_deleted) or still has
	// EVSEs (location_in_use), an identifier is taken (conflict), or a request with the
	// same Idempotency-Key is still running (idempotency_key_in_use).
	ErrConflict = errors.New("chargenet: conflict")
	// ErrPreconditionFailed matches a 412 answer: the If-Match ETag no longer matches the
	// EVSE, so somebody changed it since it was read; nothing was changed. Read it again
	// and redo the update.
	ErrPreconditionFailed = errors.New("chargenet: precondition failed")
	// ErrIdempotencyKeyReused matches a 422 answer: the Idempotency-Key (see
	// WithIdempotencyKey) was used before for a request with another body or operation
	// (code idempotency_key_reused); nothing was changed. Use a new key for a new request.
	ErrIdempotencyKeyReused = errors.New("chargenet: idempotency key reused")
	// ErrRateLimited matches a 429 answer: the API key exceeded its request rate;
	// Error.RetryAfter says how long to wait.
	ErrRateLimited = errors.New("chargenet: rate limited")
	// ErrUnavailable matches a 503 answer (the service cannot reach its database) and
	// the 502 and 504 answers of gateways in front of it; retrying later may succeed.
	ErrUnavailable = errors.New("chargenet: service unavailable")
)

// Error codes the service documents in the contract's Error schema, as found in
// Error.Code. New codes may be added; treat an unknown code by its StatusCode (or with
// errors.Is and the sentinel errors).
const (
	CodeInvalidParameter     = "invalid_parameter"
	CodeInvalidCursor        = "invalid_cursor"
	CodeInvalidBody          = "invalid_body"
	CodeInvalidConnector     = "invalid_connector"
	CodeUnauthorized         = "unauthorized"
	CodeInsufficientScope    = "insufficient_scope"
	CodeKeyExpired           = "key_expired"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeConflict             = "conflict"
	CodeConnectorDeleted     = "connector_deleted"
	CodeEVSERemoved          = "evse_removed"
	CodeInvalidTransition    = "invalid_transition"
	CodeLocationDeleted      = "location_deleted"
	CodeLocationInUse        = "location_in_use"
	CodeIdempotencyKeyInUse  = "idempotency_key_in_use"
	CodePreconditionFailed   = "precondition_failed"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeWebhookDisabled      = "webhook_disabled"
	CodeRateLimited          = "rate_limited"
	CodeInternalError        = "internal_error"
	CodeUnavailable          = "unavailable"
)

// Error is an answer of the service other than the operation's success, usually a 4xx
// or 5xx with the contract's Error body. Use errors.Is with the sentinel errors
// (ErrNotFound, ErrInvalid, ...) to classify it, and errors.As to read its fields:
//
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) { log.Print(apiErr.Code, apiErr.Param, apiErr.RequestID) }
type Error struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Code is the stable machine-readable code (CodeNotFound, CodeInvalidBody, ...).
	// It is empty when the body was not the contract's Error (for example an HTML page
	// from a proxy).
	Code string
	// Message says what is wrong and where. When the body was not the contract's Error
	// it is the HTTP status text, followed by the start of the body if that was text.
	Message string
	// Param is the offending path or query parameter, header or body field (for example
	// "maxVoltage" or "cursor"), or empty.
	Param string
	// Scope is the scope the operation needs and the API key does not hold (with code
	// insufficient_scope), or empty.
	Scope string
	// RequestID identifies the request at the service (the body's requestId, else the
	// X-Request-Id header); quote it when you contact support.
	RequestID string
	// RetryAfter is the wait the service asked for in a Retry-After header (on 429 and
	// possibly 503), or zero.
	RetryAfter time.Duration
	// RateLimit is the API key's request budget from the answer's X-RateLimit-* headers,
	// or nil when it had none (see Response.RateLimit).
	RateLimit *RateLimit

	op string // "GET /v2/evses/1001", for the message
}

// Error returns a one-line description: the operation, the status and code, the
// message and the request id.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("chargenet: ")
	if e.op != "" {
		b.WriteString(e.op)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request id ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is the sentinel error of e's HTTP status: ErrInvalid for
// 400, ErrForbidden for 403, ErrNotFound for 404, ErrConflict for 409,
// ErrPreconditionFailed for 412, ErrIdempotencyKeyReused for 422, ErrRateLimited for
// 429 and ErrUnavailable for 502, 503 and 504. Other statuses (500, for example) match
// no sentinel.
func (e *Error) Is(target error) bool {
	return target != nil && sentinelOf(e.StatusCode) == target
}

func sentinelOf(status int) error {
	switch status {
	case http.StatusBadRequest:
		return ErrInvalid
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case http.StatusUnprocessableEntity:
		return ErrIdempotencyKeyReused
	case http.StatusTooManyRequests:
		return ErrRateLimited
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return ErrUnavailable
	}
	return nil
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// newError describes an answer that is not the operation's success. body is what was
// read of it; now resolves a Retry-After given as an HTTP date.
func newError(op string, status int, header http.Header, body []byte, now time.Time) *Error {
	e := &Error{StatusCode: status, RequestID: header.Get("X-Request-Id"), RateLimit: rateLimitFrom(header), op: op}
	if d, ok := parseRetryAfter(header.Get("Retry-After"), now); ok {
		e.RetryAfter = d
	}
	var b gen.Error
	if json.Unmarshal(body, &b) == nil && (b.Code != "" || b.Message != "") {
		e.Code, e.Message = b.Code, b.Message
		if b.Param != nil {
			e.Param = *b.Param
		}
		if b.Scope != nil {
			e.Scope = *b.Scope
		}
		if b.RequestId != "" {
			e.RequestID = b.RequestId
		}
		return e
	}
	e.Message = http.StatusText(status)
	if e.Message == "" {
		e.Message = "unexpected answer"
	}
	if text := bodyText(body); text != "" {
		e.Message += ": " + text
	}
	return e
}

// bodyText returns the start of body on one line if it is UTF-8 text, else "".
func bodyText(body []byte) string {
	const max = 200
	if !utf8.Valid(body) {
		return ""
	}
	text := strings.Join(strings.Fields(string(body)), " ")
	if len(text) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	return text
}
