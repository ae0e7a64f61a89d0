package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/servertool"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

func TestNew(t *testing.T) {
	model := &scripted{}
	tests := []struct {
		name string
		cfg  Config
		err  string // a substring of the error; empty for none
	}{
		{"zero value with a model", Config{Model: model}, ""},
		{"no model", Config{}, "Model is required"},
		{"negative MaxIterations", Config{Model: model, MaxIterations: -1}, "MaxIterations is negative"},
		{"negative MaxDuration", Config{Model: model, MaxDuration: -time.Second}, "MaxDuration is negative"},
		{"negative MaxTotalTokens", Config{Model: model, MaxTotalTokens: -1}, "MaxTotalTokens is negative"},
		{"negative MaxAttempts", Config{Model: model, MaxAttempts: -1}, "MaxAttempts is negative"},
		{"thinking budget over MaxTokens", Config{Model: model, History: memory.New(memory.Config{MaxTokens: 1000}), Thinking: &llm.ThinkingConfig{BudgetTokens: 1000}}, "BudgetTokens"},
		{"thinking budget over the default MaxTokens", Config{Model: model, Thinking: &llm.ThinkingConfig{BudgetTokens: llm.DefaultMaxTokens}}, "BudgetTokens"},
		{"adaptive thinking needs no budget", Config{Model: model, History: memory.New(memory.Config{MaxTokens: 1000}), Thinking: &llm.ThinkingConfig{Adaptive: true}}, ""},
		{"a nil tool", Config{Model: model, Tools: []*tool.Tool{nil}}, "nil *Tool"},
		{"a tool twice", Config{Model: model, Tools: []*tool.Tool{calculator.New(), calculator.New()}}, "duplicate tool name"},
		{"a nil hook", Config{Model: model, Hooks: []Hook{ToolGate(func(context.Context, llm.ToolUse) error { return nil }), nil}}, "Config.Hooks[1] is nil"},
		{"middleware returning nil", Config{Model: model, Middleware: func(llm.Model) llm.Model { return nil }}, "nil Model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.cfg)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				c := a.cfg
				if c.MaxIterations != 20 || c.RepeatLimit != 3 || c.MaxAttempts != 3 ||
					a.cfg.History == nil || c.Registry == nil || c.Logger == nil {
					t.Errorf("defaults not filled: %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("New error = %v, want one containing %q", err, tt.err)
			}
		})
	}
	if _, err := New(Config{}); err == nil || err.Error() != "agent: Config.Model is required" {
		t.Errorf("New(Config{}) = %v, want the error naming Config.Model", err)
	}
}

// TestRequestShape checks what the config puts in the request: caching on
// by default, thinking, and the history sent as it is.
func TestRequestShape(t *testing.T) {
	for _, disable := range []bool{false, true} {
		srv, client := fake(t, at.NewStream().Text("ok").Stop("end_turn"))
		a := newAgent(t, client, Config{
			History:      memory.New(memory.Config{Model: "claude-haiku-4-5", MaxTokens: 4000}),
			System:       "sys",
			Thinking:     &llm.ThinkingConfig{BudgetTokens: 1024},
			DisableCache: disable,
			Registry:     newTools(t).reg,
		})
		if _, err := a.Run(t.Context(), "hi"); err != nil {
			t.Fatal(err)
		}
		r := srv.Requests()[0]
		p, err := r.Params()
		if err != nil {
			t.Fatal(err)
		}
		if p.Model != "claude-haiku-4-5" || p.MaxTokens != 4000 || len(p.Tools) != 3 ||
			!strings.Contains(string(p.Thinking), `"budget_tokens":1024`) || !strings.Contains(string(p.System), "sys") {
			t.Errorf("params = %+v", p)
		}
		if cached := strings.Contains(string(r.Body), "cache_control"); cached == disable {
			t.Errorf("DisableCache=%v: cache_control in the body = %v", disable, cached)
		}
	}
}

// TestDeferredTools checks that a deferrable tool keeps DeferLoading only
// beside a tool search among Config.ServerTools (package toolsearch adds
// one), and is sent whole otherwise, which the API would refuse.
func TestDeferredTools(t *testing.T) {
	regex := json.RawMessage(`{"type":"` + servertool.ToolSearchRegex + `","name":"tool_search_tool_regex"}`)
	for _, tt := range []struct {
		name   string
		server []json.RawMessage
		want   bool
	}{
		{"no tool search", nil, false},
		{"a tool search of the caller's", []json.RawMessage{regex}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, client := fake(t, at.NewStream().Text("ok").Stop("end_turn"))
			tl := tool.Must(tool.New("mcp__fx__rate", "Returns a rate.", func(context.Context, struct{}) (string, error) { return "", nil }))
			tl.Deferrable = true
			a := newAgent(t, client, Config{Tools: []*tool.Tool{tl}, ServerTools: tt.server})
			if _, _, err := collect(t, a.Stream(t.Context(), "hi")); err != nil {
				t.Fatal(err)
			}
			body := string(srv.Requests()[0].Body)
			if got := strings.Contains(body, `"defer_loading":true`); got != tt.want {
				t.Errorf("deferred: %v, want %v", got, tt.want)
			}
			if strings.Contains(body, servertool.ToolSearchBM25) {
				t.Error("the agent added a tool search tool of its own")
			}
		})
	}
}
