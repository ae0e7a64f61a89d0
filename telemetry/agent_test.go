package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/agent"
	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSpanTree runs the loop against the fake API with a recording SDK and
// compares the tree of spans, with their names, kinds, attributes, status
// and events, to testdata/spans/NAME.json.
func TestSpanTree(t *testing.T) {
	tests := []struct {
		name    string
		replies []at.Reply
		history func() *memory.History
		capture bool
		deny    bool
	}{{
		name: "tool_round_trip",
		replies: []at.Reply{
			at.NewStream().Usage(100, 20, 30, 50).ToolUse("toolu_1", "calculator", `{"a":3,"b":5,`, `"operation":"add"}`).Stop("tool_use"),
			at.NewStream().Text("It is 8.").Stop("end_turn"),
		},
	}, {
		name: "tool_round_trip_content",
		replies: []at.Reply{
			at.NewStream().ToolUse("toolu_1", "calculator", `{"a":3,"b":5,"operation":"add"}`).Stop("tool_use"),
			at.NewStream().Text("It is 8.").Stop("end_turn"),
		},
		capture: true,
	}, {
		// The client retries an overloaded answer itself: two chat spans.
		name: "retry",
		replies: []at.Reply{
			at.HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RetryAfter: time.Millisecond},
			at.NewStream().Text("fine").Stop("end_turn"),
		},
	}, {
		// A stream that fails after output arrived is retried by the loop,
		// which throws the partial turn away.
		name: "retry_discard",
		replies: []at.Reply{
			at.NewStream().Text("I will").ErrorEvent("overloaded_error", "Overloaded"),
			at.NewStream().Text("fine").Stop("end_turn"),
		},
	}, {
		// A denied call is not run: an event, not an execute_tool span.
		name: "denied",
		replies: []at.Reply{
			at.NewStream().ToolUse("toolu_1", "calculator", `{"a":3,"b":5,"operation":"add"}`).Stop("tool_use"),
			at.NewStream().Text("It is 8.").Stop("end_turn"),
		},
		deny: true,
	}, {
		name:    "failure",
		replies: []at.Reply{at.HTTPError{Status: 400, Type: "invalid_request_error", Message: "bad request"}},
	}, {
		name:    "refusal",
		replies: []at.Reply{at.NewStream().Text("I can't").Stop("refusal")},
	}, {
		name: "compaction",
		replies: []at.Reply{
			at.NewStream().Text("SUMMARY: the user asked things.").Stop("end_turn"),
			at.NewStream().Text("ok").Stop("end_turn"),
		},
		history: func() *memory.History {
			h := memory.New(memory.Config{Model: llm.DefaultModel, ContextWindow: 20_000, MaxTokens: 1000, KeepRecent: 1, Compaction: "client"})
			for i := range 25 {
				h.AppendUser(llm.Text{Text: strings.Repeat("question ", 200) + string(rune('a'+i))})
				h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: strings.Repeat("answer ", 200)}}}, llm.Usage{})
			}
			return h
		},
	}, {
		// A tool call left without its result is answered by a repair.
		name:    "repair",
		replies: []at.Reply{at.NewStream().Text("ok").Stop("end_turn")},
		history: func() *memory.History {
			h := memory.New(memory.Config{})
			h.AppendUser(llm.Text{Text: "add 1 and 2"})
			h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{
				llm.ToolUse{ID: "toolu_0", Name: "calculator", Input: json.RawMessage(`{"expression":"1+2"}`)}}}, llm.Usage{})
			return h
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tel := telemetry.New(telemetry.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), CaptureContent: tt.capture})
			srv := at.NewServer(tt.replies...)
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := llm.New(llm.Config{BaseURL: srv.URL, APIKey: "sk-ant-secret", HTTPClient: &http.Client{Transport: tr}, Observe: tel.Observe(srv.URL)})
			reg := tool.NewRegistry(tool.Config{})
			if err := reg.Register(calculator.New()); err != nil {
				t.Fatal(err)
			}
			cfg := agent.Config{Model: client, Registry: reg, System: "Be brief.", Name: "helper", ConversationID: "conv_1", Observer: tel}
			if tt.history != nil {
				cfg.History = tt.history()
			}
			if tt.deny {
				cfg.Hooks = []agent.Hook{agent.ToolGate(func(context.Context, llm.ToolUse) error { return errors.New("no") })}
			}
			a, err := agent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			a.Run(t.Context(), "What is 3 + 5?")

			var got bytes.Buffer
			enc := json.NewEncoder(&got)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(spanTree(rec.Ended())); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(got.String(), "sk-ant-secret") {
				t.Error("the API key is in a span")
			}
			for _, text := range []string{"3 + 5", "It is 8", "Be brief", `"add"`} {
				if !tt.capture && strings.Contains(got.String(), text) {
					t.Errorf("content %q is in a span with content capture off", text)
				}
			}
			golden(t, filepath.Join("testdata", "spans", tt.name+".json"), got.Bytes())
		})
	}
}

