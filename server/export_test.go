package server

import "github.com/getkin/kin-openapi/openapi3"

// OperationScopes returns, by operationId, the scope each operation of doc needs
// (operationScopes).
func OperationScopes(doc *openapi3.T) (map[string]string, error) {
	reqs, err := operationScopes(doc)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(reqs))
	for op, r := range reqs {
		out[op.OperationID] = r.scope
	}
	return out, nil
}
