package llm

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// The model table finds dated names, prices every kind of token, and
// knows nothing of other vendors' models.
func TestLookupModel(t *testing.T) {
	tests := []struct {
		model  string
		u      Usage
		usd    float64
		window int
		ok     bool
	}{
		{"claude-sonnet-4-5", Usage{InputTokens: 1_000_000}, 3, 200_000, true},
		{"claude-sonnet-4-5-20250929", Usage{OutputTokens: 1_000_000}, 15, 200_000, true},
		{"claude-haiku-4-5", Usage{CacheCreationInputTokens: 1_000_000, CacheReadInputTokens: 1_000_000}, 1.25 + 0.10, 200_000, true},
		{"claude-opus-4-20250514", Usage{InputTokens: 1_000_000}, 15, 200_000, true},
		{"claude-opus-5-5", Usage{InputTokens: 500_000, OutputTokens: 100_000}, 2 + 2, 1_000_000, true},
		{"claude-sonnet-5-20260301", Usage{InputTokens: 1_000_000}, 2, 1_000_000, true},
		{DefaultModel, Usage{}, 0, 1_000_000, true},
		{"gpt-4o", Usage{InputTokens: 1}, 0, 0, false},
		{"claude-sonnet", Usage{InputTokens: 1}, 0, 0, false},
		{"claude-sonnet-4-50", Usage{InputTokens: 1}, 0, 0, false},
	}
	for _, tt := range tests {
		m, ok := LookupModel(tt.model)
		if got := m.Price.Cost(tt.u); ok != tt.ok || math.Abs(got-tt.usd) > 1e-9 || m.ContextWindow != tt.window {
			t.Errorf("LookupModel(%q) = %+v, %v costing %v; want window %d, %v, costing %v", tt.model, m, ok, got, tt.window, tt.ok, tt.usd)
		}
	}
	for name, m := range models {
		if m.ContextWindow <= 0 || m.MaxOutput <= 0 || m.MaxOutput >= m.ContextWindow || m.Price.Input <= 0 {
			t.Errorf("models[%q] = %+v: limits or price missing", name, m)
		}
	}
}

