// Package apitest checks HTTP exchanges against the contract, so that no test can pass
// on a response the contract does not describe. Every test that talks to the server goes
// through Check, directly or through Transport.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chargenet/chargenet/gen"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

var (
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	errDoc error
)

func contract() (*openapi3.T, routers.Router, error) {
	once.Do(func() {
		doc, errDoc = gen.GetSpec()
		if errDoc != nil {
			return
		}
		doc.Servers = nil
		router, errDoc = legacy.NewRouter(doc)
	})
	return doc, router, errDoc
}

var (
	releaseOnce   sync.Once
	releaseName   string
	releaseRouter routers.Router
	releaseEvents map[string]bool // "type version" of each payload the release had
	releaseErr    error
)

// lastRelease loads the newest contract in openapi/released (by semantic version): a
// client generated from it must keep working, so an answer to an operation it has must
// still match it.
func lastRelease() (string, routers.Router, error) {
	releaseOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		dir := filepath.Join(filepath.Dir(file), "..", "..", "openapi", "released")
		names, err := filepath.Glob(filepath.Join(dir, "*.*.*.yaml"))
		if err != nil || len(names) == 0 {
			releaseErr = fmt.Errorf("no released contract in %s", dir)
			return
		}
		slices.SortFunc(names, func(a, b string) int { return compareVersions(filepath.Base(a), filepath.Base(b)) })
		releaseName = filepath.Base(names[len(names)-1])
		data, err := os.ReadFile(names[len(names)-1])
		if err != nil {
			releaseErr = err
			return
		}
		d, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			releaseErr = fmt.Errorf("loading %s: %w", releaseName, err)
			return
		}
		d.Servers = nil
		if releaseRouter, releaseErr = legacy.NewRouter(d); releaseErr != nil {
			return
		}
		releaseEvents, releaseErr = releasedPayloads(strings.TrimSuffix(names[len(names)-1], ".yaml") + ".event-types.json")
	})
	return releaseName, releaseRouter, releaseErr
}

// releasedPayloads reads the event catalogue kept beside a released contract and
// returns its payloads as "type version".
func releasedPayloads(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the event catalogue of the release: %w", err)
	}
	var cat struct {
		EventTypes []struct {
			Type        string   `json:"type"`
			APIVersions []string `json:"api_versions"`
		} `json:"event_types"`
	}
	if err := json.Unmarshal(data, &cat); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]bool{}
	for _, t := range cat.EventTypes {
		for _, v := range t.APIVersions {
			out[t.Type+" "+v] = true
		}
	}
	return out, nil
}

// releasedEventsOnly returns an event page with only the events whose type and payload
// version the last release had: the release tells clients that an unpinned read gets
// each type's latest version, and a client of it pins api_version or skips the rest.
func releasedEventsOnly(body []byte) []byte {
	var page map[string]json.RawMessage
	if json.Unmarshal(body, &page) != nil {
		return body
	}
	var items []json.RawMessage
	if json.Unmarshal(page["data"], &items) != nil {
		return body
	}
	kept := items[:0]
	for _, item := range items {
		var ev struct {
			Type       string `json:"type"`
			APIVersion string `json:"api_version"`
		}
		if json.Unmarshal(item, &ev) == nil && !releaseEvents[ev.Type+" "+ev.APIVersion] {
			continue
		}
		kept = append(kept, item)
	}
	page["data"], _ = json.Marshal(kept)
	out, err := json.Marshal(page)
	if err != nil {
		return body
	}
	return out
}

// compareVersions orders file names "MAJOR.MINOR.PATCH.yaml" by their version.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(strings.TrimSuffix(a, ".yaml"), "."), strings.Split(strings.TrimSuffix(b, ".yaml"), ".")
	for i := 0; i < 3 && i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x - y
		}
	}
	return 0
}

// findRESTOperation finds the operation of the REST contract req is for, as the
// server's validator routes it: kin-openapi's router on the decoded path, so that an
// encoded slash (%2F) separates segments ("/v1/locations/a%2Fb" is no operation: 404),
// and a path parameter is never empty.
func findRESTOperation(r routers.Router, req *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := r.FindRoute(req)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range params {
		if v == "" {
			return nil, nil, fmt.Errorf("no operation at %s %s", req.Method, req.URL.Path)
		}
	}
	return route, params, nil
}

// findOperation finds the operation req is for, as Echo routes it (the OCPI server): on the escaped
// path, so that an encoded slash (%2F) stays inside its path parameter, whose value is
// then unescaped. It returns an error if no operation matches or a path parameter is
// empty ("/v1/locations/" matches "/v1/locations/{id}" in the router, not in the server).
func findOperation(r routers.Router, req *http.Request) (*routers.Route, map[string]string, error) {
	probe := *req
	u := *req.URL
	u.Path, u.RawPath = req.URL.EscapedPath(), ""
	probe.URL = &u
	route, params, err := r.FindRoute(&probe)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range params {
		if params[k], err = url.PathUnescape(v); err != nil || v == "" {
			return nil, nil, fmt.Errorf("no operation at %s %s", req.Method, req.URL.Path)
		}
	}
	return route, params, nil
}

