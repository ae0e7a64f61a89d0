package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/telemetry"
)

// TestClientMetrics checks the gen_ai.client.* metrics of one model call
// that the client retried once: their names, units, the conventions'
// bucket boundaries, their attributes, and the Anthropic rule that input
// tokens include the cached ones.
func TestClientMetrics(t *testing.T) {
	srv := anthropictest.NewServer(
		anthropictest.HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RetryAfter: time.Millisecond},
		// The reply names a model other than the one asked for, as when an alias resolves.
		anthropictest.NewStream().Message("", "claude-sonnet-5-5").Usage(100, 20, 30, 50).Text("hi").Stop("end_turn", 20),
	)
	defer srv.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	tel := telemetry.New(telemetry.Config{MeterProvider: mp})
	c := llm.New(llm.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}, Observe: tel.Observe(srv.URL)})
	for _, err := range c.Stream(t.Context(), llm.Request{Model: "claude-test", Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "hi"}}}}}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	type point struct {
		Attrs  map[string]any
		Count  uint64
		Sum    float64
		Bounds []float64
	}
	got := map[string][]point{}
	units := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			units[m.Name] = m.Unit
			add := func(set attribute.Set, count uint64, sum float64, bounds []float64) {
				attrs := map[string]any{}
				for _, kv := range set.ToSlice() {
					if kv.Key != "server.port" {
						attrs[string(kv.Key)] = kv.Value.AsInterface()
					}
				}
				if m.Unit == "s" {
					sum = 0 // measured, not scripted
				}
				got[m.Name] = append(got[m.Name], point{attrs, count, sum, bounds})
			}
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Count, float64(p.Sum), p.Bounds)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Count, p.Sum, p.Bounds)
				}
			}
		}
	}
	base := func(extra ...any) map[string]any {
		m := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
			"gen_ai.request.model": "claude-test", "server.address": "127.0.0.1"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	ok := base("gen_ai.response.model", "claude-sonnet-5-5")
	want := map[string][]point{
		"gen_ai.client.operation.duration": {
			{base("error.type", "overloaded_error"), 1, 0, telemetry.SecondsBuckets},
			{ok, 1, 0, telemetry.SecondsBuckets},
		},
		"gen_ai.client.operation.time_to_first_chunk": {{ok, 1, 0, telemetry.SecondsBuckets}},
		"gen_ai.client.token.usage": {
			{base("gen_ai.response.model", "claude-sonnet-5-5", "gen_ai.token.type", "input"), 1, 180, telemetry.TokenBuckets},
			{base("gen_ai.response.model", "claude-sonnet-5-5", "gen_ai.token.type", "output"), 1, 20, telemetry.TokenBuckets},
		},
	}
	sortPoints := cmp.Transformer("sort", func(ps []point) map[string]point {
		out := map[string]point{}
		for _, p := range ps {
			out[fmt.Sprint(p.Attrs)] = p
		}
		return out
	})
	if diff := cmp.Diff(want, got, sortPoints); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	wantUnits := map[string]string{"gen_ai.client.operation.duration": "s",
		"gen_ai.client.operation.time_to_first_chunk": "s", "gen_ai.client.token.usage": "{token}"}
	if diff := cmp.Diff(wantUnits, units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
}

// TestChatSpanContent records the content of one chat span, with every
// block kind in its input and output, and compares it, with each value's
// type, to testdata/chat_content.json. Run with -update to rewrite it.
func TestChatSpanContent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel := telemetry.New(telemetry.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), CaptureContent: true})
	req := llm.Request{Model: "claude-test", System: "Be brief.", Cache: true,
		Tools: []llm.ToolSpec{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "read"}},
		Messages: []llm.Message{
			{Role: llm.User, Content: []llm.Block{llm.Text{Text: "look"}, llm.Image{MediaType: "image/png", Data: "iVBO"},
				llm.RawBlock{Type: "document", JSON: json.RawMessage(`{"type":"document","source":{"type":"text","data":"d"}}`)},
				llm.RawBlock{Type: "image", JSON: json.RawMessage(`{"type":"image","source":{"type":"url","url":"https://x"}}`)}}},
			{Role: llm.Assistant, Content: []llm.Block{llm.Thinking{Thinking: "hmm", Signature: "sig"}, llm.RedactedThinking{Data: "xx"},
				llm.ToolUse{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"b": 2, "a": [1.5, true, null, "x"]}`)},
				llm.ToolUse{ID: "toolu_2", Name: "read"}}},
			{Role: llm.User, Content: []llm.Block{
				llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: ` {"sum": 3}`}}},
				llm.ToolResult{ToolUseID: "toolu_2", Content: []llm.Block{llm.Text{Text: "a "}, llm.Image{MediaType: "image/gif", Data: "R0"}, llm.Text{Text: "b"}}, IsError: true},
				llm.ToolResult{ToolUseID: "toolu_3"}, llm.Text{Text: ""}}},
		}}
	srv := anthropictest.NewServer(anthropictest.NewStream().Message("msg_1", "claude-test").
		Block(anthropictest.Block{Type: "thinking", Signature: "s"}, "so").Text("Sum: ", "3").ToolUse("toolu_4", "add", `{"a":1}`).
		Block(anthropictest.Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}).Stop("tool_use"))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := llm.New(llm.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}, Observe: tel.Observe(srv.URL)})
	for _, err := range c.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	got := map[string]any{}
	for _, kv := range spans[0].Attributes() {
		if k := string(kv.Key); strings.HasPrefix(k, "gen_ai.input") || strings.HasPrefix(k, "gen_ai.output") ||
			strings.HasPrefix(k, "gen_ai.system") || strings.HasPrefix(k, "gen_ai.tool") {
			got[k] = typedValue(kv.Value)
		}
	}
	data, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "chat_content.json")
	if *update {
		if err := os.WriteFile(golden, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(data)+"\n"); diff != "" {
		t.Errorf("span content (-want +got):\n%s", diff)
	}
}

// typedValue returns v as a Go value that encoding/json writes, each
// scalar with its attribute type, so that a string "1" and an int 1 differ.
func typedValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.SLICE:
		var out []any
		for _, e := range v.AsSlice() {
			out = append(out, typedValue(e))
		}
		return out
	case attribute.MAP:
		out := map[string]any{}
		for _, kv := range v.AsMap() {
			out[string(kv.Key)] = typedValue(kv.Value)
		}
		return out
	case attribute.EMPTY:
		return nil
	}
	return v.Type().String() + ":" + v.String()
}
