package llm

import "strings"

// ContextManagement is a request's context_management: edits the API makes
// to the prompt on the server, before the model reads it. The client keeps
// its history as it is; the edits apply to what the model sees.
type ContextManagement struct {
	Edits []ContextEdit `json:"edits"`
}

// The context edits the API documents, for [ContextEdit].Type. The first two
// are context editing, behind the beta header context-management-2025-06-27;
// the third is compaction at a token threshold, behind compact-2026-01-12.
const (
	ClearToolUses = "clear_tool_uses_20250919"
	ClearThinking = "clear_thinking_20251015"
	Compact       = "compact_20260112"
)

// A ContextEdit is one strategy of [ContextManagement]. Fields its Type does
// not take must stay zero; a zero field takes the API's default.
type ContextEdit struct {
	Type string `json:"type"`
	// Trigger is when the edit applies: input tokens (all three types; for
	// Compact at least 50,000, default 150,000) or tool uses.
	Trigger *EditLimit `json:"trigger,omitempty"`
	// Keep is what ClearToolUses keeps (tool uses, default 3) or
	// ClearThinking keeps (thinking turns, default 1).
	Keep *EditLimit `json:"keep,omitempty"`
	// ClearAtLeast makes ClearToolUses clear at least this many input
	// tokens or nothing, so that a clear is worth the prompt cache it breaks.
	ClearAtLeast *EditLimit `json:"clear_at_least,omitempty"`
	// ClearToolInputs makes ClearToolUses clear the calls' inputs too.
	ClearToolInputs bool `json:"clear_tool_inputs,omitzero"`
	// ExcludeTools names tools whose uses ClearToolUses never clears.
	ExcludeTools []string `json:"exclude_tools,omitempty"`
	// PauseAfterCompaction makes a Compact edit end the turn after the
	// compaction block, with stop_reason [CompactionStop].
	PauseAfterCompaction bool `json:"pause_after_compaction,omitzero"`
	// Instructions replace the server's summarisation prompt (Compact).
	Instructions string `json:"instructions,omitempty"`
}

// An EditLimit is an amount in a [ContextEdit]: Type is "input_tokens",
// "tool_uses" or "thinking_turns".
type EditLimit struct {
	Type  string `json:"type"`
	Value int    `json:"value"`
}

// Summarize asks for compaction on demand: sent as compaction:
// {"type":"summarize"}, it makes the request summarise the whole
// conversation, and the reply is one signed compaction block with
// stop_reason [CompactionStop]. Later requests send that block first in
// messages, in place of the messages it summarises. It cannot be combined
// with ContextManagement.
type Summarize struct {
	// Instructions replace the server's summarisation prompt. Empty means
	// the server's own.
	Instructions string `json:"instructions,omitempty"`
}

// CompactionBlock is the type of the block server compaction returns. It is
// kept as a [RawBlock], byte for byte, and must be sent back unchanged: the
// API drops every block before it from the prompt.
const CompactionBlock = "compaction"

// beta returns the anthropic-beta header the request's server-side context
// management needs, or "" when it uses none.
func (r Request) beta() string {
	var betas []string
	if r.Summarize != nil {
		betas = append(betas, "compact-2026-09-04")
	}
	if cm := r.ContextManagement; cm != nil {
		var editing, compact bool
		for _, e := range cm.Edits {
			compact = compact || e.Type == Compact
			editing = editing || e.Type == ClearToolUses || e.Type == ClearThinking
		}
		if editing {
			betas = append(betas, "context-management-2025-06-27")
		}
		if compact {
			betas = append(betas, "compact-2026-01-12")
		}
	}
	return strings.Join(betas, ",")
}
