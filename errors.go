package chargenet

import (
	"errors"
	"fmt"
)

// Kinds of domain error. Every error a Store or a domain rule returns wraps exactly one
// of them, so callers (and the HTTP layer's single status table) can use errors.Is.
var (
	// ErrNotFound reports that the addressed EVSE, connector, location or key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid reports input that breaks a rule; the *Error names the field.
	ErrInvalid = errors.New("invalid")
	// ErrConflict reports a request that cannot be applied in the resource's current state
	// (a deleted connector, a duplicate identifier).
	ErrConflict = errors.New("conflict")
	// ErrPreconditionFailed reports an If-Match that does not match the current ETag.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrUnavailable reports that the database cannot be reached; the request may be retried.
	ErrUnavailable = errors.New("unavailable")
)

// Stable machine-readable error codes, as documented in the contract's Error schema.
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
	CodeConnectorDeleted     = "connector_deleted"
	CodeEVSERemoved          = "evse_removed"
	CodeInvalidTransition    = "invalid_transition"
	CodeLocationDeleted      = "location_deleted"
	CodeLocationInUse        = "location_in_use"
	CodeIdempotencyKeyInUse  = "idempotency_key_in_use"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeWebhookDisabled      = "webhook_disabled"
	CodeConflict             = "conflict"
	CodePreconditionFailed   = "precondition_failed"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeRateLimited          = "rate_limited"
	CodeInternal             = "internal_error"
	CodeUnavailable          = "unavailable"
)

// Error is a domain error: a kind (one of the Err* sentinels), a stable code, the
// offending parameter or field when there is one, and a message for humans.
type Error struct {
	Kind    error
	Code    string
	Param   string
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the kind, so errors.Is(err, ErrNotFound) works.
func (e *Error) Unwrap() error { return e.Kind }

// Errorf builds an *Error of the given kind and code about param.
func Errorf(kind error, code, param, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// WrapStoreError is how a store reports the failure err of operation op. Nil stays nil,
// and a domain error (an *Error, also when wrapped) is returned as it is. Any other error
// is wrapped as "<store>: <op>: <err>"; when unavailable(err) reports that the database
// cannot be used right now (a retry later may succeed), the result also wraps an
// ErrUnavailable *Error whose message, "database unavailable", is all a client may see.
// The cause stays visible to errors.Is and errors.As.
func WrapStoreError(store, op string, err error, unavailable func(error) bool) error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%s: %s: %w: %w", store, op, Errorf(ErrUnavailable, CodeUnavailable, "", "database unavailable"), err)
	}
	return fmt.Errorf("%s: %s: %w", store, op, err)
}