// Each setting a model rejects fails before any request, naming what is
// wrong; what it accepts passes. Unknown models get the current rules.
func TestCheckModel(t *testing.T) {
	msgs := []Message{{Role: User, Content: []Block{Text{Text: "hi"}}}}
	tests := []struct {
		name, model string
		tc          *ToolChoice
		th          *ThinkingConfig
		effort      string
		wantErr     string // a substring; empty means none
		extra       map[string]any
	}{
		{"forced any on opus 5.5", "claude-opus-5-5", &ToolChoice{Type: "any"}, nil, "", "forced tool_choice", nil},
		{"forced tool on fable 5.1", "claude-fable-5-1", &ToolChoice{Type: "tool", Name: "x"}, nil, "", "forced tool_choice", nil},
		{"forced tool on sonnet 5.5", "claude-sonnet-5-5", &ToolChoice{Type: "tool", Name: "x"}, nil, "", "forced tool_choice", nil},
		{"forced on an unknown model", "claude-next", &ToolChoice{Type: "any"}, nil, "", "does not know", nil},
		{"forced on opus 5", "claude-opus-5", &ToolChoice{Type: "any"}, nil, "", "", nil},
		{"auto and none everywhere", "claude-opus-5-5", &ToolChoice{Type: "none"}, nil, "", "", nil},
		{"budget on opus 5.5", "claude-opus-5-5", nil, &ThinkingConfig{BudgetTokens: 2048}, "", `takes thinking adaptive, not "enabled"`, nil},
		{"budget on haiku 5.5", "claude-haiku-5-5", nil, &ThinkingConfig{BudgetTokens: 2048}, "", `takes thinking adaptive or disabled, not "enabled"`, nil},
		{"budget on sonnet 4.6", "claude-sonnet-4-6", nil, &ThinkingConfig{BudgetTokens: 2048}, "", "", nil},
		{"adaptive on haiku 4.5", "claude-haiku-4-5", nil, &ThinkingConfig{Adaptive: true}, "", `takes thinking enabled or disabled, not "adaptive"`, nil},
		{"adaptive on fable 5.1", "claude-fable-5-1", nil, &ThinkingConfig{Adaptive: true, Display: "summarized"}, "", "", nil},
		{"effort max on opus 5.5", "claude-opus-5-5", nil, nil, "max", "", nil},
		{"effort xhigh on opus 4.6", "claude-opus-4-6", nil, nil, "xhigh", "takes effort low, medium, high, max", nil},
		{"effort on haiku 4.5", "claude-haiku-4-5", nil, nil, "low", "takes no effort", nil},
		{"a misspelt effort", "claude-sonnet-5-5", nil, nil, "hgh", `not "hgh"`, nil},
		{"effort on an unknown model", "claude-next", nil, nil, "xhigh", "", nil},
		{"a forced choice in Extra", "claude-opus-5-5", nil, nil, "", "forced tool_choice", map[string]any{"tool_choice": map[string]any{"type": "any"}}},
		{"thinking disabled in Extra", "claude-fable-5-1", nil, nil, "", `takes thinking adaptive, not "disabled"`, map[string]any{"thinking": map[string]string{"type": "disabled"}}},
		{"thinking disabled in Extra on haiku 5.5", "claude-haiku-5-5", nil, nil, "", "", map[string]any{"thinking": map[string]string{"type": "disabled"}}},
		{"a budget in Extra", "claude-sonnet-5-5", nil, nil, "", `not "enabled"`, map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}}},
		{"an effort in Extra", "claude-opus-4-6", nil, nil, "", `not "xhigh"`, map[string]any{"output_config": map[string]any{"effort": "xhigh"}}},
		{"a malformed Extra", "claude-opus-5-5", nil, nil, "", `Extra["thinking"]`, map[string]any{"thinking": "off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := requestBody(Request{Model: tt.model, Messages: msgs, ToolChoice: tt.tc, Thinking: tt.th, Effort: tt.effort, Extra: tt.extra}, false)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

// The table's rules for the current models are the docs': thinking always
// on for Opus 5.5 and Fable 5.1, and bound blocks on the four current
// models (Haiku 5.5 may turn thinking off, and so force a tool).
func TestCurrentModelRules(t *testing.T) {
	type rules struct {
		Thinking string
		Unbound  bool
	}
	want := map[string]rules{
		"claude-opus-5-5":   {Thinking: "adaptive"},
		"claude-fable-5-1":  {Thinking: "adaptive"},
		"claude-sonnet-5-5": {Thinking: "adaptive"},
		"claude-haiku-5-5":  {Thinking: "adaptive disabled"},
		"claude-opus-5":     {Thinking: "adaptive disabled", Unbound: true},
		"claude-sonnet-4-6": {Thinking: "adaptive enabled disabled", Unbound: true},
		"claude-next":       {Thinking: "adaptive"},
	}
	for model, w := range want {
		m, _ := LookupModel(model)
		if got := (rules{strings.Join(m.Thinking, " "), m.UnboundThinking}); got != w {
			t.Errorf("%s: %+v, want %+v", model, got, w)
		}
	}
}

// TestLookupModelCopies checks that what LookupModel returns is the
// caller's: changing it changes nothing for the next caller, so that
// clients on many goroutines share the table without a race.
func TestLookupModelCopies(t *testing.T) {
	for _, model := range []string{DefaultModel, "claude-unknown-9"} {
		before, _ := LookupModel(model)
		want := fmt.Sprintf("%+v", before) // what it holds now, not what it may share
		m, _ := LookupModel(model)
		m.Thinking[0], m.Efforts[0], m.ContextWindow = "changed", "changed", 1
		if after, _ := LookupModel(model); fmt.Sprintf("%+v", after) != want {
			t.Errorf("LookupModel(%q) after a caller changed its result = %+v, want %s", model, after, want)
		}
	}
}
