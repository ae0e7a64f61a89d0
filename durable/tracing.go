package durable

import (
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Tracing returns the interceptor that carries the trace context from a
// client through the workflow into its activities, with the spans of the
// Temporal SDK's OpenTelemetry integration around them, from tp (nil: the
// global provider). Set it in client.Options.Interceptors of the caller's
// client and of the worker's, whose workers inherit it: a run's chat and
// execute_tool spans are then children of the span that started it.
func Tracing(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	// W3C headers, whatever the global propagator is: its default
	// propagates nothing.
	opts := opentelemetry.TracerOptions{
		TextMapPropagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	if tp != nil {
		opts.Tracer = tp.Tracer("github.com/agentloop/agentloop/durable")
	}
	return opentelemetry.NewTracingInterceptor(opts)
}
