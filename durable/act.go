package durable

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// act runs the tool calls of a turn and observes them, as agent's
// startCall and act do: it checks each call in tool_use order (cut off,
// final turn, invalid input, repeats), runs the rest in parallel, except
// that a Sequential tool's calls run one after another, and appends the
// turn and then its results, in tool_use order, to the history.
func (r *run) act(msg llm.Message, usage llm.Usage, uses []llm.ToolUse, cut map[string]bool, final bool) {
	rep := r.rep
	futures := make([]workflow.Future, len(uses))
	last := make(map[string]workflow.Future) // each Sequential tool's latest call
	for i, tu := range uses {
		call := tool.Call{ID: tu.ID, Name: tu.Name, Input: tu.Input}
		if why, skip := r.check(&rep, call, cut[tu.ID], final); skip {
			r.publish(Event{ToolCall: &call})
			f, set := workflow.NewFuture(r.ctx)
			set.Set(notRun(call, why), nil)
			futures[i] = f
			continue
		}
		info := r.tool(call.Name)
		f, set := workflow.NewFuture(r.ctx)
		futures[i] = f
		prev := last[call.Name]
		if info.Sequential {
			last[call.Name] = f
		}
		workflow.Go(r.ctx, func(ctx workflow.Context) {
			if prev != nil {
				_ = prev.Get(ctx, nil) // a failed call still ends its turn
			}
			set.Set(r.call(ctx, call, info), nil)
		})
	}
	r.h.AppendAssistant(msg, usage)
	r.rep = rep
	results := make([]llm.ToolResult, len(uses))
	for i, f := range futures {
		if err := f.Get(r.ctx, &results[i]); err != nil {
			results[i] = notRun(tool.Call{ID: uses[i].ID}, "cancelled")
		}
		r.publish(Event{ToolDone: &results[i]})
	}
	r.h.AppendToolResults(results)
}

// check returns why a call is not run, if it is not: a cut-off call's
// input is not run, then the loop's own rules apply.
func (r *run) check(rep *looprules.Repeats, call tool.Call, cut, final bool) (string, bool) {
	if cut {
		return looprules.CutOff, true
	}
	return looprules.Check(rep, r.in.RepeatLimit, call, final)
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
func (r *run) call(ctx workflow.Context, call tool.Call, info ToolInfo) llm.ToolResult {
	if r.needsApproval(call.Name) {
		a := &approval{call: call}
		r.waiting = append(r.waiting, a)
		r.publish(Event{ToolCall: &call, Waiting: true})
		err := workflow.Await(ctx, func() bool { return a.decided })
		r.waiting = slices.DeleteFunc(r.waiting, func(w *approval) bool { return w == a })
		if err != nil {
			return notRun(call, "cancelled")
		}
		if !a.d.Allow {
			reason := a.d.Reason
			if reason == "" {
				reason = "the user did not approve this call"
			}
			return notRun(call, "denied: "+reason)
		}
	}
	attempts := int32(r.in.ToolAttempts)
	if info.AtMostOnce {
		attempts = 1
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          fmt.Sprintf("tool/%d/%s/%s", r.iter, call.Name, call.ID),
		StartToCloseTimeout: r.in.ToolTimeout,
		HeartbeatTimeout:    r.in.Heartbeat,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: attempts},
	})
	r.publish(Event{ToolCall: &call})
	var res llm.ToolResult
	if err := workflow.ExecuteActivity(actx, activityCallTool, call).Get(ctx, &res); err != nil {
		if ctx.Err() != nil {
			return notRun(call, "cancelled")
		}
		return toolFailure(call, info.AtMostOnce, err)
	}
	return res
}

// notRun returns the is_error result of a call that was not run, saying
// why.
func notRun(call tool.Call, why string) llm.ToolResult { return looprules.NotRun(call.ID, why) }
