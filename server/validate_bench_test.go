package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/httpcheck"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// BenchmarkValidateRequest measures the request validator alone: route lookup, the
// security requirement (with an authentication function that accepts), parameters and,
// for the PATCH, the JSON body against its schema.
func BenchmarkValidateRequest(b *testing.B) {
	doc, err := gen.GetSpec()
	if err != nil {
		b.Fatal(err)
	}
	v, err := httpcheck.NewValidator(doc, func(context.Context, *openapi3filter.AuthenticationInput) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	e := echo.New()
	handler := validation(v)(func(echo.Context) error { return nil })
	for _, c := range []struct{ name, method, target, body string }{
		{"GET locations", http.MethodGet, "/v1/locations?limit=25&cursor=abc", ""},
		{"GET EVSE", http.MethodGet, "/v2/evses/1002", ""},
		{"PATCH", http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxElectricPower": 300, "standard": "CHADEMO"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
				req.Header.Set("Authorization", "Bearer x")
				if c.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				if err := handler(e.NewContext(req, httptest.NewRecorder())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScopeCheck measures what the scope check adds to an authenticated request:
// finding the operation's requirement and testing the key's grants. Compare it with
// BenchmarkServeHTTP's cached GET of an EVSE.
func BenchmarkScopeCheck(b *testing.B) {
	doc, err := gen.GetSpec()
	if err != nil {
		b.Fatal(err)
	}
	scopes, err := operationScopes(doc)
	if err != nil {
		b.Fatal(err)
	}
	op := doc.Paths.Find("/v2/evses/{uid}").Get
	grants, _ := chargenet.GrantsOf(chargenet.ScopePartner)
	held := 0
	for b.Loop() {
		need, ok := scopes[op]
		if ok && grants.Has(need.grants) {
			held++
		}
	}
	if held != b.N {
		b.Fatalf("a partner key holds inventory:read in %d of %d checks", held, b.N)
	}
}
