package agent

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentloop/agentloop/internal/telemetry"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// Tracing by the GenAI semantic conventions: see internal/telemetry.

// startRun starts the span of a run on input.
func (a *Agent) startRun(ctx context.Context, input string) (context.Context, trace.Span) {
	hc := a.cfg.History.Config()
	return a.otel.StartAgent(ctx, telemetry.Agent{Name: a.cfg.Name, Model: hc.Model,
		ConversationID: a.cfg.ConversationID, MaxTokens: hc.MaxTokens, Input: input, System: a.cfg.System})
}

// endRun sets the outcome of a run on its span; the caller ends it.
func (a *Agent) endRun(span trace.Span, res Result, err error) {
	u := res.Usage
	a.otel.EndAgent(span, telemetry.Outcome{State: string(res.State), Iterations: res.Iterations,
		Usage: [4]int64{u.Context() - u.OutputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens},
		Text:  res.Text, Err: err, ErrType: llm.ErrorType(err)})
}

// endCompact ends the span of compaction c.
func (r *run) endCompact(span trace.Span, c memory.Compaction, err error) {
	typ := llm.ErrorType(err)
	if errors.Is(err, memory.ErrCannotCompact) {
		typ = "cannot_compact"
	}
	telemetry.EndCompact(span, c.Before, c.After, c.Steps, err, typ)
}
