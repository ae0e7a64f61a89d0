package agent

import (
	"errors"
	"log/slog"

	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/internal/telemetry" // otel hook
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// request builds the next request from the history, repaired first and,
// when it has outgrown its limit, compacted.
func (r *run) request(final bool) (llm.Request, error) {
	h := r.cfg.History
	if fixes := h.Repair(); len(fixes) > 0 {
		r.log.Warn("agent: repaired the history", "fixes", fixes)
		telemetry.Repaired(r.ctx, fixes) // otel hook
	}
	if h.NeedsCompaction() {
		// The count may be a high estimate, so a history that cannot shrink
		// is sent anyway: the API's 400 would make turn compact again.
		if err := r.compact(); errors.Is(err, memory.ErrCannotCompact) {
			r.log.Warn("agent: sending a history over the context limit", "err", err)
		} else if err != nil {
			return llm.Request{}, err
		}
	}
	return looprules.Request(h, looprules.Settings{System: r.cfg.System, Tools: r.specs, Thinking: r.cfg.Thinking,
		Effort: r.cfg.Effort, NoCache: r.cfg.DisableCache, Container: r.cont}, final), nil
}

// compact compacts the history and reports it, also when it changed it
// but could not get under the limit. Summary calls count in the run's usage.
func (r *run) compact() error {
	ctx, span := r.otel.StartCompact(r.ctx, r.cfg.ConversationID) // otel hook: the compact_history span
	c, err := r.cfg.History.Compact(ctx, r.cfg.Model)             // otel hook: ctx, was r.ctx
	r.endCompact(span, c, err)                                    // otel hook
	r.usage = r.usage.Add(c.Usage)
	if err == nil || len(c.Steps) > 0 {
		r.log.Info("agent: compacted the history", slog.Int("before", c.Before), slog.Int("after", c.After), slog.Any("err", err))
		r.emit(Compacted{c})
	}
	return err
}

// showText shows text to the caller, and keeps it for an interrupted run.
func (r *run) showText(text string) {
	r.shown.WriteString(text)
	r.emit(TextDelta{Text: text})
}
