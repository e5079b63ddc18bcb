package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	ocpigen "github.com/chargenet/chargenet/gen/ocpi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

var (
	ocpiOnce   sync.Once
	ocpiDoc    *openapi3.T
	ocpiRouter routers.Router
	ocpiErr    error
)

func ocpiContract() (*openapi3.T, routers.Router, error) {
	ocpiOnce.Do(func() {
		ocpiDoc, ocpiErr = ocpigen.GetSpec()
		if ocpiErr != nil {
			return
		}
		ocpiDoc.Servers = nil
		ocpiRouter, ocpiErr = legacy.NewRouter(ocpiDoc)
	})
	return ocpiDoc, ocpiRouter, ocpiErr
}

// CheckOCPIExchange returns an error if the answer to req (under /ocpi) is not what the
// OCPI contract documents for the request's operation: an undocumented status, a
// missing required header, a body that does not match its schema. Every answer must
// carry X-Request-ID and X-Correlation-ID, equal to the request's when it sent valid
// ones; a request outside the contract must be answered 404 or 405, and every refusal
// in the OCPI envelope without data.
func CheckOCPIExchange(req *http.Request, status int, header http.Header, body []byte) error {
	d, r, err := ocpiContract()
	if err != nil {
		return fmt.Errorf("loading the OCPI contract: %w", err)
	}
	for _, h := range []string{"X-Request-ID", "X-Correlation-ID"} {
		got := header.Get(h)
		if got == "" {
			return fmt.Errorf("%s %s: %d answer without %s", req.Method, req.URL.Path, status, h)
		}
		if sent := req.Header.Get(h); sent != "" && len(sent) <= 255 && !strings.ContainsAny(sent, " \t") && got != sent {
			return fmt.Errorf("%s %s: %s %q answered as %q", req.Method, req.URL.Path, h, sent, got)
		}
	}
	route, params, ferr := findOperation(r, req)
	if ferr == nil && !strings.HasPrefix(route.Path, "/ocpi") {
		ferr = fmt.Errorf("%s is an operation chargenet calls, not one it serves", route.Path)
	}
	if ferr != nil {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s is outside the OCPI contract but was answered %d", req.Method, req.URL.Path, status)
		}
		return checkOCPIRefusal(d, status, body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s answered %d off the OCPI contract: %w\nbody: %.500s", req.Method, req.URL.Path, status, err, body)
	}
	if status >= 400 {
		return checkOCPIRefusal(d, status, body)
	}
	return nil
}

// checkOCPIRefusal checks that a refusal is the OCPI envelope without data, with a
// status code of the class its HTTP status means.
func checkOCPIRefusal(d *openapi3.T, status int, body []byte) error {
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("refusal is not JSON: %w: %.200s", err, body)
	}
	if err := d.Components.Schemas["StatusResponse"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("refusal is not the OCPI envelope: %w: %.200s", err, body)
	}
	if _, ok := v["data"]; ok {
		return fmt.Errorf("refusal carries data: %.200s", body)
	}
	code, _ := v["status_code"].(float64)
	switch {
	case status >= 500 && (code < 3000 || code >= 4000):
		return fmt.Errorf("HTTP %d with status_code %v, not 3xxx", status, code)
	case status >= 400 && status < 500 && (code < 2000 || code >= 3000):
		return fmt.Errorf("HTTP %d with status_code %v, not 2xxx", status, code)
	}
	return nil
}

// CheckOCPIRequest returns an error if a request chargenet made to a partner, with its
// body, is not what the OCPI contract's partner operations describe: the partner
// publishes its URLs at the contract's /partner paths, so the request's path is the
// operation's.
func CheckOCPIRequest(req *http.Request, body []byte) error {
	_, r, err := ocpiContract()
	if err != nil {
		return fmt.Errorf("loading the OCPI contract: %w", err)
	}
	probe := req.Clone(context.Background())
	probe.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := findOperation(r, probe)
	if err != nil {
		return fmt.Errorf("%s %s: no partner operation of the OCPI contract: %w", req.Method, req.URL.Path, err)
	}
	if !strings.HasPrefix(route.Path, "/partner") {
		return fmt.Errorf("%s %s is an operation chargenet serves, not one it calls", req.Method, req.URL.Path)
	}
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s sent off the OCPI contract: %w\nbody: %.500s", req.Method, req.URL.Path, err, body)
	}
	return nil
}

// OCPITransport wraps an http.RoundTripper (nil means http.DefaultTransport) and checks
// every exchange with chargenet's /ocpi through it against the OCPI contract (see
// CheckOCPIExchange), failing t on any violation.
func OCPITransport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	return checkingTransport(t, base, "OCPI contract violation", CheckOCPIExchange)
}
