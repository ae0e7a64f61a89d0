package llm

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	json2 "github.com/go-json-experiment/json"

	"github.com/agentloop/agentloop/internal/apirules"
)

// DefaultModel is the model a request names when its caller names none,
// in every layer above: one default for the whole module.
const DefaultModel = "claude-sonnet-5-5"

// ModelInfo is what the module knows about a model: its limits, its price,
// and what its requests may carry, each thing it rejects a 400. It is the
// one place code asks what a model accepts: a new capability is a new field.
type ModelInfo struct {
	ContextWindow int   // the most tokens one request may hold, the reply included
	MaxOutput     int   // the highest max_tokens it accepts
	Price         Price // the list price
	// Thinking lists the thinking types it takes: "adaptive", "enabled"
	// (a budget) and "disabled" (off, or left out). A model whose thinking
	// cannot be off takes no forced tool_choice ("any" or "tool").
	Thinking []string
	// UnboundThinking is false for the models that bind a thinking block to
	// the model that wrote it and to the exact prefix before it, so that a
	// history rewrite must drop the thinking it invalidates (see memory).
	UnboundThinking bool
	// Prefill is true for the models that continue a final assistant
	// message the caller wrote, with thinking off; from Claude Opus 4.6 on,
	// that is a 400 (api/errors, the 5.5 migration guides).
	Prefill bool
	Efforts []string // the output_config.effort levels it takes, lowest first
	// ContextEditing and ServerCompaction say whether it takes the
	// clear_tool_uses and clear_thinking edits of context_management (the
	// context editing page's models), and the compact_20260112 edit (the
	// compaction-threshold page's).
	ContextEditing, ServerCompaction bool
	// StructuredOutputs says whether it takes output_config.format, a JSON
	// schema that constrains its answer (the structured outputs page's
	// models). Other models are asked for JSON in words.
	StructuredOutputs bool
	// ToolSearch says whether it takes the tool search tool, and so tools
	// sent with [ToolSpec].DeferLoading.
	ToolSearch bool
}

// Price is a model's price in USD per million tokens.
type Price struct {
	Input, Output float64
	CacheWrite    float64 // 5-minute cache writes, 1.25× input
	CacheRead     float64 // cache hits, usually 0.1× input
}

// Cost returns what usage u costs at price p, in USD, compaction and web
// searches included.
func (p Price) Cost(u Usage) float64 {
	c := (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheCreationInputTokens)*p.CacheWrite + float64(u.CacheReadInputTokens)*p.CacheRead) / 1e6
	if p != (Price{}) { // on a model without a price, searches cost nothing, as every other cost there
		c += float64(u.ServerToolUse.WebSearchRequests) * WebSearchPrice
	}
	if u.Compaction != nil {
		c += p.Cost(*u.Compaction)
	}
	return c
}

// models holds the Claude API's models, read from models.json, which is
// kept from the platform docs (November 2026): models overview, pricing,
// thinking, effort, "What's new", context editing, compaction-threshold and
// tool search pages. Prices are for 5-minute cache writes; 1-hour writes,
// batch discounts and Haiku 5.5's prompt-length tiers (its lower tier is
// listed) are not modelled. Of thinking: the 5.1 and 5.5 models bind it
// (whats-new-opus-5-5, whats-new-fable-5-1); Sonnet 5.5 takes
// "between_tools" instead of "disabled", and Haiku 5.5 may turn it off (at
// high effort or below), and so force a tool; Claude Opus 4.7 and later
// reject a budget, which the 4.6 models still take (deprecated) besides
// adaptive, and which is the only mode of the 4.5 models and earlier.
// Effort's xhigh came with Claude Opus 4.7. The table is read, never
// written, after init, so that concurrent clients share it without a lock;
// a caller reads it through [LookupModel], which hands out copies.
var models = func() (m map[string]ModelInfo) {
	// A misspelt field, which would read as false, fails.
	if err := json2.Unmarshal(modelsJSON, &m, json2.RejectUnknownMembers(true)); err != nil {
		panic("llm: models.json: " + err.Error()) // the package's own file, which its tests read
	}
	return m
}()

//go:embed models.json
var modelsJSON []byte

