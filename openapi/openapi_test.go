package openapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chargenet/chargenet/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func load(t *testing.T, data []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	require.NoError(t, err)
	return doc
}

// example is one example found in the document, with the schema it must satisfy.
type example struct {
	where  string
	schema *openapi3.Schema
	value  any
}

// examples collects every example of media types and parameters in the document.
func examples(doc *openapi3.T) []example {
	var out []example
	media := func(where string, mt *openapi3.MediaType) {
		if mt == nil || mt.Schema == nil {
			return
		}
		if mt.Example != nil {
			out = append(out, example{where + " example", mt.Schema.Value, mt.Example})
		}
		for name, ex := range mt.Examples {
			out = append(out, example{where + " examples." + name, mt.Schema.Value, ex.Value.Value})
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			at := method + " " + path
			for _, p := range append(item.Parameters, op.Parameters...) {
				if p.Value.Example != nil {
					out = append(out, example{at + " parameter " + p.Value.Name, p.Value.Schema.Value, p.Value.Example})
				}
			}
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					media(at+" request "+ct, mt)
				}
			}
			for code, r := range op.Responses.Map() {
				for ct, mt := range r.Value.Content {
					media(at+" response "+code+" "+ct, mt)
				}
			}
		}
	}
	return out
}

func TestSpecIsValid(t *testing.T) {
	doc := load(t, openapi.Spec)
	require.NoError(t, doc.Validate(context.Background(), openapi3.EnableExamplesValidation()))
	assert.Equal(t, "3.0.3", doc.OpenAPI)
	assert.Equal(t, "2.15.0", doc.Info.Version)
}

func TestEveryExampleMatchesItsSchema(t *testing.T) {
	doc := load(t, openapi.Spec)
	exs := examples(doc)
	require.Greater(t, len(exs), 20, "the contract should carry examples for every operation")
	for _, ex := range exs {
		assert.NoError(t, ex.schema.VisitJSON(ex.value), ex.where)
	}
}

// TestBadExampleIsCaught shows the check above can fail: an example that breaks its
// schema (maxVoltage over the bound) is reported.
func TestBadExampleIsCaught(t *testing.T) {
	spec := strings.Replace(string(openapi.Spec), "maxElectricPower: 350\n                  maxAmperage: 500", "maxElectricPower: 99999\n                  maxAmperage: 500", 1)
	require.NotEqual(t, string(openapi.Spec), spec, "the edit must apply")
	doc := load(t, []byte(spec))
	var failed []string
	for _, ex := range examples(doc) {
		if ex.schema.VisitJSON(ex.value) != nil {
			failed = append(failed, ex.where)
		}
	}
	assert.Equal(t, []string{"PATCH /v2/evses/{uid}/connectors/{connectorId} request application/json examples.power"}, failed)
}

func TestEveryOperationIsDocumented(t *testing.T) {
	doc := load(t, openapi.Spec)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			at := method + " " + path
			assert.NotEmpty(t, op.OperationID, at)
			assert.NotEmpty(t, op.Summary, at)
			assert.NotEmpty(t, op.Description, at)
			assert.NotEmpty(t, op.Tags, at)
			for _, code := range []string{"403", "500"} {
				r := op.Responses.Value(code)
				if assert.NotNil(t, r, "%s documents %s", at, code) {
					assert.Equal(t, "Error", refName(r.Value.Content.Get("application/json").Schema.Ref), "%s %s uses Error", at, code)
				}
			}
			if strings.Contains(path, "{") {
				// A PUT creates what it addresses when it is missing: it has no 404.
				if method != "PUT" {
					assert.NotNil(t, op.Responses.Value("404"), "%s documents 404", at)
				}
				assert.NotNil(t, op.Responses.Value("400"), "%s documents 400", at)
			}
		}
	}
	assert.NotNil(t, doc.Paths.Find("/v2/evses/{uid}/connectors/{connectorId}").Patch)
	assert.NotNil(t, doc.Paths.Find("/emsp/v1/webhooks/event_types").Get)
	assert.NotNil(t, doc.Paths.Find("/v1/locations").Get)
}

func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }
