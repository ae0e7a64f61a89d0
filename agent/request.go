package agent

import (
	"log/slog"

	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/internal/telemetry" // otel hook
	"github.com/agentloop/agentloop/llm"
)

// request builds the next request from the history, repaired first and,
// when it has outgrown its limit, compacted.
func (r *run) request(final bool) (llm.Request, error) {
	fixes, err := looprules.Prepare(r.cfg.History, r.log, r.compact)
	telemetry.Repaired(r.ctx, fixes) // otel hook
	if err != nil {
		return llm.Request{}, err
	}
	return looprules.Request(r.cfg.History, looprules.Settings{System: r.cfg.System, Tools: r.specs, Thinking: r.cfg.Thinking,
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