// LookupModel returns what the module knows of model, by its name or, for a
// dated name such as "claude-haiku-4-5-20251001", the name without the
// date. For a model it does not know, ok is false and info holds the
// current models' rules (adaptive thinking only, no forced tool use, bound
// thinking, every effort level), no limits, no price and no tool search, so
// that nothing the API might reject is sent unasked.
func LookupModel(model string) (info ModelInfo, ok bool) {
	if info, ok = models[apirules.Undated(model)]; !ok {
		info = ModelInfo{Thinking: []string{"adaptive"}, Efforts: []string{"low", "medium", "high", "xhigh", "max"}}
	}
	info.Thinking, info.Efforts = slices.Clone(info.Thinking), slices.Clone(info.Efforts) // the table's stay as they are
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

// check checks r, whose body is w, against [LookupModel]'s table and the API's rules,
// so that what the API would refuse with a 400 fails here, naming it. It
// reads Extra's tool_choice, thinking and output_config in place of w's.
// A Messages call (not count, which is not sent Extra, and which memory
// asks about a history ending with an assistant turn after every reply)
// must also keep two rules:
//   - Messages may end with an assistant turn to continue (a prefill) only
//     on a model with [ModelInfo].Prefill, thinking off. The API's own
//     paused turn sent back is no prefill: one that holds a server tool's
//     blocks (pause_turn) or a compaction block, and neither is a
//     [Request].Summarize call, which summarises the messages (the
//     compaction docs send one after an assistant reply).
//   - Extra may not hold temperature, top_p or top_k: API version
//     2026-10-21, the one this package's SDK sends, removed them for every
//     model, so that even a default value is a 400.
func check(r Request, w wireRequest, count bool) error {
	info, known := LookupModel(r.Model)
	unknown := map[bool]string{false: " (a model llm does not know gets the current models' rules)"}[known]
	choice, thinking, output := *cmp.Or(w.ToolChoice, &ToolChoice{}), *cmp.Or(w.Thinking, &wireThinking{}), *cmp.Or(w.Output, &wireOutput{})
	for name, v := range map[string]any{"tool_choice": &choice, "thinking": &thinking, "output_config": &output} {
		if x, ok := r.Extra[name]; ok {
			if data, err := json.Marshal(x); err != nil || json.Unmarshal(data, v) != nil {
				return fmt.Errorf("llm: Request.Extra[%q] is not a %s object", name, name)
			}
		}
	}
	for _, k := range apirules.SamplingParams {
		if _, ok := r.Extra[k]; ok && !count {
			return fmt.Errorf("llm: Request.Extra[%q]: API version 2026-10-21, which this package sends, takes no temperature, top_p or top_k on any model: leave it out, and steer the model in the prompt", k)
		}
	}
	if forced := choice.Type == "any" || choice.Type == "tool"; forced && !slices.Contains(info.Thinking, "disabled") {
		return fmt.Errorf("llm: %s does not accept a forced tool_choice (%q)%s: use \"auto\" and say in the prompt when the tool applies",
			r.Model, choice.Type, unknown)
	}
	if t := thinking.Type; t != "" && !slices.Contains(info.Thinking, t) {
		hint := map[bool]string{true: ": it thinks adaptively, and Request.Effort sets how much"}[slices.Contains(info.Thinking, "adaptive")]
		return fmt.Errorf("llm: %s takes thinking %s, not %q%s%s", r.Model, strings.Join(info.Thinking, " or "), t, unknown, hint)
	}
	if e := output.Effort; e != "" && !slices.Contains(info.Efforts, e) {
		if len(info.Efforts) == 0 {
			return fmt.Errorf("llm: %s takes no effort (%q)", r.Model, e)
		}
		return fmt.Errorf("llm: %s takes effort %s, not %q", r.Model, strings.Join(info.Efforts, ", "), e)
	}
	n := len(r.Messages)
	if count || n == 0 || r.Messages[n-1].Role != Assistant || r.Summarize ||
		info.Prefill && (thinking.Type == "" || thinking.Type == "disabled") {
		return nil
	}
	// The API merges consecutive messages of one role into one turn.
	for i := n - 1; i >= 0 && r.Messages[i].Role == Assistant; i-- {
		if slices.ContainsFunc(r.Messages[i].Content, func(b Block) bool { return apirules.Continues(b.blockType()) }) {
			return nil
		}
	}
	if info.Prefill { // "Claude Haiku 4.5 accepts one when thinking is off" (haiku-5-5/migration-guide)
		return fmt.Errorf("llm: %s continues a final assistant message (a prefill) only with thinking off", r.Model)
	}
	return fmt.Errorf("llm: %s does not continue a final assistant message (a prefill)%s: end Messages with a user turn, and ask there for what the prefill was for", r.Model, unknown)
}
