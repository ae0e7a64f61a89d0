package agent

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"time"

	"github.com/agentloop/agentloop/internal/telemetry" // otel hook
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
		telemetry.Repaired(r.ctx, fixes) // otel hook
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
		Tools: r.specs, ServerTools: r.server, Thinking: r.cfg.Thinking, Effort: r.cfg.Effort, Cache: !r.cfg.DisableCache, Container: r.cont,
		// Context editing and server compaction, as the history's strategy has it.
		ContextEdits: h.ContextManagement(thinks(hc.Model, r.cfg.Thinking))}
	if r.out != nil {
		req.OutputSchema = r.out.format
	}
	if final && len(r.specs)+len(r.server) > 0 {
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
	ctx, span := r.otel.StartCompact(r.ctx, r.cfg.ConversationID) // otel hook: the compact_history span
	c, err := r.cfg.History.Compact(ctx, r.cfg.Model)             // otel hook: ctx, was r.ctx
	typ := llm.ErrorType(err)                                     // otel hook: ends the span
	if errors.Is(err, memory.ErrCannotCompact) {
		typ = "cannot_compact"
	}
	telemetry.EndCompact(span, c.Before, c.After, c.Steps, err, typ)
	r.usage = r.usage.Add(c.Usage)
	r.spent.add(cost(r.cfg.History, c.Usage))
	if c.After < c.Before {
		r.cfg.Logger.Info("agent: compacted the history", slog.Int("before", c.Before), slog.Int("after", c.After), slog.Any("err", err))
		r.emit(Compacted{c})
	}
	return err
}

// showText shows text to the caller, and keeps it for an interrupted run.
func (r *run) showText(text string) {
	r.shown.WriteString(text)
	r.emit(TextDelta{Text: text})
}

// traced wraps a run in its invoke_agent span, by the GenAI semantic
// conventions (see internal/telemetry): the span opens before the run and
// closes with its Result, so that the loop never touches it.
func (a *Agent) traced(ctx context.Context, input string, run func(context.Context, string) iter.Seq2[Event, error]) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		hc := a.cfg.History.Config()
		ctx, span := a.otel.StartAgent(ctx, telemetry.Agent{Name: a.cfg.Name, Model: hc.Model,
			ConversationID: a.cfg.ConversationID, MaxTokens: hc.MaxTokens, Input: input, System: a.cfg.System})
		defer span.End()
		for ev, err := range run(ctx, input) {
			if res, ok := ev.(Result); ok {
				u := res.Usage
				a.otel.EndAgent(span, telemetry.Outcome{State: string(res.State), Iterations: res.Iterations,
					Usage: [4]int64{u.Context() - u.OutputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens},
					Text:  res.Text, Err: err, ErrType: llm.ErrorType(err)})
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// tracedTools is a Runtime whose calls each run in their execute_tool
// span, which ends when the call's result is waited for.
type tracedTools struct {
	Runtime
	otel *telemetry.Instruments
}

func (t tracedTools) Start(ctx context.Context, call llm.ToolUse) func() (llm.ToolResult, time.Duration) {
	ctx, span := t.otel.StartTool(ctx, call.Name, call.ID, call.Input)
	wait := t.Runtime.Start(ctx, call) // now: the call starts as the model streams
	return func() (llm.ToolResult, time.Duration) {
		res, took := wait()
		t.otel.EndTool(span, res.IsError, llm.TextOf(res.Content))
		return res, took
	}
}
