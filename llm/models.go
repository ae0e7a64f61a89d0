package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// DefaultModel is the model a request names when its caller names none,
// in every layer above: one default for the whole module.
const DefaultModel = "claude-sonnet-5-5"

// ModelInfo is what the module knows about a model: its limits, its price,
// and what its requests may carry. It is the one place code asks what a
// model accepts, so a new capability becomes a new field here (the table's
// rows name their fields). A zero field is the conservative choice, the
// rules of the current models, which is what [LookupModel] answers for a
// model the table does not know.
type ModelInfo struct {
	// ContextWindow is the most tokens one request may hold, the reply
	// included.
	ContextWindow int
	// MaxOutput is the highest max_tokens the model accepts.
	MaxOutput int
	// Price is the list price in USD per million tokens.
	Price Price

	// What requests may carry; each false is a 400 from the API. A model
	// whose ThinkingOff is false is adaptive-only: its thinking is always
	// on, and a budget or "disabled" is rejected.
	ThinkingBudget   bool // takes thinking {"type":"enabled","budget_tokens":N}
	BudgetOnly       bool // and only that: rejects {"type":"adaptive"}
	ThinkingOff      bool // thinking can be off: {"type":"disabled"}, or left out
	ForcedToolChoice bool // tool_choice "any" and "tool"
	// UnboundThinking is false for the models that bind a thinking block to
	// the model that wrote it and to the exact prefix before it, so that a
	// history rewrite must drop the thinking it invalidates (see memory).
	UnboundThinking bool
	// Efforts are the output_config.effort levels it takes, lowest first;
	// DefaultEffort is the API's when a request sets none.
	Efforts       []string
	DefaultEffort string
	// ContextEditing reports whether the model takes the clear_tool_uses and clear_thinking
	// edits of context_management (the context editing page's models).
	ContextEditing bool
	// ServerCompaction reports whether the model takes the compact_20260112 edit, compaction
	// at a token threshold (the compaction-threshold page's models).
	ServerCompaction bool
}

// Price is a model's price in USD per million tokens.
type Price struct {
	Input      float64
	Output     float64
	CacheWrite float64 // 5-minute cache writes, 1.25× input
	CacheRead  float64 // cache hits, usually 0.1× input
}

// Cost returns what usage u costs at price p, in USD, compaction included.
func (p Price) Cost(u Usage) float64 {
	c := (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheCreationInputTokens)*p.CacheWrite + float64(u.CacheReadInputTokens)*p.CacheRead) / 1e6
	if u.Compaction != nil {
		c += p.Cost(*u.Compaction)
	}
	return c
}