// checkLastRelease returns an error if the answer to an operation the last released
// contract has no longer matches that contract.
func checkLastRelease(req *http.Request, status int, header http.Header, body []byte) error {
	name, r, err := lastRelease()
	if err != nil {
		return fmt.Errorf("loading the last released contract: %w", err)
	}
	route, params, ferr := findRESTOperation(r, req)
	if ferr != nil {
		return nil // an operation added since
	}
	if addedSince(req, route, params) {
		return nil // a body only a client of a later contract sends
	}
	if route.Operation.OperationID == "listEvents" && status == http.StatusOK {
		body = releasedEventsOnly(body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s answered %d, which a client of %s cannot read: %w\nbody: %.500s",
			req.Method, req.URL.Path, status, name, err, body)
	}
	return nil
}

// addedSince reports whether req's body is one the current contract accepts and the
// released operation (route, params) refuses: it uses something added since, so no
// client of the release sends it. A request whose body cannot be read again (without
// GetBody, as http.NewRequest sets it) is not.
func addedSince(req *http.Request, released *routers.Route, params map[string]string) bool {
	if req.GetBody == nil || released.Operation.RequestBody == nil {
		return false
	}
	_, r, err := contract()
	if err != nil {
		return false
	}
	current, currentParams, err := findRESTOperation(r, req)
	if err != nil || current.Operation.RequestBody == nil {
		return false
	}
	accepts := func(route *routers.Route, params map[string]string) bool {
		body, err := req.GetBody()
		if err != nil {
			return false
		}
		probe := req.Clone(req.Context())
		probe.Body = body
		in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		return openapi3filter.ValidateRequestBody(req.Context(), in, route.Operation.RequestBody.Value) == nil
	}
	return accepts(current, currentParams) && !accepts(released, params)
}

// unrouted are the service's own paths outside the contract, with the content type
// they answer with.
var unrouted = map[string]bool{"/healthz": true, "/readyz": true, "/openapi.yaml": true, "/docs": true}

// isUnrouted reports whether path is served outside the contract: the operational
// endpoints and the documentation page with its assets.
func isUnrouted(path string) bool {
	return unrouted[path] || strings.HasPrefix(path, "/docs/")
}

// CheckExchange returns an error if the response to req (status, header, body) is not
// what the contract documents for the request's operation: an undocumented status, a
// missing required header, or a body that does not match its schema. A request outside
// the contract (unknown path or method) must be answered 404 or 405 with an Error body.
// Every response must carry X-Request-Id, and every error body's requestId must equal it.
func CheckExchange(req *http.Request, status int, header http.Header, body []byte) error {
	d, r, err := contract()
	if err != nil {
		return fmt.Errorf("loading the contract: %w", err)
	}
	if header.Get("X-Request-Id") == "" {
		return fmt.Errorf("%s %s: %d response without X-Request-Id", req.Method, req.URL.Path, status)
	}
	outside := isUnrouted(req.URL.Path)
	if outside && status < 400 {
		return nil
	}
	route, params, ferr := findRESTOperation(r, req)
	if ferr != nil || outside {
		documented := status == http.StatusNotFound || status == http.StatusMethodNotAllowed ||
			(outside && status == http.StatusServiceUnavailable)
		if !documented {
			return fmt.Errorf("%s %s is outside the contract but was answered %d", req.Method, req.URL.Path, status)
		}
		return checkErrorBody(d, header, body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s answered %d off-contract: %w\nbody: %.500s", req.Method, req.URL.Path, status, err, body)
	}
	if err := checkLastRelease(req, status, header, body); err != nil {
		return err
	}
	if status >= 400 {
		return checkErrorBody(d, header, body)
	}
	return nil
}

func checkErrorBody(d *openapi3.T, header http.Header, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error body is not JSON: %w: %.200s", err, body)
	}
	if err := d.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("error body does not match the Error schema: %w: %.200s", err, body)
	}
	if id := v.(map[string]any)["requestId"]; id != header.Get("X-Request-Id") {
		return fmt.Errorf("error body requestId %v differs from X-Request-Id %q", id, header.Get("X-Request-Id"))
	}
	return nil
}

// Check fails the test if the exchange is off-contract (see CheckExchange).
func Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := CheckExchange(req, status, header, body); err != nil {
		t.Error(err)
	}
}

// Transport wraps an http.RoundTripper (nil means http.DefaultTransport) and checks
// every exchange through it against the contract, failing t on any violation. Use it
// for clients that talk to a real server.
func Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	return checkingTransport(t, base, "contract violation", CheckExchange)
}

// checkingTransport wraps base (nil means http.DefaultTransport) and fails t, with
// what's message, when check finds an exchange through it off its contract.
func checkingTransport(t testing.TB, base http.RoundTripper, what string,
	check func(*http.Request, int, http.Header, []byte) error) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		// The request body has been consumed by the time the response arrives; the
		// checks only need the method, URL and headers.
		probe := req.Clone(req.Context())
		probe.Body = http.NoBody
		res, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			return nil, err
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		if cerr := check(probe, res.StatusCode, res.Header, body); cerr != nil {
			t.Errorf("%s: %v", what, cerr)
		}
		return res, nil
	})
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
