package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentloop/agentloop/internal/telemetry" // otel hook
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// request builds the next request from the history, which it first
// repairs and, when it has outgrown its limit, compacts.
func (r *run) request(final bool) (llm.Request, error) {
	h := r.cfg.History
	if fixes := h.Repair(); len(fixes) > 0 {
		r.log.Warn("agent: repaired the history", "fixes", fixes)
		telemetry.Repaired(r.ctx, fixes) // otel hook
	}
	if h.NeedsCompaction() {
		// Past the last exact count the figure is an estimate, which may be
		// high (an image of unknown size counts as the largest), so a
		// history that cannot shrink is sent anyway: the API has the last
		// word, and a 400 comes back to turn, which compacts once more.
		if err := r.compact(); errors.Is(err, memory.ErrCannotCompact) {
			r.log.Warn("agent: sending a history over the context limit", "err", err)
		} else if err != nil {
			return llm.Request{}, err
		}
	}
	req := llm.Request{
		Model:     r.cfg.ModelName,
		MaxTokens: r.cfg.MaxTokens,
		System:    r.cfg.System,
		Messages:  h.Messages(),
		Tools:     r.specs,
		Thinking:  r.cfg.Thinking,
		Cache:     !r.cfg.DisableCache,
		Container: r.cont,
	}
	if final && len(r.specs) > 0 {
		// The tools stay listed, since the history holds calls of them.
		req.ToolChoice = &llm.ToolChoice{Type: "none"}
	}
	return req, nil
}

// keepContainer remembers id, the code execution container a turn ran in,
// for the run's later requests: a turn that ran code (programmatic tool
// calling in particular) can only go on in the same container, and the
// API knows which only if the request names it. A turn that reports none
// leaves the last one in place. Even a failed attempt's container is kept,
// since its retry may continue there.
func (r *run) keepContainer(id string) {
	if id != "" {
		r.cont = id
	}
}

// compact compacts the history and reports it, also when it could not get
// under the limit but changed the history on the way. The summary calls it
// makes count in the run's usage.
func (r *run) compact() error {
	ctx, span := r.otel.StartCompact(r.ctx, r.cfg.ConversationID) // otel hook: the compact_history span
	c, err := r.cfg.History.Compact(ctx, r.model)                 // otel hook: ctx, was r.ctx
	r.endCompact(span, c, err)                                    // otel hook
	r.usage = r.usage.Add(c.Usage)
	if err == nil || len(c.Steps) > 0 {
		r.reshape = true
		r.log.Info("agent: compacted the history", slog.Int("before", c.Before), slog.Int("after", c.After), slog.Any("err", err))
		r.emit(Compacted{Before: c.Before, After: c.After, Steps: c.Steps})
	}
	return err
}

// takeBack removes this run's input and every turn after it from the
// history, so that a refused prompt is not sent again with the next one.
// After a compaction the run's messages may be merged into a summary; then
// only the refused turn itself, never appended, is left out.
func (r *run) takeBack() {
	if !r.reshape {
		r.cfg.History.Truncate(r.start)
	}
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
