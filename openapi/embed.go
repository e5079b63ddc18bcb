// Package openapi embeds the contract, openapi.yaml, as written by its designers, so the
// binary can serve it at /openapi.yaml and tests can read it.
package openapi

import _ "embed"

// Spec is the contract, byte for byte as in openapi/openapi.yaml.
//
//go:embed openapi.yaml
var Spec []byte
