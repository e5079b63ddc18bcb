package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/chargenet/chargenet"
	"github.com/getkin/kin-openapi/openapi3"
)

// ScopesExtension is the operation extension of the contract that names the scope an
// operation needs: a list of one scope, or an empty list for an operation every valid
// key may call.
const ScopesExtension = "x-scopes"

// requirement is what an operation asks of a key: the scope it needs, or none (scope
// "", grants 0) when any valid key may call it.
type requirement struct {
	scope  string
	grants chargenet.Grants
}

// operationScopes reads the x-scopes of every operation of doc: the scope each needs (""
// for one that any valid key may call). An operation without x-scopes, with more than
// one scope or with a name that is not a scope is an error: the service refuses to start
// with an operation whose scope it does not know.
func operationScopes(doc *openapi3.T) (map[*openapi3.Operation]requirement, error) {
	out := map[*openapi3.Operation]requirement{}
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		ops := doc.Paths.Value(path).Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			op := ops[method]
			at := fmt.Sprintf("%s %s (%s)", method, path, op.OperationID)
			raw, ok := op.Extensions[ScopesExtension]
			if !ok {
				return nil, fmt.Errorf("%s has no %s: declare the scope it needs, or [] for any valid key", at, ScopesExtension)
			}
			list, ok := raw.([]any)
			if !ok || len(list) > 1 {
				return nil, fmt.Errorf("%s: %s must be a list of at most one scope, not %v", at, ScopesExtension, raw)
			}
			var r requirement
			if len(list) == 1 {
				name, _ := list[0].(string)
				g, ok := chargenet.GrantsOf(name)
				if !ok || name == chargenet.ScopePartner {
					return nil, fmt.Errorf("%s: %s names %v, which is not one of the scopes %s", at, ScopesExtension, list[0],
						strings.Join(chargenet.Scopes, ", "))
				}
				r = requirement{scope: name, grants: g}
			}
			out[op] = r
		}
	}
	return out, nil
}