// Models holds the Claude API's models, from the platform docs' models
// overview, pricing, thinking, effort and "What's new" pages (November
// 2026). Prices are for 5-minute cache writes; 1-hour writes (2× input),
// batch discounts and Haiku 5.5's prompt-length tiers (its lower tier is
// listed) are not modelled. The server-side context management columns are
// from the context editing and compaction-threshold pages. A program may
// add or change entries before it makes its first request.
var Models = map[string]ModelInfo{
	// Thinking is always on and adaptive, forced tool use is a 400, and
	// thinking blocks are bound to the model and the prefix
	// (models/opus-5-5/whats-new-opus-5-5, models/fable-5-1/whats-new-fable-5-1).
	"claude-fable-5-1":  {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 0.25}, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-mythos-5-1": {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 0.25}, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-opus-5-5":   {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{4, 20, 5, 0.20}, Efforts: efforts5, DefaultEffort: "medium", ContextEditing: true, ServerCompaction: true},
	// Sonnet 5.5 takes "between_tools" instead of "disabled" and rejects a
	// budget; forced tool use is a 400 and its blocks are bound. Haiku 5.5
	// may turn thinking off (at high effort or below) and has no forced
	// tool use among its breaking changes, but binds its blocks.
	"claude-sonnet-5-5": {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{2, 10, 2.50, 0.10}, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-haiku-5-5":  {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{0.10, 0.50, 0.125, 0.01}, ThinkingOff: true, ForcedToolChoice: true, Efforts: efforts5, DefaultEffort: "medium", ContextEditing: true, ServerCompaction: true},
	// Thinking is on by default and may be disabled; no budget (Claude
	// Opus 4.7 and later reject one); blocks are not bound.
	"claude-fable-5":  {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 1}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-mythos-5": {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 1}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-opus-5":   {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{5, 25, 6.25, 0.50}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-sonnet-5": {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{2, 10, 2.50, 0.20}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-opus-4-8": {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-opus-4-7": {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts5, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	// Claude 4.6 models still take a budget (deprecated) besides adaptive.
	"claude-opus-4-6":   {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ThinkingBudget: true, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts4, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	"claude-sonnet-4-6": {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{3, 15, 3.75, 0.30}, ThinkingBudget: true, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: efforts4, DefaultEffort: "high", ContextEditing: true, ServerCompaction: true},
	// Claude 4.5 models and earlier: a budget is the only thinking mode.
	"claude-opus-4-5":   {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ThinkingBudget: true, BudgetOnly: true, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, Efforts: []string{"low", "medium", "high"}, DefaultEffort: "high", ContextEditing: true},
	"claude-opus-4-1":   budgetOnly(200_000, 32_000, Price{15, 75, 18.75, 1.50}, false),
	"claude-opus-4-0":   budgetOnly(200_000, 32_000, Price{15, 75, 18.75, 1.50}, false),
	"claude-opus-4":     budgetOnly(200_000, 32_000, Price{15, 75, 18.75, 1.50}, false),
	"claude-sonnet-4-5": budgetOnly(200_000, 64_000, Price{3, 15, 3.75, 0.30}, true),
	"claude-sonnet-4-0": budgetOnly(200_000, 64_000, Price{3, 15, 3.75, 0.30}, false),
	"claude-sonnet-4":   budgetOnly(200_000, 64_000, Price{3, 15, 3.75, 0.30}, false),
	"claude-haiku-4-5":  budgetOnly(200_000, 64_000, Price{1, 5, 1.25, 0.10}, true),
	"claude-3-5-haiku":  {ContextWindow: 200_000, MaxOutput: 8192, Price: Price{0.80, 4, 1, 0.08}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true},
	"claude-3-haiku":    {ContextWindow: 200_000, MaxOutput: 4096, Price: Price{0.25, 1.25, 0.30, 0.03}, ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true},
}

// The effort ladders: xhigh came with Claude Opus 4.7.
var (
	efforts5 = []string{"low", "medium", "high", "xhigh", "max"}
	efforts4 = []string{"low", "medium", "high", "max"}
)

// budgetOnly is a Claude 4 model whose only thinking mode is a budget and
// that takes no effort.
func budgetOnly(window, output int, p Price, contextEditing bool) ModelInfo {
	return ModelInfo{ContextWindow: window, MaxOutput: output, Price: p, ThinkingBudget: true, BudgetOnly: true,
		ThinkingOff: true, ForcedToolChoice: true, UnboundThinking: true, ContextEditing: contextEditing}
}

// unknownModel is what [LookupModel] answers for a model the table does
// not know: the current models' rules, and every effort level, so that
// nothing the API might reject is sent on the library's own initiative.
var unknownModel = ModelInfo{Efforts: efforts5}

// LookupModel returns what [Models] knows of model, by its name or, for a
// dated name such as "claude-haiku-4-5-20251001", by the name without the
// date. ok is false for a model the table does not know; info then holds
// the conservative defaults: no limits or price, and the current models'
// rules (adaptive-only thinking, no forced tool use, bound thinking
// blocks), with every effort level.
func LookupModel(model string) (info ModelInfo, ok bool) {
	if i := strings.LastIndexByte(model, '-'); i >= 0 && len(model)-i == 9 && strings.Trim(model[i+1:], "0123456789") == "" {
		model = model[:i]
	}
	if info, ok = Models[model]; !ok {
		info = unknownModel
	}
	return info, ok
}

// A Model streams one model turn. [*Client] satisfies it, and so does a
// [ModelFunc] that yields scripted events. Every layer above uses this one.
type Model interface {
	Stream(ctx context.Context, req Request) iter.Seq2[Event, error]
}

// ModelFunc adapts a function, such as a middleware or a fake, to [Model].
type ModelFunc func(ctx context.Context, req Request) iter.Seq2[Event, error]

// Stream calls f(ctx, req).
func (f ModelFunc) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	return f(ctx, req)
}

// DefaultMaxTokens is the output cap of a turn whose max_tokens is not set,
// here and in every layer above: one default for the whole module.
const DefaultMaxTokens = 8192

// checkModel checks what r asks of its model, Extra's tool_choice,
// thinking and output_config included, against [Models], so that a setting
// the model rejects fails here, naming it, instead of as a 400.
func checkModel(r Request) error {
	info, known := LookupModel(r.Model)
	unknown := map[bool]string{false: " (a model llm.Models does not know gets the current models' rules)"}[known]
	var choice, thinking struct{ Type string }
	var output struct{ Effort string }
	if r.ToolChoice != nil {
		choice.Type = r.ToolChoice.Type
	}
	if th := r.Thinking; th != nil && th.Adaptive {
		thinking.Type = "adaptive"
	} else if th != nil && th.BudgetTokens > 0 {
		thinking.Type = "enabled"
	}
	output.Effort = r.Effort
	for name, v := range map[string]any{"tool_choice": &choice, "thinking": &thinking, "output_config": &output} {
		if x, ok := r.Extra[name]; ok {
			if data, err := json.Marshal(x); err != nil || json.Unmarshal(data, v) != nil {
				return fmt.Errorf("llm: Request.Extra[%q] is not a %s object", name, name)
			}
		}
	}
	switch t := thinking.Type; {
	case choice.Type == "any" || choice.Type == "tool":
		if !info.ForcedToolChoice {
			return fmt.Errorf("llm: %s does not accept a forced tool_choice (%q)%s: use \"auto\" and say in the prompt when the tool applies",
				r.Model, choice.Type, unknown)
		}
	case t == "adaptive" && info.BudgetOnly:
		return fmt.Errorf("llm: %s takes no adaptive thinking, only a thinking budget", r.Model)
	case t == "enabled" && !info.ThinkingBudget:
		return fmt.Errorf("llm: %s takes no thinking budget%s: current models think adaptively, and Request.Effort sets how much", r.Model, unknown)
	case t == "disabled" && !info.ThinkingOff:
		return fmt.Errorf("llm: %s cannot turn thinking off%s: its thinking is adaptive, and a lower Request.Effort makes it think less", r.Model, unknown)
	}
	if e := output.Effort; e != "" && !slices.Contains(info.Efforts, e) {
		if len(info.Efforts) == 0 {
			return fmt.Errorf("llm: %s takes no effort (%q)", r.Model, e)
		}
		return fmt.Errorf("llm: %s takes effort %s, not %q", r.Model, strings.Join(info.Efforts, ", "), e)
	}
	return nil
}
