package llm

import (
	"context"
	"iter"
	"strings"
)

// DefaultModel is the model a request names when its caller names none,
// in every layer above: one default for the whole module.
const DefaultModel = "claude-sonnet-5-5"

// ModelInfo is what the module knows about a model: its limits and its
// price. It is the one place code asks what a model accepts, so a new
// capability becomes a new field here (the table's rows name their fields,
// and a zero field must mean the conservative choice).
type ModelInfo struct {
	// ContextWindow is the most tokens one request may hold, the reply
	// included.
	ContextWindow int
	// MaxOutput is the highest max_tokens the model accepts.
	MaxOutput int
	// Price is the list price in USD per million tokens.
	Price Price
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
// overview and pricing pages (November 2026). Prices are for 5-minute cache
// writes; 1-hour writes (2× input), batch discounts and Haiku 5.5's
// prompt-length tiers (its lower tier is listed) are not modelled. The
// server-side context management columns are from the context editing and
// compaction-threshold pages (November 2026). A program
// may add or change entries before it makes its first request.
var Models = map[string]ModelInfo{
	"claude-fable-5-1":  {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 0.25}, ContextEditing: true, ServerCompaction: true},
	"claude-mythos-5-1": {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 0.25}, ContextEditing: true, ServerCompaction: true},
	"claude-fable-5":    {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 1}, ContextEditing: true, ServerCompaction: true},
	"claude-mythos-5":   {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{10, 50, 12.50, 1}, ContextEditing: true, ServerCompaction: true},
	"claude-opus-5-5":   {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{4, 20, 5, 0.20}, ContextEditing: true, ServerCompaction: true},
	"claude-opus-5":     {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{5, 25, 6.25, 0.50}, ContextEditing: true, ServerCompaction: true},
	"claude-sonnet-5-5": {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{2, 10, 2.50, 0.10}, ContextEditing: true, ServerCompaction: true},
	"claude-sonnet-5":   {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{2, 10, 2.50, 0.20}, ContextEditing: true, ServerCompaction: true},
	"claude-haiku-5-5":  {ContextWindow: 1_000_000, MaxOutput: 128_000, Price: Price{0.10, 0.50, 0.125, 0.01}, ContextEditing: true, ServerCompaction: true},
	"claude-opus-4-8":   {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ContextEditing: true, ServerCompaction: true},
	"claude-opus-4-7":   {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ContextEditing: true, ServerCompaction: true},
	"claude-opus-4-6":   {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ContextEditing: true, ServerCompaction: true},
	"claude-opus-4-5":   {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{5, 25, 6.25, 0.50}, ContextEditing: true},
	"claude-opus-4-1":   {ContextWindow: 200_000, MaxOutput: 32_000, Price: Price{15, 75, 18.75, 1.50}},
	"claude-opus-4-0":   {ContextWindow: 200_000, MaxOutput: 32_000, Price: Price{15, 75, 18.75, 1.50}},
	"claude-opus-4":     {ContextWindow: 200_000, MaxOutput: 32_000, Price: Price{15, 75, 18.75, 1.50}},
	"claude-sonnet-4-6": {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{3, 15, 3.75, 0.30}, ContextEditing: true, ServerCompaction: true},
	"claude-sonnet-4-5": {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{3, 15, 3.75, 0.30}, ContextEditing: true},
	"claude-sonnet-4-0": {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{3, 15, 3.75, 0.30}},
	"claude-sonnet-4":   {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{3, 15, 3.75, 0.30}},
	"claude-haiku-4-5":  {ContextWindow: 200_000, MaxOutput: 64_000, Price: Price{1, 5, 1.25, 0.10}, ContextEditing: true},
	"claude-3-5-haiku":  {ContextWindow: 200_000, MaxOutput: 8192, Price: Price{0.80, 4, 1, 0.08}},
	"claude-3-haiku":    {ContextWindow: 200_000, MaxOutput: 4096, Price: Price{0.25, 1.25, 0.30, 0.03}},
}

// LookupModel returns what [Models] knows of model, by its name or, for a
// dated name such as "claude-haiku-4-5-20251001", by the name without the
// date. ok is false for a model the table does not know.
func LookupModel(model string) (info ModelInfo, ok bool) {
	if i := strings.LastIndexByte(model, '-'); i >= 0 && len(model)-i == 9 && strings.Trim(model[i+1:], "0123456789") == "" {
		model = model[:i]
	}
	info, ok = Models[model]
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
