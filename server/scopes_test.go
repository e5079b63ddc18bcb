package server_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/server"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scopeKeys are the keys of the scope table test: one per scope, and one of partner.
func scopeKeys() map[string]string {
	keys := map[string]string{chargenet.ScopePartner: "scope-key-partner-0123456789"}
	for _, s := range chargenet.Scopes {
		keys[s] = "scope-key-" + strings.ReplaceAll(s, ":", "-") + "-0123456789"
	}
	return keys
}

// scopeLine is the line an operation's description starts with.
var scopeLine = regexp.MustCompile(`^Scope: (\S+|none \(any valid key\))\n`)

// TestEveryOperationChecksItsScope walks every operation of the contract, as the
// service loads it, with a key of each scope (and one of partner). Where the
// operation's x-scopes names a scope the key does not hold, the answer is 403
// insufficient_scope naming that scope; everywhere else it is not a 403. The requests
// carry an empty body: a key with the scope gets past the scope check to the body's
// validation. An operation without x-scopes fails here (and the service does not
// start), so no operation can be added without saying who may call it.
func TestEveryOperationChecksItsScope(t *testing.T) {
	doc, err := gen.GetSpec()
	require.NoError(t, err)
	scopes, err := server.OperationScopes(doc)
	require.NoError(t, err, "every operation declares x-scopes")
	keys := scopeKeys()
	demo := demoDatabase(t, t.TempDir())

	var ops int
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		item := doc.Paths.Value(path)
		for _, method := range slices.Sorted(maps.Keys(item.Operations())) {
			op := item.Operations()[method]
			need := scopes[op.OperationID]
			ops++
			line := "none (any valid key)"
			if need != "" {
				line = need
			}
			m := scopeLine.FindStringSubmatch(op.Description)
			if assert.NotNil(t, m, "%s: the description starts with a line \"Scope: ...\"", op.OperationID) {
				assert.Equal(t, line, m[1], "%s: the description names the scope of x-scopes", op.OperationID)
			}
			target := concretePath(t, path, append(item.Parameters, op.Parameters...))
			t.Run(op.OperationID, func(t *testing.T) {
				t.Parallel()
				v := probeEnv(t, demo, exampleProbe{})
				for _, scope := range slices.Sorted(maps.Keys(keys)) {
					require.NoError(t, v.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "scope-" + strings.ReplaceAll(scope, ":", "-"),
						Hash: chargenet.HashAPIKey(keys[scope]), Scopes: []string{scope}, CreatedAt: time.Now()}))
				}
				// Refusals first: a granted call may change what later calls find.
				order := slices.SortedFunc(maps.Keys(keys), func(a, b string) int {
					return compareBool(grants(a, need), grants(b, need))
				})
				for _, scope := range order {
					body := ""
					if op.RequestBody != nil {
						body = "{}"
					}
					rec := v.do(method, target, body, "Authorization", "Bearer "+keys[scope])
					if !grants(scope, need) {
						e := assertError(t, rec, http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization")
						if assert.NotNil(t, e.Scope, "%s with a %s key", op.OperationID, scope) {
							assert.Equal(t, need, *e.Scope, "%s with a %s key", op.OperationID, scope)
						}
						continue
					}
					assert.NotEqual(t, http.StatusForbidden, rec.Code, "%s %s with a %s key: %s", method, target, scope, rec.Body.String())
				}
			})
		}
	}
	assert.Equal(t, len(scopes), ops)
	assert.GreaterOrEqual(t, ops, 29, "the walk reaches every operation")
}

// grants reports whether a key holding scope may call an operation that needs need
// ("" for any valid key).
func grants(scope, need string) bool {
	if need == "" {
		return true
	}
	have, _ := chargenet.GrantsOf(scope)
	want, _ := chargenet.GrantsOf(need)
	return have.Has(want)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// concretePath fills the path parameters of a path template with their examples.
func concretePath(t *testing.T, path string, params openapi3.Parameters) string {
	t.Helper()
	for _, p := range params {
		if p.Value.In != openapi3.ParameterInPath {
			continue
		}
		ex := p.Value.Example
		if ex == nil && p.Value.Schema != nil {
			ex = p.Value.Schema.Value.Example
		}
		require.NotNil(t, ex, "%s: path parameter %s has an example", path, p.Value.Name)
		path = strings.ReplaceAll(path, "{"+p.Value.Name+"}", fmt.Sprint(ex))
	}
	require.NotContains(t, path, "{", "every path parameter is filled")
	return path
}

// TestOperationScopesRefusesUndeclared shows that the service refuses a contract with
// an operation whose scope is not declared, or declared wrong.
func TestOperationScopesRefusesUndeclared(t *testing.T) {
	tests := []struct {
		name  string
		value any
		drop  bool
		want  string
	}{
		{"missing", nil, true, "GET /v2/evses (ListEvses) has no x-scopes"},
		{"two scopes", []any{"inventory:read", "webhooks"}, false, "at most one scope"},
		{"unknown scope", []any{"inventory:admin"}, false, "not one of the scopes"},
		{"partner is no operation's scope", []any{"partner"}, false, "not one of the scopes"},
		{"not a list", "inventory:read", false, "must be a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := gen.GetSpec()
			require.NoError(t, err)
			op := doc.Paths.Value("/v2/evses").Get
			if tt.drop {
				delete(op.Extensions, server.ScopesExtension)
			} else {
				op.Extensions[server.ScopesExtension] = tt.value
			}
			_, err = server.OperationScopes(doc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
