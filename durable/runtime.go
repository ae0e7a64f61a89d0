package durable

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// runtime is the agent's Runtime in the workflow: each tool call is a
// CallTool activity, started by workflow.Go, and time is the workflow's
// (its timers, and a random jitter recorded as a side effect), so that a
// replay decides alike. A context.Context the agent cancels is seen by the
// workflow.Await conditions that wait here, since only workflow code
// cancels one.
type runtime struct{ *run }

func (rt runtime) Specs() []llm.ToolSpec {
	specs := make([]llm.ToolSpec, len(rt.tools))
	for i, t := range rt.tools {
		specs[i] = t.Spec
	}
	return specs
}

// Start runs call as a CallTool activity, or a call of the task tool as a
// child workflow (delegate.go), in parallel with the others,
// except that the calls of the tools of one Queue, and those of a tool an
// older worker offered as Sequential, run one after another.
func (rt runtime) Start(ctx context.Context, call llm.ToolUse) func() (llm.ToolResult, time.Duration) {
	r := rt.run
	info := r.tool(call.Name)
	r.calls++
	id := fmt.Sprintf("tool/%d/%s/%s", r.calls, call.Name, call.ID)
	// A Queue's calls wait on the queue's last call, a Sequential tool's on
	// its own; the prefixes keep a queue and a tool of one name apart.
	key := "tool " + call.Name
	if info.Queue != "" {
		key = "queue " + info.Queue
	}
	prev := r.last[key]
	f, set := workflow.NewFuture(r.root)
	if info.Sequential || info.Queue != "" {
		r.last[key] = f
	}
	cctx, cancel := workflow.WithCancel(r.root)
	r.running++
	approved := r.approved[call.ID]
	workflow.Go(cctx, func(c workflow.Context) {
		if prev != nil {
			_ = prev.Get(c, nil) // a failed call still ends its turn
		}
		var out ToolOutput
		if r.delegates(call) {
			out = r.delegate(c, call, id, approved)
		} else {
			out = r.callTool(c, call, info, id, approved)
		}
		r.running--
		set.Set(out, nil)
	})
	workflow.Go(r.root, func(c workflow.Context) {
		_ = workflow.Await(c, func() bool { return f.IsReady() || ctx.Err() != nil })
		if !f.IsReady() {
			cancel()
		}
	})
	return func() (llm.ToolResult, time.Duration) {
		var out ToolOutput
		_ = f.Get(r.root, &out) // set with a nil error
		return out.ToolResult, out.Duration
	}
}

// Wait waits for every call to return, or ctx to end.
func (rt runtime) Wait(ctx context.Context) error {
	if err := workflow.Await(rt.root, func() bool { return rt.running == 0 || ctx.Err() != nil }); err != nil {
		return err
	}
	if rt.running > 0 {
		return fmt.Errorf("durable: %d tool calls still running", rt.running)
	}
	return nil
}

func (rt runtime) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	tctx, stop := workflow.WithCancel(rt.root)
	workflow.Go(tctx, func(c workflow.Context) {
		if workflow.NewTimer(c, d).Get(c, nil) == nil {
			cancel(cause)
		}
	})
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// Backoff waits llm.RetryDelay, drawn once and recorded, so that a replay
// waits alike.
func (rt runtime) Backoff(ctx context.Context, attempt int, err error) error {
	var d time.Duration
	v := workflow.SideEffect(rt.root, func(workflow.Context) any {
		if d, ok := llm.RetryDelay(attempt, err); ok {
			return d
		}
		return time.Duration(-1)
	})
	if v.Get(&d) != nil || d < 0 {
		return err
	}
	tctx, stop := workflow.WithCancel(rt.root)
	defer stop()
	timer := workflow.NewTimer(tctx, d)
	if werr := workflow.Await(rt.root, func() bool { return timer.IsReady() || ctx.Err() != nil }); werr != nil {
		return werr
	}
	return context.Cause(ctx)
}

// Pause continues the workflow as new between two turns when Temporal
// suggests it, or after Input.TurnsPerRun turns. It also stops the run
// between two turns once its subagents' usage, with its own, reaches a
// limit, which the agent's own checks, counting its own turns, miss: finish
// ends it there as the agent would.
func (rt runtime) Pause() bool {
	return rt.limit() != "" || workflow.GetInfo(rt.root).GetContinueAsNewSuggested() || rt.in.TurnsPerRun > 0 && rt.turns >= rt.in.TurnsPerRun
}

// limit returns the limit that the run's usage and its subagents' together
// have reached: TokenLimit, BudgetLimit or none.
func (r *run) limit() agent.State {
	switch {
	case r.in.MaxTotalTokens > 0 && r.total.Context()+r.subUsage.Context() >= r.in.MaxTotalTokens:
		return agent.TokenLimit
	case r.in.MaxCostUSD > 0 && r.cost(r.total)+r.subCost >= r.in.MaxCostUSD:
		return agent.BudgetLimit
	}
	return ""
}

// tool returns what the worker said about the named tool; an unknown
// tool's zero info makes the registry answer that it is unknown.
func (r *run) tool(name string) ToolInfo {
	if i := slices.IndexFunc(r.tools, func(t ToolInfo) bool { return t.Spec.Name == name }); i >= 0 {
		return r.tools[i]
	}
	return ToolInfo{}
}

// callTool runs one call as a CallTool activity; approved says a person
// allowed it.
func (r *run) callTool(ctx workflow.Context, call llm.ToolUse, info ToolInfo, id string, approved bool) ToolOutput {
	attempts := int32(r.in.ToolAttempts)
	if info.AtMostOnce {
		attempts = 1
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          id,
		StartToCloseTimeout: r.in.ToolTimeout,
		HeartbeatTimeout:    r.in.Heartbeat,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: attempts},
	})
	var res ToolOutput
	if err := workflow.ExecuteActivity(actx, activityCallTool, call, approved).Get(ctx, &res); err != nil {
		if ctx.Err() != nil {
			return ToolOutput{ToolResult: notRun(call, "cancelled")}
		}
		return ToolOutput{ToolResult: toolFailure(call, info.AtMostOnce, err)}
	}
	return res
}

// notRun returns the is_error result of a call that was not run, saying
// why.
func notRun(call llm.ToolUse, why string) llm.ToolResult {
	return llm.ToolResult{ToolUseID: call.ID, Content: []llm.Block{llm.Text{Text: why}}, IsError: true}
}
