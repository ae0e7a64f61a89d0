package cli

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/agentloop/agentloop/anthropictest"
)

// collector is an OTLP receiver on loopback, over HTTP or gRPC, that keeps
// every export request: decoded, and as the bytes that came over the wire.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	raw     [][]byte
	reqs    []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricspb.ExportMetricsServiceRequest
}

// metricsService is the collector's gRPC metrics service.
type metricsService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	c *collector
}

func (m metricsService) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	raw, _ := proto.Marshal(req)
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	m.c.raw = append(m.c.raw, raw)
	m.c.metrics = append(m.c.metrics, req)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
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

func (c *collector) keep(raw []byte, req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(c.raw, raw)
	c.reqs = append(c.reqs, req)
}

// ServeHTTP answers POST /v1/traces and /v1/metrics, the OTLP/HTTP paths,
// in protobuf.
func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
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
		c.keep(body, req)
		out, _ = proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	case "/v1/metrics":
		req := &colmetricspb.ExportMetricsServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		metricsService{c: c}.Export(r.Context(), req)
		out, _ = proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Export is the gRPC method.
func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	raw, _ := proto.Marshal(req)
	c.keep(raw, req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
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

// startGRPCCollector returns a collector and its endpoint URL.
func startGRPCCollector(t *testing.T) (*collector, string) {
	c := &collector{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	colmetricspb.RegisterMetricsServiceServer(srv, metricsService{c: c})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return c, "http://" + lis.Addr().String()
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
// at a loopback collector, over OTLP/HTTP and gRPC, and checks what
// arrived: one trace of the run, its model calls and its tool call, with
// the conventions' main attributes and the resource the environment names,
// and with content capture off, no prompt, answer or tool text in any
// byte, nor the API key.
func TestOTLPExport(t *testing.T) {
	for _, tt := range []struct {
		protocol string
		start    func(*testing.T) (*collector, string)
	}{
		{"http/protobuf", startHTTPCollector},
		{"grpc", startGRPCCollector},
	} {
		t.Run(tt.protocol, func(t *testing.T) {
			col, endpoint := tt.start(t)
			code, stderr := runCLI(t, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL": tt.protocol,
				"OTEL_SERVICE_NAME":           "agent-under-test",
				"OTEL_RESOURCE_ATTRIBUTES":    "deployment.environment.name=test,team=a%20b",
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
			if strings.Contains(stderr, "not all exported") {
				t.Errorf("stderr: %s", stderr)
			}
			raw := col.bytes()
			for _, secret := range []string{"PROMPT-MARKER", "ANSWER-MARKER", `"add"`, testKey} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("%q went to the collector with content capture off", secret)
				}
			}
		})
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
// by itself; over gRPC, whose requests carry their deadline, the collector
// also sees that the exporter waits at most flushTimeout.
func TestOTLPUnreachable(t *testing.T) {
	for _, tt := range []struct {
		protocol string
		start    func(t *testing.T, done <-chan struct{}) (endpoint string, deadlines func() []time.Duration)
	}{
		{"http/protobuf", startSilentListener},
		{"grpc", startSilentGRPCCollector},
	} {
		t.Run(tt.protocol, func(t *testing.T) {
			done := make(chan struct{})
			endpoint, deadlines := tt.start(t, done)
			code, stderr := runCLI(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": tt.protocol},
				nil, calcReplies()...)
			close(done) // the run is over: the collector may let go
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stderr, "telemetry was not all exported") {
				t.Errorf("stderr does not report the lost spans:\n%s", stderr)
			}
			if deadlines == nil {
				return
			}
			got := deadlines()
			if len(got) == 0 {
				t.Error("the collector got no trace export")
			}
			for _, d := range got {
				if d > flushTimeout { // it only shrinks on the way: no false alarm on a slow machine
					t.Errorf("an export's deadline was %v away, want at most flushTimeout (%v)", d, flushTimeout)
				}
			}
		})
	}
}

// startSilentListener returns the URL of a loopback listener that accepts
// connections and neither reads nor answers until done is closed.
func startSilentListener(t *testing.T, done <-chan struct{}) (string, func() []time.Duration) {
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
	return "http://" + lis.Addr().String(), nil
}

// startSilentGRPCCollector returns the endpoint of a gRPC collector whose
// exports answer only once done is closed, and a function that returns how
// far away each trace export's deadline was when it arrived.
func startSilentGRPCCollector(t *testing.T, done <-chan struct{}) (string, func() []time.Duration) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &silentCollector{done: done}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	colmetricspb.RegisterMetricsServiceServer(srv, silentMetrics{done: done})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return "http://" + lis.Addr().String(), func() []time.Duration {
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.Clone(c.deadlines)
	}
}

// silentCollector is a trace service that holds every export until done
// is closed, and keeps how far away each one's deadline was.
type silentCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	done      <-chan struct{}
	mu        sync.Mutex
	deadlines []time.Duration // math.MaxInt64: the export had none
}

func (c *silentCollector) Export(ctx context.Context, _ *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	d := time.Duration(math.MaxInt64) // no deadline
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	c.mu.Lock()
	c.deadlines = append(c.deadlines, d)
	c.mu.Unlock()
	<-c.done
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// silentMetrics is a metrics service that holds every export until done
// is closed.
type silentMetrics struct {
	colmetricspb.UnimplementedMetricsServiceServer
	done <-chan struct{}
}

func (m silentMetrics) Export(context.Context, *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	<-m.done
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
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
