package looprules

import (
	"errors"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
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
		ContextEdits: h.ContextManagement(thinks(cfg.Model, s.Thinking)),
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
	return !slices.Contains(info.Thinking, "disabled")
}

// The defaults of the loop's limits: package agent's Config and package
// durable's Input fill in a zero MaxIterations or RepeatLimit with them.
const (
	MaxIterations = 20
	RepeatLimit   = 3
)

// Interrupt ends the history of a run cut short with the answer shown so
// far, marked [Interrupted], so that the next prompt follows a complete
// exchange; unless the last message already answers the user's.
func Interrupt(h *memory.History, shown string) {
	if msgs := h.Messages(); len(msgs) == 0 || msgs[len(msgs)-1].Role != llm.User {
		return
	}
	var blocks []llm.Block
	if strings.TrimSpace(shown) != "" {
		blocks = append(blocks, llm.Text{Text: shown})
	}
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: append(blocks, llm.Text{Text: Interrupted})}, llm.Usage{})
}

// ServerCompaction returns the compaction the API did while it wrote msg,
// if it did. h, which msg has not joined yet, gives the count before (it
// keeps the compaction block in place of what it summarises), and usage,
// the turn's after the compaction, what the model reads now.
func ServerCompaction(h *memory.History, msg llm.Message, usage llm.Usage) (memory.Compaction, bool) {
	for _, b := range msg.Content {
		if rb, ok := b.(llm.RawBlock); ok && rb.Type == apirules.CompactionBlock {
			return memory.Compaction{Before: h.Tokens(), After: int(usage.Context()), Steps: []string{"on the server"}}, true
		}
	}
	return memory.Compaction{}, false
}

// Cost prices usage at the price in llm.Models of h's model: 0 for a model
// it lacks.
func Cost(h *memory.History, usage llm.Usage) float64 {
	m, _ := llm.LookupModel(h.Config().Model)
	return m.Price.Cost(usage)
}

// Prepare readies h for its next request: it repairs h and, when h has
// outgrown its limit, compacts it by compact. A history that cannot shrink
// is sent anyway, since its count may be a high estimate: the API's 400
// would make the loop compact again. It returns what the repair fixed.
func Prepare(h *memory.History, log interface{ Warn(string, ...any) }, compact func() error) (fixes []string, err error) {
	if fixes = h.Repair(); len(fixes) > 0 {
		log.Warn("agent: repaired the history", "fixes", fixes)
	}
	if h.NeedsCompaction() {
		if err = compact(); errors.Is(err, memory.ErrCannotCompact) {
			log.Warn("agent: sending a history over the context limit", "err", err)
			err = nil
		}
	}
	return fixes, err
}
