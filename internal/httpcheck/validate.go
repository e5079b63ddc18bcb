package httpcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chargenet/chargenet"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Validator checks requests against a contract before a handler sees them: the route,
// the security requirement (through the contract's AuthenticationFunc), parameters and
// body. Create it with NewValidator; it is safe for concurrent use.
type Validator struct {
	router  routers.Router
	options *openapi3filter.Options
	allowed map[string][]string // path template -> methods, for 405's Allow header
}

// NewValidator returns the Validator of doc, whose security requirements auth checks.
// It matches requests on their path only, whatever Host they name (doc's servers are
// dropped). It returns an error when doc's paths cannot be routed.
func NewValidator(doc *openapi3.T, auth openapi3filter.AuthenticationFunc) (*Validator, error) {
	doc.Servers = nil // match on path only, whatever Host the client used
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("building the request router from the contract: %w", err)
	}
	v := &Validator{
		router: router,
		options: &openapi3filter.Options{
			AuthenticationFunc: auth,
			KeepValidatedValue: true,
			MultiError:         false,
		},
		allowed: map[string][]string{},
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			v.allowed[path] = append(v.allowed[path], method)
		}
		sort.Strings(v.allowed[path])
	}
	return v, nil
}

// Allowed returns the methods of each path template of the contract, sorted: the Allow
// header of a 405 on a path that fits the template. The map is the Validator's; do not
// change it.
func (v *Validator) Allowed() map[string][]string { return v.allowed }

