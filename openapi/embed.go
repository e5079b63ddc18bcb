// Package openapi embeds the contracts as written by their designers: openapi.yaml, the
// Charging Network Integration API, and ocpi-2.2.1.yaml, the OCPI 2.2.1 CPO interface, so
// the binary can serve them and tests can read them.
package openapi

import _ "embed"

// Spec is the contract, byte for byte as in openapi/openapi.yaml.
//
//go:embed openapi.yaml
var Spec []byte

// OCPISpec is the OCPI 2.2.1 contract, byte for byte as in openapi/ocpi-2.2.1.yaml.
//
//go:embed ocpi-2.2.1.yaml
var OCPISpec []byte
