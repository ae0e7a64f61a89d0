package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// capabilityServer has a tool for each client capability: progress,
// elicitation and roots (as multi round-trip input requests), the trace
// context it received, and grow, which adds a tool and so changes the
// list. The progress tool returns once reported is closed (nil: at once).
func capabilityServer(reported <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "v1"}, nil)
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Reports progress."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			for i := 1; i <= 2; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 2, Message: fmt.Sprint("step ", i)})
			}
			if reported != nil {
				select {
				case <-reported:
				case <-ctx.Done():
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the user."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			answer, ok := req.Params.InputResponses["q"]
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{
					Message: "Your details?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
						"name": map[string]any{"type": "string", "default": "Ada"},
						"age":  map[string]any{"type": "integer"},
					}, "required": []any{"name"}},
				}}}, nil, nil
			}
			b, _ := json.Marshal(answer)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "Lists the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			answer, ok := req.Params.InputResponses["r"]
			if !ok {
				//lint:ignore SA1019 roots are what this tool tests.
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}}, nil, nil
			}
			b, _ := json.Marshal(answer)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "traceparent", Description: "Returns the trace context received."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			tp, _ := req.Params.Meta["traceparent"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "traceparent=" + tp}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds the tool late."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Came later."},
				func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
				})
			s.RemoveTools("progress")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
		})
	return s
}

func run1(t *testing.T, reg *tool.Registry, ctx context.Context, name string) llm.ToolResult {
	t.Helper()
	return reg.Run(ctx, []llm.ToolUse{{ID: "1", Name: "mcp__caps__" + name, Input: json.RawMessage(`{}`)}})[0]
}

// TestProgress checks that a call's progress notifications reach
// Options.Progress while the call is under way, in order, named by server
// and tool. The client handles notifications apart from the call's result,
// so the server's tool returns only once both have been reported: one that
// arrived after the result would be dropped (see Server.progress).
func TestProgress(t *testing.T) {
	var mu sync.Mutex
	var got []string
	reported := make(chan struct{})
	s := connectInMemory(t, capabilityServer(reported), &Options{Progress: func(server, tool string, progress, total float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if got = append(got, fmt.Sprintf("%s %s %v/%v %s", server, tool, progress, total, msg)); len(got) == 2 {
			close(reported)
		}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // only turns a hang into a failure
	defer cancel()
	if r := run1(t, registered(t, s), ctx, "progress"); r.IsError {
		t.Fatal(r)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"caps progress 1/2 step 1", "caps progress 2/2 step 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// TestElicitation checks both answers to a form: the Elicit function's,
// and without one the defaults, declining when a required field has none.
func TestElicitation(t *testing.T) {
	t.Run("user", func(t *testing.T) {
		s := connectInMemory(t, capabilityServer(nil), &Options{Elicit: func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			if form, err := Form(p); server != "caps" || p.Message != "Your details?" || err != nil || len(form.Properties) != 2 {
				return nil, fmt.Errorf("unexpected request from %s: %+v", server, p)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace", "age": 85}}, nil
		}})
		r := run1(t, registered(t, s), t.Context(), "ask")
		if got := llm.TextOf(r.Content); r.IsError || !strings.Contains(got, `"action":"accept"`) || !strings.Contains(got, `"Grace"`) {
			t.Errorf("ask = %+v", r)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		s := connectInMemory(t, capabilityServer(nil), nil)
		r := run1(t, registered(t, s), t.Context(), "ask")
		if got := llm.TextOf(r.Content); r.IsError || !strings.Contains(got, `"action":"accept"`) || !strings.Contains(got, `{"name":"Ada"}`) {
			t.Errorf("ask = %+v", r)
		}
	})
	schema := func(required ...any) *mcp.ElicitParams {
		return &mcp.ElicitParams{RequestedSchema: map[string]any{"properties": map[string]any{
			"a": map[string]any{"type": "string", "default": "x"}, "b": map[string]any{"type": "number"}}, "required": required}}
	}
	for _, tc := range []struct {
		name string
		p    *mcp.ElicitParams
		want *mcp.ElicitResult
	}{
		{"required fields have defaults", schema("a"), &mcp.ElicitResult{Action: "accept", Content: map[string]any{"a": "x"}}},
		{"a required field has none", schema("a", "b"), &mcp.ElicitResult{Action: "decline"}},
		{"url mode needs a user", &mcp.ElicitParams{Mode: "url", URL: "https://x"}, &mcp.ElicitResult{Action: "decline"}},
		{"the spec's other keywords", &mcp.ElicitParams{RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"e": map[string]any{"type": "string", "enum": []any{"a", "b"}, "enumNames": []any{"A", "B"}, "default": "b"},
			"m": map[string]any{"type": "string", "format": "email", "minLength": 1.0, "maxLength": 10.0},
			"n": map[string]any{"type": "number", "minimum": 0.5, "default": 1.5}}, "required": []any{"e", "n"}}},
			&mcp.ElicitResult{Action: "accept", Content: map[string]any{"e": "b", "n": 1.5}}},
		{"no JSON Schema", &mcp.ElicitParams{RequestedSchema: map[string]any{"type": 5}}, &mcp.ElicitResult{Action: "decline"}},
		{"no schema", &mcp.ElicitParams{}, &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}},
	} {
		if diff := cmp.Diff(tc.want, elicitDefaults(tc.p)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestRoots checks that Options.Roots reach the server as file URLs.
func TestRoots(t *testing.T) {
	dir := t.TempDir()
	s := connectInMemory(t, capabilityServer(nil), &Options{Roots: []string{dir}})
	r := run1(t, registered(t, s), t.Context(), "roots")
	if got := llm.TextOf(r.Content); r.IsError || !strings.Contains(got, `"uri":"file://`+dir+`"`) {
		t.Errorf("roots = %+v", r)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestTracePropagation checks that a call carries its ctx's trace context
// in _meta.
func TestTracePropagation(t *testing.T) {
	s := connectInMemory(t, capabilityServer(nil), &Options{Propagator: propagation.TraceContext{}})
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(t.Context(), sc)
	r := run1(t, registered(t, s), ctx, "traceparent")
	if got, want := llm.TextOf(r.Content), "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; got != want {
		t.Errorf("server got %q, want %q", got, want)
	}
}

// signalHandler is a slog handler that signals each message it sees.
type signalHandler struct {
	slog.Handler
	msgs chan string
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	select {
	case h.msgs <- r.Message:
	default:
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }

// TestToolListChanged checks that a tool the server adds later is
// registered, and a tool it removes answers that it is gone.
func TestToolListChanged(t *testing.T) {
	msgs := make(chan string, 16)
	s := connectInMemory(t, capabilityServer(nil), &Options{Logger: slog.New(signalHandler{slog.DiscardHandler, msgs})})
	reg := registered(t, s)
	if _, ok := reg.Lookup("mcp__caps__late"); ok {
		t.Fatal("late is registered before it exists")
	}
	if r := run1(t, reg, t.Context(), "grow"); r.IsError {
		t.Fatal(r)
	}
	for m := range msgs {
		if m == "mcp server's tools changed" {
			break
		}
	}
	if r := run1(t, reg, t.Context(), "late"); r.IsError || llm.TextOf(r.Content) != "late" {
		t.Errorf("late = %+v", r)
	}
	if r := run1(t, reg, t.Context(), "progress"); !r.IsError || !strings.Contains(llm.TextOf(r.Content), "no longer offers") {
		t.Errorf("a removed tool's call = %+v", r)
	}
}
