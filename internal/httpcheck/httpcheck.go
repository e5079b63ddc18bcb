// Package httpcheck holds what chargenet's two HTTP interfaces, the REST API (package
// server) and OCPI (package ocpi), share of the checks a request goes through before
// its operation runs: validation against an OpenAPI contract (Validator), and Error,
// the refusal these checks and the rest of the HTTP layer (authentication, limits)
// return. Each interface answers an Error in its own body. It does not import Echo:
// each interface wraps Validator.Check in its own middleware.
package httpcheck

import (
	"fmt"
	"strings"
)

// Error is a refusal of the HTTP layer itself (validation, authentication, limits),
// already carrying its status and the fields of the REST contract's Error body.
type Error struct {
	Status  int
	Code    string
	Param   string
	Message string
	Scope   string // the scope missing, with CodeInsufficientScope
	// Allow is the Allow header of a 405: the methods of the path.
	Allow string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the message format and args make.
func Errorf(status int, code, param, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// MatchesTemplate reports whether a concrete path fits a path template of a contract
// ("/v2/evses/{uid}"); an empty segment is no value of a path parameter.
func MatchesTemplate(path, template string) bool {
	ps, ts := strings.Split(path, "/"), strings.Split(template, "/")
	if len(ps) != len(ts) {
		return false
	}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") {
			if ps[i] == "" { // an empty segment is no value of a path parameter
				return false
			}
		} else if ts[i] != ps[i] {
			return false
		}
	}
	return true
}

// EchoPath writes a path template of a contract as Echo registers it: /v2/evses/{uid}
// becomes /v2/evses/:uid.
func EchoPath(template string) string {
	parts := strings.Split(template, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = ":" + p[1:len(p)-1]
		}
	}
	return strings.Join(parts, "/")
}
