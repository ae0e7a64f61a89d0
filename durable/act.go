package durable

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/llm"
)

// A batch is the tool calls of one model turn, each started the moment
// the turn's activity signals that its input is complete (toolUseSignal),
// as agent's think starts them while the turn streams. When an attempt of
// the activity fails and the next one signals, the failed attempt's calls
// are cancelled, as agent's discard cancels them.
type batch struct {
	id      string // the model activity's ID, which its signals' sources start with
	source  string // the attempt whose calls these are; "" until one signals
	iter    int
	gen     int  // sets of calls before these in the iteration, for their activity IDs
	closed  bool // the turn is over: signals that still come are void
	final   bool
	ctx     workflow.Context
	cancel  workflow.CancelFunc
	rep     looprules.Repeats // the repeat state after these calls
	started map[string]workflow.Future
	last    map[string]workflow.Future // the latest call of each Sequential tool and each Queue
	got     int                        // calls signalled by source
	stale   map[string]bool            // attempts whose calls were cancelled
}

// newBatch starts the batch of the model turn about to run.
func (r *run) newBatch(final bool) *batch {
	gen := 0
	if b := r.batch; b != nil && b.iter == r.iter {
		gen = b.gen + 1
	}
	b := &batch{id: fmt.Sprintf("turn/%d.%d", r.iter, gen), iter: r.iter, gen: gen, final: final, stale: map[string]bool{}}
	b.clear(r, "")
	return b
}

// reset makes the batch ready for the calls of the attempt source: the
// calls of another attempt, if any, are cancelled.
func (b *batch) reset(r *run, source string) {
	if b.source == "" { // no calls yet
		b.source = source
		return
	}
	b.cancel()
	b.stale[b.source] = true
	b.gen++
	b.clear(r, source)
}

// clear empties the batch for the calls of source.
func (b *batch) clear(r *run, source string) {
	b.ctx, b.cancel = workflow.WithCancel(r.ctx)
	b.source, b.rep, b.got = source, r.rep, 0
	b.started, b.last = map[string]workflow.Future{}, map[string]workflow.Future{}
}

// receiveToolUses starts each call a model turn signals, in the order the
// signals came, which is tool_use order.
func (r *run) receiveToolUses() {
	ch := workflow.GetSignalChannel(r.root, signalToolUse)
	workflow.Go(r.root, func(ctx workflow.Context) {
		for {
			var s toolUseSignal
			if !ch.Receive(ctx, &s) {
				return
			}
			b := r.batch
			if b == nil || b.closed || !strings.HasPrefix(s.Source, b.id+"/") || b.stale[s.Source] {
				continue // a turn that is over, or an attempt that failed
			}
			if b.source != s.Source {
				b.reset(r, s.Source) // a new attempt: the old one's calls are void
			}
			b.got++
			b.started[s.Use.ID] = r.start(b, s.Use)
		}
	})
}

// settle waits, after a model turn, for the calls its attempt out.Source
// signalled, and cancels any that an earlier attempt started.
func (r *run) settle(out *TurnOutput) error {
	b := r.batch
	if out.Calls > 0 {
		if err := workflow.Await(r.root, func() bool { return b.source == out.Source && b.got >= out.Calls }); err != nil {
			return err
		}
	}
	if b.source != out.Source {
		b.reset(r, out.Source)
	}
	return nil
}

// start checks a call by the loop's rules and, unless they stop it, runs
// it in parallel with the batch's others, except that a Sequential tool's
// calls, and the calls of the tools of one Queue, run one after another. It returns the call's result, to come.
func (r *run) start(b *batch, call llm.ToolUse) workflow.Future {
	f, set := workflow.NewFuture(b.ctx)
	if why, skip := looprules.Check(&b.rep, r.in.RepeatLimit, call, b.final); skip {
		r.publish(Event{ToolCall: &call})
		set.Set(ToolOutput{ToolResult: notRun(call, why)}, nil)
		return f
	}
	info, gen := r.tool(call.Name), b.gen
	// A Queue's calls wait on the queue's last call, a Sequential tool's on
	// its own; the prefixes keep a queue and a tool of one name apart.
	key := "tool " + call.Name
	if info.Queue != "" {
		key = "queue " + info.Queue
	}
	prev := b.last[key]
	if info.Sequential || info.Queue != "" {
		b.last[key] = f
	}
	workflow.Go(b.ctx, func(ctx workflow.Context) {
		if prev != nil {
			_ = prev.Get(ctx, nil) // a failed call still ends its turn
		}
		set.Set(r.call(ctx, call, info, gen), nil)
	})
	return f
}

