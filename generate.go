// Package chargenet holds the domain of the Charging Network Integration API: EVSEs,
// connectors, locations, the rules that govern them, the Store interface every storage
// backend implements and the errors it returns.
package chargenet

// The contract in openapi/openapi.yaml is the source of truth; these lines turn it into
// the Go code in gen/. Run `make generate` (or `go generate ./...`) after editing it.
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/types.yaml openapi/openapi.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/server.yaml openapi/openapi.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/client.yaml openapi/openapi.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/spec.yaml openapi/openapi.yaml

// The OCPI 2.2.1 contract, openapi/ocpi-2.2.1.yaml, becomes package ocpi in gen/ocpi.
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/ocpi-types.yaml openapi/ocpi-2.2.1.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/ocpi-server.yaml openapi/ocpi-2.2.1.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/ocpi-client.yaml openapi/ocpi-2.2.1.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen --config=openapi/codegen/ocpi-spec.yaml openapi/ocpi-2.2.1.yaml
