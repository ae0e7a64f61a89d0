package looprules

import (
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// Settings are what a run's requests carry besides the history, which
// gives the model and max_tokens.
type Settings struct {
	System    string
	Tools     []llm.ToolSpec
	Thinking  *llm.ThinkingConfig
	Effort    string
	NoCache   bool
	Container string // the code execution container of an earlier turn
}

// Request returns the request for the next turn of h. A final request,
// at the iteration limit, still lists the tools, since the history holds
// calls of them, but lets the model call none.
func Request(h *memory.History, s Settings, final bool) llm.Request {
	cfg := h.Config()
	req := llm.Request{
		Model:     cfg.Model,
		MaxTokens: cfg.MaxTokens,
		System:    s.System,
		Messages:  h.Messages(),
		Tools:     s.Tools,
		Thinking:  s.Thinking,
		Effort:    s.Effort,
		Cache:     !s.NoCache,
		Container: s.Container,
		// Context editing and server compaction, as the history's strategy has it.
		ContextManagement: h.ContextManagement(thinks(cfg.Model, s.Thinking)),
	}
	if final && len(s.Tools) > 0 {
		req.ToolChoice = &llm.ToolChoice{Type: "none"}
	}
	return req
}

// thinks reports whether a request thinks, so that context editing may
// clear old thinking: as configured, or always, on a model whose thinking
// cannot be off. A model that thinks by default but may be turned off
// counts as not thinking when nothing asks it to, since clear_thinking
// without thinking is a 400.
func thinks(model string, th *llm.ThinkingConfig) bool {
	if th != nil && (th.Adaptive || th.BudgetTokens > 0) {
		return true
	}
	info, _ := llm.LookupModel(model)
	return info.AlwaysThinks()
}
