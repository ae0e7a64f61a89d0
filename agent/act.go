package agent

import (
	"context"
	"strings"
	"time"

	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/internal/telemetry" // otel hook
	"github.com/agentloop/agentloop/llm"
)

// A pending call is a tool call started while its turn streams. res and
// took (start to finish, not to collection) are set before done closes.
type pending struct {
	call llm.ToolUse
	done chan struct{}
	res  llm.ToolResult
	took time.Duration
}

// result waits for the call to finish and returns its result.
func (p *pending) result() llm.ToolResult {
	<-p.done
	return p.res
}

// startCall reports call and starts it under the turn's ctx,
// unless the loop's rules (looprules.Check) or Approve stop it, checked on
// the goroutine reading the stream, to see calls in order and let Approve
// ask a person. rep is the turn's copy of the repeat state.
func (r *run) startCall(ctx context.Context, rep *looprules.Repeats, call llm.ToolUse, final bool) *pending {
	r.emit(ToolCall{ID: call.ID, Name: call.Name, Input: call.Input})
	if why, skip := looprules.Check(rep, r.cfg.RepeatLimit, call, final); skip {
		return notRun(call, why)
	}
	if r.cfg.Approve != nil {
		if err := r.cfg.Approve(ctx, call); err != nil {
			return notRun(call, "denied: "+err.Error())
		}
	}
	ctx, span := r.otel.StartTool(ctx, call.Name, call.ID, call.Input) // otel hook: the execute_tool span
	p := &pending{call: call, done: make(chan struct{})}
	began, wait := time.Now(), r.cfg.Registry.Start(ctx, call)
	// Waiting here times the call, not the stream; wait returns once ctx ends.
	go func() {
		p.res = wait()
		p.took = time.Since(began)
		r.otel.EndTool(span, p.res.IsError, llm.TextOf(p.res.Content)) // otel hook
		close(p.done)
	}()
	return p
}

// notRun returns a call that was not run, whose is_error result says why.
func notRun(call llm.ToolUse, why string) *pending {
	p := &pending{call: call, done: make(chan struct{}), res: looprules.NotRun(call.ID, why)}
	close(p.done)
	return p
}

// act appends turn t and the results of its calls, in tool_use order, to
// the history.
func (r *run) act(t *turn) {
	r.cfg.History.AppendAssistant(t.msg, t.usage)
	r.repeats = t.repeats
	results := make([]llm.Block, len(t.calls))
	for i, p := range t.calls {
		results[i] = p.result()
		if p.took == 0 { // otel hook: a call the loop answered itself
			telemetry.Event(r.ctx, telemetry.EventNotRun, telemetry.ToolKeys(p.call.Name, p.call.ID)...)
		}
		r.emit(ToolDone{ID: p.call.ID, Name: p.call.Name, Content: shownText(p.res.Content), IsError: p.res.IsError, Duration: p.took})
	}
	r.cfg.History.AppendUser(results...)
}

// shownText is a result as [ToolDone] shows it: its text, then "[image]"
// for each image, so that an image-only result is not a blank.
func shownText(content []llm.Block) string {
	s := llm.TextOf(content)
	for _, b := range content {
		if _, ok := b.(llm.Image); ok {
			s += " [image]"
		}
	}
	return strings.TrimPrefix(s, " ")
}

// discard cancels the calls t started and waits for them to return.
func (t *turn) discard() {
	t.cancel()
	for _, p := range t.calls {
		p.result()
	}
}
