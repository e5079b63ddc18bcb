package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/labstack/echo/v4"
)

// Error is an error the HTTP layer itself raises (authentication, validation, limits),
// already carrying its status and the Error body fields. It is the one the request
// validator raises (package httpcheck), which a mount answers in its own body.
type Error = httpcheck.Error

func newError(status int, code, param, format string, args ...any) *Error {
	return httpcheck.Errorf(status, code, param, format, args...)
}

// kinds is the one table from domain error kinds to HTTP statuses and default codes.
var kinds = []struct {
	kind   error
	status int
	code   string
}{
	{chargenet.ErrInvalid, http.StatusBadRequest, chargenet.CodeInvalidParameter},
	{chargenet.ErrNotFound, http.StatusNotFound, chargenet.CodeNotFound},
	{chargenet.ErrConflict, http.StatusConflict, chargenet.CodeConflict},
	{chargenet.ErrPreconditionFailed, http.StatusPreconditionFailed, chargenet.CodePreconditionFailed},
	{chargenet.ErrUnavailable, http.StatusServiceUnavailable, chargenet.CodeUnavailable},
}

// codeOfStatus names the code for errors that only come with a status (from Echo).
var codeOfStatus = map[int]string{
	http.StatusBadRequest:            chargenet.CodeInvalidParameter,
	http.StatusForbidden:             chargenet.CodeUnauthorized,
	http.StatusNotFound:              chargenet.CodeNotFound,
	http.StatusMethodNotAllowed:      chargenet.CodeMethodNotAllowed,
	http.StatusRequestEntityTooLarge: chargenet.CodePayloadTooLarge,
	http.StatusUnsupportedMediaType:  chargenet.CodeUnsupportedMediaType,
	http.StatusTooManyRequests:       chargenet.CodeRateLimited,
	http.StatusServiceUnavailable:    chargenet.CodeUnavailable,
}

// describe maps any error a handler or middleware returns to its HTTP status and the
// contract's Error body (without the request id). Errors that are not domain or HTTP
// errors become a 500 whose message says nothing more than "internal server error";
// internal reports whether that happened, so the caller logs the detail.
func describe(err error) (status int, body gen.Error, internal bool) {
	var (
		he  *Error
		de  *chargenet.Error
		ehe *echo.HTTPError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &he):
		body := errorBody(he.Code, he.Param, he.Message)
		if he.Scope != "" {
			body.Scope = &he.Scope
		}
		return he.Status, body, false
	case errors.As(err, &de):
		for _, k := range kinds {
			if errors.Is(de.Kind, k.kind) {
				code := de.Code
				if code == "" {
					code = k.code
				}
				return k.status, errorBody(code, de.Param, de.Message), false
			}
		}
	case errors.Is(err, chargenet.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, errorBody(chargenet.CodeUnavailable, "", "service temporarily unavailable, retry later"), false
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, errorBody(chargenet.CodePayloadTooLarge, "", fmt.Sprintf("request body exceeds the limit of %d bytes", mbe.Limit)), false
	case errors.As(err, &ehe) && ehe.Code < 500:
		code, ok := codeOfStatus[ehe.Code]
		if !ok {
			code = "http_" + http.StatusText(ehe.Code)
		}
		msg, _ := ehe.Message.(string)
		if msg == "" {
			msg = http.StatusText(ehe.Code)
		}
		// The generated parameter binders report "Invalid format for parameter NAME: ...".
		if rest, ok := strings.CutPrefix(msg, "Invalid format for parameter "); ok && ehe.Code == http.StatusBadRequest {
			if name, why, ok := strings.Cut(rest, ": "); ok {
				return ehe.Code, errorBody(code, name, fmt.Sprintf("parameter %q: %s", name, why)), false
			}
		}
		return ehe.Code, errorBody(code, "", msg), false
	}
	return http.StatusInternalServerError, errorBody(chargenet.CodeInternal, "", "internal server error"), true
}

func errorBody(code, param, message string) gen.Error {
	b := gen.Error{Code: code, Message: message}
	if param != "" {
		b.Param = &param
	}
	return b
}

// errorHandler is Echo's HTTPErrorHandler: every error, whatever its origin, is answered
// with the contract's Error body and the request id.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, body, internal := describe(err)
		body.RequestId = requestID(c)
		var ehe *echo.HTTPError
		if status == http.StatusNotFound && errors.As(err, &ehe) {
			// Echo's router found no route (the contract's router was more lenient, as
			// with a trailing slash): say what was asked for.
			body.Message = fmt.Sprintf("no operation at %s %s", c.Request().Method, c.Request().URL.Path)
		}
		if internal {
			log.ErrorContext(c.Request().Context(), "internal error", "request_id", body.RequestId, "error", err.Error())
		} else if status == http.StatusServiceUnavailable {
			log.WarnContext(c.Request().Context(), "unavailable", "request_id", body.RequestId, "error", err.Error())
		}
		if he := (*Error)(nil); status == http.StatusMethodNotAllowed && errors.As(err, &he) && he.Allow != "" {
			c.Response().Header().Set("Allow", he.Allow)
		}
		var werr error
		if c.Request().Method == http.MethodHead {
			werr = c.NoContent(status)
		} else {
			werr = c.JSON(status, body)
		}
		if werr != nil {
			log.WarnContext(c.Request().Context(), "writing error response", "request_id", body.RequestId, "error", werr.Error())
		}
	}
}
