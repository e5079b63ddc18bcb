package enumcheck_test

import (
	"strings"
	"testing"

	"github.com/chargenet/chargenet/internal/enumcheck"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// released is a small contract with an enum in a component used by an answer, an
// inline enum in a request body, one in a query parameter and one only in a callback.
const released = `
openapi: 3.0.3
info: {title: t, version: 1.0.0}
paths:
  /things:
    get:
      parameters:
        - {name: kind, in: query, schema: {type: string, enum: [a, b]}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
    post:
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                mode: {type: string, enum: [fast, slow]}
      responses:
        '201': {description: created}
      callbacks:
        changed:
          '{$request.body#/url}':
            post:
              requestBody:
                content:
                  application/json:
                    schema:
                      type: object
                      properties:
                        reason: {type: string, enum: [closed, offline]}
              responses:
                '200': {description: ok}
components:
  schemas:
    Thing:
      type: object
      properties:
        source: {type: string, enum: [chargebox, operator]}
        next: {$ref: '#/components/schemas/Thing'}
`

func load(t *testing.T, text string) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte(text))
	require.NoError(t, err)
	return doc
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name     string
		old, new string // an edit of released
		want     []string
	}{
		{"nothing changed", "", "", nil},
		{"a value added", "enum: [chargebox, operator]", "enum: [chargebox, operator, connection]", nil},
		{"an answer's enum made extensible (2.14.0's source)",
			"source: {type: string, enum: [chargebox, operator]}",
			"source: {type: string, x-extensible-enum: [chargebox, operator, connection]}",
			[]string{"#/components/schemas/Thing.source: the enum [chargebox operator] is dropped (now an x-extensible-enum)"}},
		{"an answer's enum value removed", "enum: [chargebox, operator]", "enum: [chargebox]",
			[]string{"#/components/schemas/Thing.source: the enum value operator is removed"}},
		{"a request body's enum dropped", "mode: {type: string, enum: [fast, slow]}", "mode: {type: string}",
			[]string{"POST /things request application/json.mode: the enum [fast slow] is dropped"}},
		{"a parameter's enum turned into integers", "{type: string, enum: [a, b]}", "{type: integer, enum: [1, 2]}",
			[]string{"GET /things query kind: the string enum [a b] is now of type integer"}},
		{"a callback's enum dropped", "reason: {type: string, enum: [closed, offline]}", "reason: {type: string}",
			[]string{"POST /things callback changed POST {$request.body#/url} request application/json.reason: the enum [closed offline] is dropped"}},
		{"an enum's schema gone", "        source: {type: string, enum: [chargebox, operator]}\n", "",
			[]string{"#/components/schemas/Thing.source: the enum [chargebox operator] is gone with its schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := strings.Replace(released, tt.old, tt.new, 1)
			require.True(t, tt.old == "" || edited != released, "the edit applies")
			var got []string
			for _, f := range enumcheck.Compare(load(t, released), load(t, edited)) {
				got = append(got, f.String())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
