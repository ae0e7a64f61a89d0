package agent

import (
	"context"
	"errors"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// request builds the next request from the history, repaired first and,
// when it has outgrown its limit, compacted. A history that cannot shrink
// is sent anyway, since its count may be a high estimate: the API's 400
// would make the loop compact again. A final request, at the iteration
// limit, still lists the tools, since the history holds calls of them, but
// lets the model call none.
func (r *run) request(final bool) (llm.Request, error) {
	h := r.cfg.History
	if fixes := h.Repair(); len(fixes) > 0 {
		r.cfg.Logger.Warn("agent: repaired the history", "fixes", fixes)
		r.emit(Repaired{Fixes: fixes})
	}
	if h.NeedsCompaction() {
		if err := r.compact(); errors.Is(err, memory.ErrCannotCompact) {
			r.cfg.Logger.Warn("agent: sending a history over the context limit", "err", err)
		} else if err != nil {
			return llm.Request{}, err
		}
	}
	hc := h.Config()
	req := llm.Request{Model: hc.Model, MaxTokens: hc.MaxTokens, System: r.cfg.System, Messages: h.Messages(),
		Tools: r.specs, ServerTools: r.cfg.ServerTools, Thinking: r.cfg.Thinking, Effort: r.cfg.Effort, Cache: !r.cfg.DisableCache, Container: r.cont,
		// Context editing and server compaction, as the history's strategy has it.
		ContextEdits: h.ContextManagement(thinks(r.model, r.cfg.Thinking))}
	if final && len(r.specs)+len(r.cfg.ServerTools) > 0 {
		req.ToolChoice = &llm.ToolChoice{Type: "none"}
	}
	return req, nil
}

// compact compacts the history and reports it when it shrank, also when
// it could not get under the limit; a compaction that shrank nothing (a
// failed server call, a lone prompt too long) is not one to report. Summary
// calls count in the run's usage, and its budget.
func (r *run) compact() error {
	r.hooks(r.ctx, HookEvent{Point: BeforeCompact})
	compact := func(ctx context.Context) (memory.Compaction, error) { return r.cfg.History.Compact(ctx, r.cfg.Model) }
	var c memory.Compaction
	var err error
	if r.cfg.Observer != nil {
		c, err = r.cfg.Observer.Compact(r.ctx, compact)
	} else {
		c, err = compact(r.ctx)
	}
	r.usage = r.usage.Add(c.Usage)
	r.spent.add(c.Usage, r.model.Price.Cost(c.Usage))
	if c.After < c.Before {
		r.cfg.Logger.Info("agent: compacted the history", "before", c.Before, "after", c.After, "err", err)
		r.emit(Compacted{c})
	}
	return err
}
