package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/agentloop/agentloop/llm"
)

// flushTimeout bounds the export of the last spans at exit, Ctrl-C
// included: an unreachable collector delays the exit by at most this, and
// never fails the command.
const flushTimeout = 3 * time.Second

// startTelemetry sets up the export of traces from OpenTelemetry's standard
// environment variables, read through c.getenv:
//
//   - OTEL_EXPORTER_OTLP_ENDPOINT, a base URL to which /v1/traces is added
//     for OTLP/HTTP, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, used as it is;
//   - OTEL_EXPORTER_OTLP_PROTOCOL (or _TRACES_PROTOCOL): http/protobuf, the
//     default, or grpc;
//   - OTEL_EXPORTER_OTLP_HEADERS (and _TRACES_HEADERS), such as an API key;
//   - OTEL_SERVICE_NAME (default agentloop) and OTEL_RESOURCE_ATTRIBUTES;
//   - OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, which records
//     prompts, answers and tool input and output on the spans;
//   - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it all off.
//
// With no endpoint set, nothing is started and the zero Telemetry is
// returned. The returned function flushes and stops the exporter within
// flushTimeout, and reports on stderr spans it could not deliver.
func (c *cli) startTelemetry(ctx context.Context, stderr io.Writer) (llm.Telemetry, func(), error) {
	env := func(signal, name string) string {
		if v := c.getenv("OTEL_EXPORTER_OTLP_" + signal + name); v != "" {
			return v
		}
		return c.getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	base, traces := c.getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), c.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if base == "" && traces == "" || strings.EqualFold(c.getenv("OTEL_SDK_DISABLED"), "true") ||
		c.getenv("OTEL_TRACES_EXPORTER") == "none" {
		return llm.Telemetry{}, func() {}, nil
	}
	capture, err := captureContent(c.getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"))
	if err != nil {
		return llm.Telemetry{}, nil, err
	}
	headers, err := keyValues(env("TRACES_", "HEADERS"))
	if err != nil {
		return llm.Telemetry{}, nil, usageError("OTEL_EXPORTER_OTLP_HEADERS: %v", err)
	}
	protocol := env("TRACES_", "PROTOCOL")
	if traces == "" && protocol != "grpc" {
		traces = strings.TrimSuffix(base, "/") + "/v1/traces"
	} else if traces == "" {
		traces = base
	}
	if u, err := url.Parse(traces); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return llm.Telemetry{}, nil, usageError("OTLP endpoint %q is not an http:// or https:// URL", traces)
	}
	// Exports are not retried: a collector that is down must not hold up
	// the exit past flushTimeout.
	var exp *otlptrace.Exporter
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(traces), otlptracehttp.WithHeaders(headers),
			otlptracehttp.WithTimeout(flushTimeout), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	case "grpc":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(traces), otlptracegrpc.WithHeaders(headers),
			otlptracegrpc.WithTimeout(flushTimeout), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	default:
		return llm.Telemetry{}, nil, usageError("OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported: use http/protobuf or grpc", protocol)
	}
	if err != nil {
		return llm.Telemetry{}, nil, fmt.Errorf("starting the OTLP exporter: %w", err)
	}
	res, err := c.resource(ctx)
	if err != nil {
		return llm.Telemetry{}, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	// Export failures are reported once, at exit, rather than by the SDK's
	// default handler, which writes to the process's stderr mid-answer.
	var lost atomic.Pointer[error]
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { lost.Store(&err) }))
	// The trace context goes with calls to other processes, MCP servers
	// among them, in W3C headers.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		err := tp.Shutdown(ctx)
		if p := lost.Load(); err == nil && p != nil {
			err = *p
		}
		if err != nil {
			fmt.Fprintf(stderr, "agentloop: traces were not all exported to %s: %v\n", traces, err)
		}
	}
	return llm.Telemetry{TracerProvider: tp, CaptureContent: capture}, shutdown, nil
}

// resource describes this process: OTEL_RESOURCE_ATTRIBUTES, then
// OTEL_SERVICE_NAME, which wins over a service.name among them.
func (c *cli) resource(ctx context.Context) (*resource.Resource, error) {
	attrs, err := keyValues(c.getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, usageError("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	kvs := []attribute.KeyValue{semconv.ServiceName("agentloop"), semconv.ServiceVersion(versionString())}
	for k, v := range attrs {
		kvs = append(kvs, attribute.String(k, v))
	}
	if name := c.getenv("OTEL_SERVICE_NAME"); name != "" {
		kvs = append(kvs, semconv.ServiceName(name))
	}
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(kvs...))
}

// keyValues parses the k1=v1,k2=v2 lists of OpenTelemetry's variables,
// whose keys and values are percent-encoded.
func keyValues(s string) (map[string]string, error) {
	m := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k, err1 := url.PathUnescape(strings.TrimSpace(k))
		v, err2 := url.PathUnescape(strings.TrimSpace(v))
		if !ok || k == "" || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q is not key=value", pair)
		}
		m[k] = v
	}
	return m, nil
}

// captureContent reads OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT.
// Content goes on spans, so event_only records none.
func captureContent(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "false", "no_content", "event_only":
		return false, nil
	case "true", "span_only", "span_and_event":
		return true, nil
	}
	return false, usageError("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=%q: use true or false", v)
}

// conversationID names the conversation in traces: the --session file, so
// that its runs share one id across invocations, else a random id for this
// process's runs.
func conversationID(o *options) string {
	if o.session != "" {
		return o.session
	}
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