// act observes the tool calls of a turn, as agent's act does: the calls
// started while the turn streamed, and those that start now (a cut-off
// call is not run). It appends the turn and then its results, in tool_use
// order, to the history.
func (r *run) act(msg llm.Message, usage llm.Usage, uses []llm.ToolUse, cut map[string]bool) {
	b := r.batch
	futures := make([]workflow.Future, len(uses))
	for i, call := range uses {
		switch f, ok := b.started[call.ID]; {
		case ok:
			futures[i] = f
		case cut[call.ID]:
			r.publish(Event{ToolCall: &call})
			f, set := workflow.NewFuture(r.ctx)
			set.Set(ToolOutput{ToolResult: notRun(call, looprules.CutOff)}, nil)
			futures[i] = f
		default:
			futures[i] = r.start(b, call)
		}
	}
	r.h.AppendAssistant(msg, usage)
	r.rep = b.rep
	results := make([]llm.Block, len(uses))
	for i, f := range futures {
		var out ToolOutput
		if err := f.Get(r.ctx, &out); err != nil {
			out = ToolOutput{ToolResult: notRun(llm.ToolUse{ID: uses[i].ID}, "cancelled")}
		}
		results[i] = out.ToolResult
		r.publish(Event{ToolDone: &out.ToolResult, Duration: out.Duration})
	}
	r.h.AppendUser(results...)
}

// tool returns what the worker said about the named tool; an unknown
// tool's zero info makes the registry answer that it is unknown.
func (r *run) tool(name string) ToolInfo {
	if i := slices.IndexFunc(r.tools, func(t ToolInfo) bool { return t.Spec.Name == name }); i >= 0 {
		return r.tools[i]
	}
	return ToolInfo{}
}

// needsApproval reports whether calls of the named tool wait for a
// Decision.
func (r *run) needsApproval(name string) bool {
	return slices.Contains(r.in.Approve, name) || slices.Contains(r.in.Approve, "*")
}

// call runs one call: it waits for its approval, if it needs one, then
// runs it as a CallTool activity.
func (r *run) call(ctx workflow.Context, call llm.ToolUse, info ToolInfo, gen int) ToolOutput {
	approved := r.needsApproval(call.Name) // past the wait below, a person allowed it
	if approved {
		a := &approval{call: call}
		r.waiting = append(r.waiting, a)
		r.publish(Event{ToolCall: &call, Waiting: true})
		err := workflow.Await(ctx, func() bool { return a.decided })
		r.waiting = slices.DeleteFunc(r.waiting, func(w *approval) bool { return w == a })
		if err != nil {
			return ToolOutput{ToolResult: notRun(call, "cancelled")}
		}
		if !a.d.Allow {
			reason := a.d.Reason
			if reason == "" {
				reason = "the user did not approve this call"
			}
			return ToolOutput{ToolResult: notRun(call, "denied: "+reason)}
		}
	}
	attempts := int32(r.in.ToolAttempts)
	if info.AtMostOnce {
		attempts = 1
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          toolActivityID(r.iter, gen, call),
		StartToCloseTimeout: r.in.ToolTimeout,
		HeartbeatTimeout:    r.in.Heartbeat,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: attempts},
	})
	r.publish(Event{ToolCall: &call})
	var res ToolOutput
	if err := workflow.ExecuteActivity(actx, activityCallTool, call, approved).Get(ctx, &res); err != nil {
		if ctx.Err() != nil {
			return ToolOutput{ToolResult: notRun(call, "cancelled")}
		}
		return ToolOutput{ToolResult: toolFailure(call, info.AtMostOnce, err)}
	}
	return res
}

// toolActivityID names the activity of a call. A retried model turn may
// use the ids of its failed attempt's calls, still being cancelled, so
// the calls of a later attempt get the batch's generation too.
func toolActivityID(iter, gen int, call llm.ToolUse) string {
	if gen > 0 {
		return fmt.Sprintf("tool/%d.%d/%s/%s", iter, gen, call.Name, call.ID)
	}
	return fmt.Sprintf("tool/%d/%s/%s", iter, call.Name, call.ID)
}

// notRun returns the is_error result of a call that was not run, saying
// why.
func notRun(call llm.ToolUse, why string) llm.ToolResult { return looprules.NotRun(call.ID, why) }
