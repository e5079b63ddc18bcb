// Package tracing sets up OpenTelemetry tracing (go.opentelemetry.io/otel) with the
// OTLP/HTTP exporter, configured by the SDK's standard environment variables, and
// traces a store's calls (Store).
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the environment asks for traces: OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, OTEL_SDK_DISABLED is not "true" and
// OTEL_TRACES_EXPORTER is not "none".
func Enabled(getenv func(string) string) bool {
	if getenv("OTEL_SDK_DISABLED") == "true" || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Provider is a tracer provider exporting over OTLP/HTTP in batches.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// New returns a provider whose exporter reads the standard variables
// (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION, ...), whose
// sampler reads OTEL_TRACES_SAMPLER[_ARG] (default: parent-based, always on) and whose
// resource is OTEL_SERVICE_NAME (default "chargenet") and OTEL_RESOURCE_ATTRIBUTES,
// with version as service.version. It returns an error if the exporter cannot be
// configured; nothing is sent until spans end.
func New(ctx context.Context, version string) (*Provider, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("chargenet"), semconv.ServiceVersion(version)),
		resource.Default()) // the environment's OTEL_SERVICE_NAME wins
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return &Provider{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// Tracer returns the service's tracer.
func (p *Provider) Tracer() trace.Tracer { return p.tp.Tracer("github.com/chargenet/chargenet") }

// Shutdown exports the spans still buffered and stops the exporter, within ctx.
func (p *Provider) Shutdown(ctx context.Context) error { return p.tp.Shutdown(ctx) }
