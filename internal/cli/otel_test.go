package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentloop/agentloop/anthropictest"
)

// collector is an OTLP/HTTP receiver on loopback that keeps every export
// request: decoded by the official OTLP packages, and as the bytes that
// came over the wire.
type collector struct {
	mu      sync.Mutex
	raw     [][]byte
	reqs    []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricspb.ExportMetricsServiceRequest
	// encodings holds each request's Content-Encoding, "none" for none.
	encodings []string
}

// metricNames returns the names of the exported metrics.
func (c *collector) metricNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, req := range c.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					names = append(names, m.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// tokens sums the last export's token usage histogram by token type.
func (c *collector) tokens() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	sums := map[string]float64{}
	for _, rm := range c.metrics[len(c.metrics)-1].ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "gen_ai.client.token.usage" {
					continue
				}
				for _, p := range m.GetHistogram().DataPoints {
					sums[attrMap(p.Attributes)["gen_ai.token.type"].(string)] += p.GetSum()
				}
			}
		}
	}
	return sums
}

func (c *collector) keep(raw []byte, req *coltracepb.ExportTraceServiceRequest, metrics *colmetricspb.ExportMetricsServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(c.raw, raw)
	if req != nil {
		c.reqs = append(c.reqs, req)
	}
	if metrics != nil {
		c.metrics = append(c.metrics, metrics)
	}
}

