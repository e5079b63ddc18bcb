package tracing_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/tracing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// unreachable is a store whose every method panics: a call that panics has reached it.
type unreachable struct{ chargenet.Store }

// TestStoreTracesEveryMethod calls each method of chargenet.Store through the wrapper,
// within a traced request and outside one: each call reaches the inner store, and each
// starts one client span named after its method, a child of the request's, except the
// documented untraced ones; outside a traced request none starts a span. A method added
// to chargenet.Store fails here until the wrapper traces it.
func TestStoreTracesEveryMethod(t *testing.T) {
	untraced := map[string]bool{"Close": true, "Memo": true}
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	store := reflect.ValueOf(tracing.Store(unreachable{}, tracer, "sqlite"))
	traced, request := tracer.Start(context.Background(), "request")
	defer request.End()
	ctxType := reflect.TypeFor[context.Context]()

	// call calls method with ctx and zero values, and reports whether it reached the inner
	// store.
	call := func(method reflect.Value, ctx context.Context) (reached bool) {
		typ := method.Type()
		args := make([]reflect.Value, typ.NumIn())
		for i := range args {
			args[i] = reflect.Zero(typ.In(i))
			if typ.In(i) == ctxType {
				args[i] = reflect.ValueOf(ctx)
			}
		}
		defer func() { reached = recover() != nil }()
		if typ.IsVariadic() {
			method.CallSlice(args)
		} else {
			method.Call(args)
		}
		return false
	}

	methods := reflect.TypeFor[chargenet.Store]()
	require.Greater(t, methods.NumMethod(), 50)
	for i := range methods.NumMethod() {
		name := methods.Method(i).Name
		t.Run(name, func(t *testing.T) {
			method := store.MethodByName(name)
			before := len(rec.Started())
			require.True(t, call(method, traced), "the call reaches the inner store")
			started := rec.Started()[before:]
			if untraced[name] {
				assert.Empty(t, started)
				return
			}
			require.Len(t, started, 1)
			assert.Equal(t, "store."+name, started[0].Name())
			assert.Equal(t, trace.SpanKindClient, started[0].SpanKind())
			assert.Equal(t, request.SpanContext().SpanID(), started[0].Parent().SpanID(), "a child of the request's span")

			before = len(rec.Started())
			require.True(t, call(method, context.Background()), "the call reaches the inner store")
			assert.Len(t, rec.Started(), before, "no span outside a traced request")
		})
	}
}