// golden compares got with the file at path, or writes it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := gocmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// A span is a recorded span without what changes from run to run: ids,
// times, the fake server's port, measured durations.
type span struct {
	Name       string         `json:"name"`
	Kind       string         `json:"kind"`
	Status     string         `json:"status,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Events     []event        `json:"events,omitempty"`
	Children   []span         `json:"children,omitempty"`
}

type event struct {
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// spanTree returns the recorded spans as trees, each span's children in
// the order they started.
func spanTree(spans []sdktrace.ReadOnlySpan) []span {
	slices.SortStableFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	var build func(parent string) []span
	build = func(parent string) []span {
		var out []span
		for _, s := range spans {
			p := ""
			if s.Parent().IsValid() {
				p = s.Parent().SpanID().String()
			}
			if p != parent {
				continue
			}
			sp := span{Name: s.Name(), Kind: s.SpanKind().String(), Attributes: attrs(s.Attributes()),
				Children: build(s.SpanContext().SpanID().String())}
			if st := s.Status(); st.Code != 0 {
				sp.Status = st.Code.String() + ": " + st.Description
			}
			for _, e := range s.Events() {
				sp.Events = append(sp.Events, event{Name: e.Name, Attributes: attrs(e.Attributes)})
			}
			out = append(out, sp)
		}
		return out
	}
	return build("")
}

// attrs returns kvs as a map, with the values that vary between runs
// replaced by what they are.
func attrs(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch kv.Key {
		case "server.port", "gen_ai.response.time_to_first_chunk":
			m[string(kv.Key)] = "<" + strings.ToLower(kv.Value.Type().String()) + ">"
		default:
			m[string(kv.Key)] = plain(kv.Value)
		}
	}
	return m
}

// plain returns v as a Go value that encoding/json writes.
func plain(v attribute.Value) any {
	switch v.Type() {
	case attribute.SLICE:
		var out []any
		for _, e := range v.AsSlice() {
			out = append(out, plain(e))
		}
		return out
	case attribute.MAP:
		out := map[string]any{}
		for _, kv := range v.AsMap() {
			out[string(kv.Key)] = plain(kv.Value)
		}
		return out
	case attribute.EMPTY:
		return nil
	}
	return v.AsInterface()
}

// TestNotRunEvent checks that a call is reported as not run only when the
// loop answered it itself, here the second of two equal calls.
func TestNotRunEvent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel := telemetry.New(telemetry.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	srv := at.NewServer(
		at.NewStream().ToolUse("toolu_1", "calculator", `{"a":3,"b":5,"operation":"add"}`).
			ToolUse("toolu_2", "calculator", `{"a":3,"b":5,"operation":"add"}`).Stop("tool_use"),
		at.NewStream().Text("8").Stop("end_turn"))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := llm.New(llm.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}})
	a, err := agent.New(agent.Config{Model: client, Tools: []*tool.Tool{calculator.New()}, RepeatLimit: 2, Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), "What is 3 + 5?"); err != nil {
		t.Fatal(err)
	}
	var notRun, ran []string
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.tool.call.id" {
				ran = append(ran, kv.Value.AsString())
			}
		}
		for _, e := range s.Events() {
			if e.Name == telemetry.EventNotRun {
				for _, kv := range e.Attributes {
					if kv.Key == "gen_ai.tool.call.id" {
						notRun = append(notRun, kv.Value.AsString())
					}
				}
			}
		}
	}
	if diff := gocmp.Diff([]string{"toolu_2"}, notRun); diff != "" {
		t.Errorf("calls reported not run (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff([]string{"toolu_1"}, ran); diff != "" {
		t.Errorf("calls with an execute_tool span (-want +got):\n%s", diff)
	}
}

// TestNestedRun checks that a run inside a tool call, a subagent's, nests
// under the call's execute_tool span: the span the tool's context carries.
func TestNestedRun(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel := telemetry.New(telemetry.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	srv := at.NewServer(
		at.NewStream().ToolUse("toolu_1", "ask", `{"question":"3 + 5?"}`).Stop("tool_use"),
		at.NewStream().Text("8").Stop("end_turn"), // the subagent's answer
		at.NewStream().Text("It is 8.").Stop("end_turn"),
	)
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := llm.New(llm.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}, Observe: tel.Observe(srv.URL)})
	type question struct {
		Question string `json:"question"`
	}
	ask := tool.Must(tool.New("ask", "Ask a helper.", func(ctx context.Context, q question) (string, error) {
		sub, err := agent.New(agent.Config{Model: client, Name: "helper", Observer: tel})
		if err != nil {
			return "", err
		}
		res, err := sub.Run(ctx, q.Question)
		return res.Text, err
	}))
	a, err := agent.New(agent.Config{Model: client, Tools: []*tool.Tool{ask}, Name: "main", Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), "What is 3 + 5?"); err != nil {
		t.Fatal(err)
	}
	// names returns the tree of span names, each with its children.
	var names func(spans []span) []any
	names = func(spans []span) []any {
		var out []any
		for _, s := range spans {
			out = append(out, s.Name)
			if len(s.Children) > 0 {
				out = append(out, names(s.Children))
			}
		}
		return out
	}
	want := []any{"invoke_agent main", []any{"chat claude-sonnet-5-5", "execute_tool ask",
		[]any{"invoke_agent helper", []any{"chat claude-sonnet-5-5"}}, "chat claude-sonnet-5-5"}}
	if diff := gocmp.Diff(want, names(spanTree(rec.Ended()))); diff != "" {
		t.Errorf("span tree (-want +got):\n%s", diff)
	}
}