// Check validates req against the contract; ctx is what the AuthenticationFunc gets.
// It reads a body the operation takes and puts an equal one back. Errors: an *Error
// naming the parameter or body field (400, 415), 404 for a path of no operation, 405
// (with Allow) for a method the path does not take; the AuthenticationFunc's error when
// it is an *Error or an unavailable store's (see validationError).
func (v *Validator) Check(ctx context.Context, req *http.Request) error {
	route, params, err := v.router.FindRoute(req)
	if err == nil && hasEmpty(params) {
		// The router lets a template's last parameter match nothing ("/v1/locations"
		// for "/v1/locations/{id}"): that is not the operation's path.
		err = errNoRoute
	}
	if err != nil {
		for path, methods := range v.allowed {
			if MatchesTemplate(req.URL.Path, path) {
				allow := strings.Join(methods, ", ")
				e := Errorf(http.StatusMethodNotAllowed, chargenet.CodeMethodNotAllowed, "",
					"method %s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, allow)
				e.Allow = allow
				return e
			}
		}
		return Errorf(http.StatusNotFound, chargenet.CodeNotFound, "", "no operation at %s %s", req.Method, req.URL.Path)
	}
	input := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options:    v.options,
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody && route.Operation.RequestBody != nil {
		// Kept to look for duplicate keys, which decoding into a value hides.
		if body, err = io.ReadAll(req.Body); err != nil {
			return validationError(err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	rawQuery := req.URL.RawQuery // the validator writes defaults into the query
	if err := openapi3filter.ValidateRequest(ctx, input); err != nil {
		return validationError(err)
	}
	// After authentication: the answer carries the key's rate limit headers.
	if name, empty := emptyQueryParameter(rawQuery); empty {
		code := chargenet.CodeInvalidParameter
		if name == "cursor" {
			code = chargenet.CodeInvalidCursor
		}
		return Errorf(http.StatusBadRequest, code, name, "query parameter %q has no value; leave it out to start at the first page or use the default", name)
	}
	if key, path := duplicateKey(body); key != "" {
		return Errorf(http.StatusBadRequest, chargenet.CodeInvalidBody, path,
			"request body: key %q appears more than once%s; send each field once", key, at(path))
	}
	return nil
}

// duplicateKey returns the first object key that appears twice in the same object of
// the JSON document body, with the path of that object ("" for the top level; an object
// in an array has the array's path), or "" if there is none. body is a document the
// schema check accepted: for anything else the answer is "", or a key that appears twice
// as far as the text can be read. It reads body once, without decoding values; a key
// written with escapes, or holding bytes that are not UTF-8, is compared as it decodes
// ("a" and "\u0061" are the same key, and so are two keys whose invalid bytes decode to
// U+FFFD at the same places).
func duplicateKey(body []byte) (key, path string) {
	const linearKeys = 16
	var (
		stack     []keyFrame
		keys      [][]byte // the keys of the open objects, outermost first
		expectKey bool     // in an object, the next string is a key
	)
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{':
			stack = append(stack, keyFrame{object: true, start: len(keys)})
			expectKey = true
		case '[':
			stack = append(stack, keyFrame{start: len(keys)})
			expectKey = false
		case '}', ']':
			if len(stack) == 0 {
				return "", ""
			}
			keys = keys[:stack[len(stack)-1].start]
			if stack = stack[:len(stack)-1]; len(stack) == 0 {
				return "", ""
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
		case '"':
			j, escaped := i+1, false
			for ; j < len(body) && body[j] != '"'; j++ {
				if body[j] == '\\' {
					j++
					escaped = true
				}
			}
			if j >= len(body) {
				return "", ""
			}
			if expectKey && len(stack) > 0 {
				k := body[i+1 : j]
				if escaped || !utf8.Valid(k) {
					var s string
					if json.Unmarshal(body[i:j+1], &s) != nil {
						return "", ""
					}
					k = []byte(s)
				}
				top := &stack[len(stack)-1]
				if top.set != nil {
					if _, dup := top.set[string(k)]; dup {
						return string(k), keyPath(stack, keys)
					}
					top.set[string(k)] = struct{}{}
				} else {
					for _, seen := range keys[top.start:] {
						if bytes.Equal(seen, k) {
							return string(k), keyPath(stack, keys)
						}
					}
					if len(keys)-top.start == linearKeys {
						top.set = make(map[string]struct{}, 2*linearKeys)
						for _, seen := range keys[top.start:] {
							top.set[string(seen)] = struct{}{}
						}
						top.set[string(k)] = struct{}{}
					}
				}
				keys = append(keys, k)
				expectKey = false
			}
			i = j
		}
	}
	return "", ""
}

// keyFrame is an object or array open at the point duplicateKey reads.
type keyFrame struct {
	object bool
	start  int                 // where the object's keys begin in duplicateKey's keys
	set    map[string]struct{} // the keys, once there are more than a few
}

// keyPath is the path of the innermost container of stack: the keys under which the
// objects hold the next container, each escaped by escapeKey and joined by "." (an
// empty key adds nothing).
func keyPath(stack []keyFrame, keys [][]byte) string {
	var parts []string
	for k := 1; k < len(stack); k++ {
		if stack[k-1].object && stack[k].start > stack[k-1].start && len(keys[stack[k].start-1]) > 0 {
			parts = append(parts, escapeKey(string(keys[stack[k].start-1])))
		}
	}
	return strings.Join(parts, ".")
}

// keyEscaper writes a "\" or "." inside a key with a backslash before it.
var keyEscaper = strings.NewReplacer(`\`, `\\`, ".", `\.`)

// escapeKey is key as one segment of a body path: a "." or "\" in it gets a backslash
// before it, so that {"a.b": {...}} ("a\.b") and {"a": {"b": {...}}} ("a.b") have
// different paths. The contract documents this for Error.param.
func escapeKey(key string) string {
	if !strings.ContainsAny(key, `.\`) {
		return key
	}
	return keyEscaper.Replace(key)
}

// at renders a body path for a message: " in object \"a.b\"", or "" at the top level.
func at(path string) string {
	if path == "" {
		return ""
	}
	return fmt.Sprintf(" in object %q", path)
}

// validationError turns what openapi3filter reports into an *Error (or passes through
// what the AuthenticationFunc returned), naming the parameter or body field.
func validationError(err error) error {
	var sre *openapi3filter.SecurityRequirementsError
	if errors.As(err, &sre) {
		for _, e := range sre.Errors {
			var he *Error
			if errors.As(e, &he) || errors.Is(e, chargenet.ErrUnavailable) || errors.Is(e, context.DeadlineExceeded) {
				return e
			}
		}
		return Errorf(http.StatusForbidden, chargenet.CodeUnauthorized, "Authorization", "a valid API key is required")
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		return err // unexpected: the interface answers it as an internal error and logs the detail
	}
	if p := re.Parameter; p != nil {
		code := chargenet.CodeInvalidParameter
		if p.Name == "cursor" && p.In == openapi3.ParameterInQuery {
			code = chargenet.CodeInvalidCursor
		}
		return Errorf(http.StatusBadRequest, code, p.Name, "%s parameter %q: %s", p.In, p.Name, reason(re))
	}
	if strings.HasPrefix(re.Reason, "header Content-Type has unexpected value") {
		ct := re.Input.Request.Header.Get("Content-Type")
		return Errorf(http.StatusUnsupportedMediaType, chargenet.CodeUnsupportedMediaType, "Content-Type",
			"request body has Content-Type %q; only application/json is accepted", ct)
	}
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		path := se.JSONPointer()
		// `property "x" is unsupported`: the offending field is the property itself.
		if name, ok := strings.CutPrefix(se.Reason, `property "`); ok {
			if name, _, ok = strings.Cut(name, `" is unsupported`); ok {
				path = append(path, name)
			}
		}
		field := fieldPath(path)
		if field == "" {
			return Errorf(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body: %s", SchemaReason(se))
		}
		return Errorf(http.StatusBadRequest, chargenet.CodeInvalidBody, field, "request body: field %q: %s", field, SchemaReason(se))
	}
	if errors.Is(re.Err, openapi3filter.ErrInvalidRequired) {
		return Errorf(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body is required")
	}
	return Errorf(http.StatusBadRequest, chargenet.CodeInvalidBody, "", "request body: %s", reason(re))
}

// fieldPath writes a JSON pointer's segments as a field path: "event_types[0].type".
func fieldPath(segments []string) string {
	var b strings.Builder
	for _, seg := range segments {
		if _, err := strconv.Atoi(seg); err == nil && b.Len() > 0 {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// reason is the first line of a request error's cause, without the schema dump.
func reason(re *openapi3filter.RequestError) string {
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		return SchemaReason(se)
	}
	msg := re.Reason
	if re.Err != nil {
		msg = re.Err.Error()
	}
	var pe *openapi3filter.ParseError
	if errors.As(re.Err, &pe) {
		msg = pe.Reason
		if c := pe.RootCause(); c != nil {
			msg = strings.TrimSpace(pe.Reason + " " + rootMessage(c))
		}
		if msg == "" {
			msg = "malformed value"
		}
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

func rootMessage(err error) string {
	msg := err.Error()
	// strconv errors repeat the input, which may be long or binary: keep only the cause.
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "(" + msg + ")"
}

// SchemaReason is what a schema error says of the value it refused, without the schema
// dump: its reason, or the schema field it failed.
func SchemaReason(se *openapi3.SchemaError) string {
	if se.Reason != "" {
		return se.Reason
	}
	return fmt.Sprintf("does not match the schema's %q", se.SchemaField)
}

// emptyQueryParameter returns the first query parameter given without a value
// ("limit=" or "limit"), which the contract's parameters never accept.
func emptyQueryParameter(raw string) (string, bool) {
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		name, value, _ := strings.Cut(part, "=")
		if part != "" && value == "" {
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			return name, true
		}
	}
	return "", false
}

// errNoRoute marks a path that matched a template only through an empty parameter.
var errNoRoute = errors.New("no route")

func hasEmpty(params map[string]string) bool {
	for _, v := range params {
		if v == "" {
			return true
		}
	}
	return false
}
