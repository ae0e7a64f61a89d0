package agent

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"sync"

	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/internal/telemetry" // otel hook
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// request builds the next request from the history, repaired first and,
// when it has outgrown its limit, compacted.
func (r *run) request(final bool) (llm.Request, error) {
	fixes, err := looprules.Prepare(r.cfg.History, r.cfg.Logger, r.compact)
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
	typ := llm.ErrorType(err)                                     // otel hook: ends the span
	if errors.Is(err, memory.ErrCannotCompact) {
		typ = "cannot_compact"
	}
	telemetry.EndCompact(span, c.Before, c.After, c.Steps, err, typ)
	r.usage = r.usage.Add(c.Usage)
	if err == nil || len(c.Steps) > 0 {
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

// tracedTool wraps start, a registry's Start, in the execute_tool span of
// each call it starts, which ends when the call's result is first waited for.
func (a *Agent) tracedTool(start func(context.Context, llm.ToolUse) func() llm.ToolResult) func(context.Context, llm.ToolUse) func() llm.ToolResult {
	return func(ctx context.Context, call llm.ToolUse) func() llm.ToolResult {
		ctx, span := a.otel.StartTool(ctx, call.Name, call.ID, call.Input)
		wait := start(ctx, call) // now: the call starts as the model streams
		return sync.OnceValue(func() llm.ToolResult {
			res := wait()
			a.otel.EndTool(span, res.IsError, llm.TextOf(res.Content))
			return res
		})
	}
}