// ServeHTTP answers POST /v1/traces and /v1/metrics, the OTLP/HTTP paths,
// in protobuf.
func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	enc := r.Header.Get("Content-Encoding")
	if enc == "" {
		enc = "none"
	}
	c.mu.Lock()
	c.encodings = append(c.encodings, enc)
	c.mu.Unlock()
	if err == nil && r.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
		}
	}
	if r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	var out []byte
	switch r.URL.Path {
	case "/v1/traces":
		req := &coltracepb.ExportTraceServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.keep(body, req, nil)
		out, _ = proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	case "/v1/metrics":
		req := &colmetricspb.ExportMetricsServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.keep(body, nil, req)
		out, _ = proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// spans returns every exported span, with the resource it came with.
func (c *collector) spans() (res []*commonpb.KeyValue, spans []*tracepb.Span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, req := range c.reqs {
		for _, rs := range req.ResourceSpans {
			res = rs.Resource.Attributes
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return res, spans
}

func (c *collector) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.raw, nil)
}

// startHTTPCollector returns a collector and its base URL.
func startHTTPCollector(t *testing.T) (*collector, string) {
	c := &collector{}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// runCLI runs the command in-process with env, against a fake API that
// answers with replies.
func runCLI(t *testing.T, env map[string]string, interrupts chan os.Signal, replies ...anthropictest.Reply) (code int, stderr string) {
	t.Helper()
	api := anthropictest.NewServer(replies...)
	defer api.Close()
	env["ANTHROPIC_API_KEY"], env["ANTHROPIC_BASE_URL"] = testKey, api.URL
	c := &cli{getenv: func(k string) string { return env[k] }, isTerminal: func(any) bool { return false }, interrupts: interrupts}
	var out, errb syncBuffer
	code = c.main(context.Background(), []string{"--tools", "calculator", "What is 3 + 5? PROMPT-MARKER"}, strings.NewReader(""), &out, &errb)
	return code, errb.String()
}

// calcReplies is a tool round trip.
func calcReplies() []anthropictest.Reply {
	return []anthropictest.Reply{
		anthropictest.NewStream().Usage(100, 20, 0, 50).ToolUse("toolu_1", "calculator", `{"a":3,"b":5,"operation":"add"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It is 8. ANSWER-MARKER").Stop("end_turn"),
	}
}

// TestOTLPExport runs the command with OTEL_EXPORTER_OTLP_ENDPOINT pointing
// at a loopback collector, over OTLP/HTTP, and checks what
// arrived: one trace of the run, its model calls and its tool call, with
// the conventions' main attributes and the resource the environment names,
// and with content capture off, no prompt, answer or tool text in any
// byte, nor the API key.
func TestOTLPExport(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			col, endpoint := startHTTPCollector(t)
			code, stderr := runCLI(t, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    endpoint,
				"OTEL_EXPORTER_OTLP_COMPRESSION": compression,
				"OTEL_SERVICE_NAME":              "agent-under-test",
				"OTEL_RESOURCE_ATTRIBUTES":       "deployment.environment.name=test,team=a%20b",
			}, nil, calcReplies()...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			res, spans := col.spans()
			var names []string
			byName := map[string]*tracepb.Span{}
			for _, s := range spans {
				names = append(names, s.Name)
				byName[s.Name] = s
				if !bytes.Equal(s.TraceId, spans[0].TraceId) {
					t.Errorf("span %s is in another trace", s.Name)
				}
			}
			slices.Sort(names)
			want := []string{"chat claude-sonnet-5-5", "chat claude-sonnet-5-5", "execute_tool calculator", "invoke_agent agentloop"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Fatalf("span names (-want +got):\n%s", diff)
			}
			root := byName["invoke_agent agentloop"]
			for _, s := range spans {
				if s != root && !bytes.Equal(s.ParentSpanId, root.SpanId) {
					t.Errorf("span %s is not a child of the run's span", s.Name)
				}
			}
			for _, check := range []struct {
				span  *tracepb.Span
				attrs map[string]any
			}{
				{root, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agentloop",
					"gen_ai.provider.name": "anthropic", "agentloop.state": "finished"}},
				{byName["chat claude-sonnet-5-5"], map[string]any{"gen_ai.operation.name": "chat",
					"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-5-5", "server.address": "127.0.0.1"}},
				{byName["execute_tool calculator"], map[string]any{"gen_ai.operation.name": "execute_tool",
					"gen_ai.tool.name": "calculator", "gen_ai.tool.call.id": "toolu_1", "gen_ai.tool.type": "function"}},
				{&tracepb.Span{Attributes: res}, map[string]any{"service.name": "agent-under-test",
					"deployment.environment.name": "test", "team": "a b"}},
			} {
				got := attrMap(check.span.Attributes)
				for k, v := range check.attrs {
					if got[k] != v {
						t.Errorf("%s: %s = %v, want %v", check.span.Name, k, got[k], v)
					}
				}
			}
			// The first call's input counts its cached tokens too.
			var first *tracepb.Span
			for _, s := range spans {
				if s.Name == "chat claude-sonnet-5-5" && (first == nil || s.StartTimeUnixNano < first.StartTimeUnixNano) {
					first = s
				}
			}
			if got := attrMap(first.Attributes)["gen_ai.usage.input_tokens"]; got != int64(150) {
				t.Errorf("first chat span's gen_ai.usage.input_tokens = %v, want 150", got)
			}
			wantMetrics := []string{"gen_ai.client.operation.duration", "gen_ai.client.operation.time_to_first_chunk", "gen_ai.client.token.usage"}
			if diff := cmp.Diff(wantMetrics, col.metricNames()); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
			// The token histograms sum what the chat spans say, which the
			// SDK's own transform put in OTLP.
			spanTokens := map[string]float64{}
			for _, s := range spans {
				if a := attrMap(s.Attributes); strings.HasPrefix(s.Name, "chat ") {
					spanTokens["input"] += float64(a["gen_ai.usage.input_tokens"].(int64))
					spanTokens["output"] += float64(a["gen_ai.usage.output_tokens"].(int64))
				}
			}
			if diff := cmp.Diff(spanTokens, col.tokens()); diff != "" {
				t.Errorf("gen_ai.client.token.usage sums by gen_ai.token.type (-want +got):\n%s", diff)
			}
			if strings.Contains(stderr, "not all exported") {
				t.Errorf("stderr: %s", stderr)
			}
			col.mu.Lock()
			if encodings := slices.Compact(col.encodings); !slices.Equal(encodings, []string{compression}) {
				t.Errorf("the exports' Content-Encoding: %q, want %s alone", encodings, compression)
			}
			col.mu.Unlock()
			raw := col.bytes()
			for _, secret := range []string{"PROMPT-MARKER", "ANSWER-MARKER", `"add"`, testKey} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("%q went to the collector with content capture off", secret)
				}
			}
		})
	}
}

// TestOTLPCertificate checks that OTEL_EXPORTER_OTLP_CERTIFICATE names the
// CA that an https collector's certificate is checked against: the exports
// arrive with it, and without it they are refused and reported.
func TestOTLPCertificate(t *testing.T) {
	col := &collector{}
	srv := httptest.NewTLSServer(col)
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := runCLI(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_CERTIFICATE": ca}, nil, calcReplies()...)
	if _, spans := col.spans(); code != 0 || len(spans) == 0 || strings.Contains(stderr, "not all exported") {
		t.Errorf("with the CA: exit %d, %d spans, stderr:\n%s", code, len(spans), stderr)
	}
	code, stderr = runCLI(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}, nil, calcReplies()...)
	if code != 0 || !strings.Contains(stderr, "telemetry was not all exported") {
		t.Errorf("without the CA: exit %d, stderr does not report the refused exports:\n%s", code, stderr)
	}
}

// TestOTLPCaptureContent checks that the conventions' variable turns
// content capture on.
func TestOTLPCaptureContent(t *testing.T) {
	col, endpoint := startHTTPCollector(t)
	code, stderr := runCLI(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":                        endpoint,
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
	}, nil, calcReplies()...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw := col.bytes()
	for _, text := range []string{"PROMPT-MARKER", "ANSWER-MARKER", "gen_ai.input.messages", "gen_ai.tool.call.arguments"} {
		if !bytes.Contains(raw, []byte(text)) {
			t.Errorf("%q did not reach the collector with content capture on", text)
		}
	}
	if bytes.Contains(raw, []byte(testKey)) {
		t.Error("the API key reached the collector")
	}
}

// TestOTLPInterrupted checks that the spans of a run cut short by Ctrl-C
// are flushed before the command exits.
func TestOTLPInterrupted(t *testing.T) {
	col, endpoint := startHTTPCollector(t)
	started := make(chan struct{})
	interrupts := make(chan os.Signal, 1)
	go func() {
		select {
		case <-started:
			interrupts <- os.Interrupt
		case <-t.Context().Done():
		}
	}()
	code, stderr := runCLI(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, interrupts,
		anthropictest.ReplyFunc(func(*anthropictest.Request) anthropictest.Reply {
			close(started)
			return anthropictest.Replay(nil).Stall()
		}))
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, stderr)
	}
	_, spans := col.spans()
	var root *tracepb.Span
	for _, s := range spans {
		if s.Name == "invoke_agent agentloop" {
			root = s
		}
	}
	if root == nil {
		t.Fatalf("the interrupted run's span was not exported; got %d spans", len(spans))
	}
	if got := attrMap(root.Attributes)["error.type"]; got != "cancelled" {
		t.Errorf("error.type = %v, want cancelled", got)
	}
}

// TestOTLPUnreachable checks that a collector that accepts connections and
// never answers neither fails the run nor holds up its exit, and that the
// lost spans are reported. The collector answers nothing until the run has
// returned, so the run's returning at all shows that the exporter gave up
// by itself.
func TestOTLPUnreachable(t *testing.T) {
	done := make(chan struct{})
	endpoint := startSilentListener(t, done)
	code, stderr := runCLI(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, nil, calcReplies()...)
	close(done) // the run is over: the collector may let go
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "telemetry was not all exported") {
		t.Errorf("stderr does not report the lost spans:\n%s", stderr)
	}
}

// startSilentListener returns the URL of a loopback listener that accepts
// connections and neither reads nor answers until done is closed.
func startSilentListener(t *testing.T, done <-chan struct{}) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		lis.Close()
		conns.Wait()
	})
	conns.Go(func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { <-done; conn.Close() })
		}
	})
	return "http://" + lis.Addr().String()
}

// TestTelemetryConfig checks the environment's handling: nothing starts
// without an endpoint, and bad values are usage errors that name the
// variable.
func TestTelemetryConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		err  string // "" means no telemetry and no error
	}{
		{"none", map[string]string{}, ""},
		{"disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, ""},
		{"exporters none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, ""},
		{"protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"compression", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{"certificate", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{"client key", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent/c.pem"}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, `OTEL_EXPORTER_OTLP_PROTOCOL "grpc" is not supported: use http/protobuf`},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4318"}, "not an http:// or https:// URL"},
		{"capture", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "maybe"}, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"},
		{"resource", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_RESOURCE_ATTRIBUTES": "novalue"}, "OTEL_RESOURCE_ATTRIBUTES"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &cli{getenv: func(k string) string { return tt.env[k] }}
			tel, flush, err := c.startTelemetry(t.Context(), io.Discard)
			switch {
			case tt.err == "" && (err != nil || tel.TracerProvider != nil || tel.MeterProvider != nil):
				t.Errorf("telemetry %+v, %v; want none", tel, err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || exitCode(err) != exitUsage):
				t.Errorf("error %v; want a usage error naming %q", err, tt.err)
			}
			if flush != nil {
				flush()
			}
		})
	}
}

// attrMap returns OTLP attributes as plain values.
func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		default:
			m[kv.Key] = kv.Value.String()
		}
	}
	return m
}
