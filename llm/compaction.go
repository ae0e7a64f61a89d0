package llm

import (
	"slices"
	"strings"
)

// The edits the API documents, for [ContextEdit].Type: context editing
// (beta context-management-2025-06-27) and compaction at a token threshold
// (beta compact-2026-01-12). Request sends the beta headers its edits need.
const (
	ClearToolUses = "clear_tool_uses_20250919"
	ClearThinking = "clear_thinking_20251015"
	Compact       = "compact_20260112"
)

// A ContextEdit is one strategy of a request's context management (see
// [Request].ContextEdits): an edit the API makes to the prompt on the
// server, before the model reads it. A zero field takes the API's default;
// fields other than those of its Type must stay zero.
type ContextEdit struct {
	Type string `json:"type"`
	// Trigger is when the edit applies, in "input_tokens" (for Compact at
	// least 50,000, default 150,000) or "tool_uses".
	Trigger *EditLimit `json:"trigger,omitempty"`
	// Keep is the "tool_uses" ClearToolUses keeps (default 3), or the
	// "thinking_turns" ClearThinking keeps (default 1).
	Keep *EditLimit `json:"keep,omitempty"`
	// ClearAtLeast makes ClearToolUses clear this many input tokens or
	// none, so that a clear is worth the prompt cache it breaks.
	ClearAtLeast *EditLimit `json:"clear_at_least,omitempty"`
}

// An EditLimit is an amount in a [ContextEdit], such as {"input_tokens", N}.
type EditLimit struct {
	Type  string `json:"type"`
	Value int    `json:"value"`
}

// summarizeBeta is the beta of a [Request].Summarize.
const summarizeBeta = "compact-2026-09-04"

// beta returns the anthropic-beta header r's context management needs.
func (r Request) beta() string {
	need := map[string]string{ClearToolUses: "context-management-2025-06-27",
		ClearThinking: "context-management-2025-06-27", Compact: "compact-2026-01-12"}
	var betas []string
	if r.Summarize {
		betas = append(betas, summarizeBeta)
	}
	for _, e := range r.ContextEdits {
		if b := need[e.Type]; b != "" && !slices.Contains(betas, b) {
			betas = append(betas, b)
		}
	}
	return strings.Join(betas, ",")
}
