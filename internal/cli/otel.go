package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/agentloop/agentloop/telemetry"
)

// flushTimeout bounds the export of the last spans at exit, Ctrl-C
// included: an unreachable collector delays the exit by at most this, and
// never fails the command.
const flushTimeout = 3 * time.Second

// startTelemetry sets up the export of traces and metrics from
// OpenTelemetry's standard environment variables, read through c.getenv:
//
//   - OTEL_EXPORTER_OTLP_ENDPOINT, a base URL to which /v1/traces and
//     /v1/metrics are added for OTLP/HTTP, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//     and _METRICS_ENDPOINT, used as they are;
//   - OTEL_EXPORTER_OTLP_PROTOCOL (or _TRACES_PROTOCOL, _METRICS_PROTOCOL):
//     http/protobuf, the default and the only one;
//   - OTEL_EXPORTER_OTLP_HEADERS (and _TRACES_HEADERS, _METRICS_HEADERS);
//   - OTEL_EXPORTER_OTLP_COMPRESSION (and _TRACES_, _METRICS_): gzip or none;
//   - OTEL_EXPORTER_OTLP_CERTIFICATE, the CA's PEM file, and
//     _CLIENT_CERTIFICATE and _CLIENT_KEY for mutual TLS (each also per signal);
//   - OTEL_SERVICE_NAME (default agentloop) and OTEL_RESOURCE_ATTRIBUTES;
//   - OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, which records
//     prompts, answers and tool input and output on the spans;
//   - OTEL_SDK_DISABLED=true turns it all off, OTEL_TRACES_EXPORTER=none
//     and OTEL_METRICS_EXPORTER=none one signal.
//
// With no endpoint set, nothing is started and the zero Telemetry is
// returned. The returned function flushes and stops the exporters within
// flushTimeout, and reports on stderr what it could not deliver.
func (c *cli) startTelemetry(ctx context.Context, stderr io.Writer) (telemetry.Config, func(), error) {
	none := func() {}
	if strings.EqualFold(c.getenv("OTEL_SDK_DISABLED"), "true") {
		return telemetry.Config{}, none, nil
	}
	traces, err := c.otlpTarget("TRACES", "/v1/traces")
	if err != nil {
		return telemetry.Config{}, nil, err
	}
	metrics, err := c.otlpTarget("METRICS", "/v1/metrics")
	if err != nil || traces.url == "" && metrics.url == "" {
		return telemetry.Config{}, none, err
	}
	capture, err := captureContent(c.getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"))
	if err != nil {
		return telemetry.Config{}, nil, err
	}
	res, err := c.resource(ctx)
	if err != nil {
		return telemetry.Config{}, nil, err
	}
	// Exports are not retried: a collector that is down must not hold up
	// the exit past flushTimeout.
	tel := telemetry.Config{CaptureContent: capture}
	var stops []func(context.Context) error
	if traces.url != "" {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spanExporter{traces}), sdktrace.WithResource(res))
		tel.TracerProvider, stops = tp, append(stops, tp.Shutdown)
	}
	if metrics.url != "" {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExporter{metrics})), sdkmetric.WithResource(res))
		tel.MeterProvider, stops = mp, append(stops, mp.Shutdown)
	}
	// Export failures are reported once, at exit, rather than by the SDK's
	// default handler, which writes to the process's stderr mid-answer.
	var lost atomic.Pointer[error]
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { lost.Store(&err) }))
	// The trace context goes with calls to other processes, MCP servers
	// among them, in W3C headers.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	flush := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		err := errors.Join(errs...)
		if p := lost.Load(); err == nil && p != nil {
			err = *p
		}
		if err != nil {
			fmt.Fprintf(stderr, "agentloop: telemetry was not all exported to %s: %v\n", cmp.Or(traces.url, metrics.url), err)
		}
	}
	return tel, flush, nil
}

// otlpTarget reads the variables of signal ("TRACES" or "METRICS"), whose
// OTLP/HTTP path under the base endpoint is path: where it goes, nowhere
// when the url is empty.
func (c *cli) otlpTarget(signal, path string) (otlpClient, error) {
	env := func(name string) string {
		return cmp.Or(c.getenv("OTEL_EXPORTER_OTLP_"+signal+"_"+name), c.getenv("OTEL_EXPORTER_OTLP_"+name))
	}
	var t otlpClient
	base, own := c.getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), c.getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT")
	if base == "" && own == "" || c.getenv("OTEL_"+signal+"_EXPORTER") == "none" {
		return t, nil
	}
	// gRPC would link what the binary keeps out (see otlp.go).
	if protocol := env("PROTOCOL"); protocol != "" && protocol != "http/protobuf" {
		return t, usageError("OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported: use http/protobuf", protocol)
	}
	t.url = cmp.Or(own, strings.TrimSuffix(base, "/")+path)
	switch compression := env("COMPRESSION"); compression {
	case "", "none":
	case "gzip":
		t.gzip = true
	default:
		return t, usageError("OTEL_EXPORTER_OTLP_COMPRESSION %q is not supported: use gzip or none", compression)
	}
	if u, err := url.Parse(t.url); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return t, usageError("OTLP endpoint %q is not an http:// or https:// URL", t.url)
	}
	var err error
	if t.headers, err = keyValues(env("HEADERS")); err != nil {
		return t, usageError("OTEL_EXPORTER_OTLP_HEADERS: %v", err)
	}
	ca, cert, key := env("CERTIFICATE"), env("CLIENT_CERTIFICATE"), env("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return t, nil
	}
	tlsConfig := &tls.Config{}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if tlsConfig.RootCAs = x509.NewCertPool(); err != nil || !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return t, usageError("OTEL_EXPORTER_OTLP_CERTIFICATE %q is not a readable PEM certificate file", ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return t, usageError("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %v", err)
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	t.http = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig}}
	return t, nil
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

// conversationID names the conversation in traces: a hash of the absolute
// path of the session's file, so that its runs share one id across
// invocations without putting the path (and the user's home directory) in
// a trace, else a random id for this process's runs.
func conversationID(session string) string {
	if session != "" {
		p, err := filepath.Abs(session)
		if err != nil {
			p = session
		}
		sum := sha256.Sum256([]byte(p))
		return hex.EncodeToString(sum[:16])
	}
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
