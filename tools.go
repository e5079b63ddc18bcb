//go:build tools

// Package tools pins the code generator in go.mod, so every checkout runs the same
// version through `go run` without a separate install.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
)
