package durable

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/subagent"
)

// AgentInfo describes a subagent of the worker (Config.Agents) to the
// workflow, in its [Offer]: what a child workflow needs to run it.
type AgentInfo struct {
	Name string `json:"name"`
	// System is the subagent's system prompt.
	System string `json:"system,omitempty"`
	// Tools names the worker's tools it may call; nil for all of the
	// parent's but the task tool.
	Tools []string `json:"tools"`
	// Model and MaxTokens are its history's; empty for the parent's.
	Model     string `json:"model,omitempty"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	// MaxIterations caps its model calls; 0 for the default.
	MaxIterations int `json:"max_iterations,omitempty"`
}

// agentInfos checks agents as subagent.Tool does, and returns the task
// tool's spec and what a child workflow needs of each.
func agentInfos(agents []subagent.Agent) (llm.ToolSpec, []AgentInfo, error) {
	task, err := subagent.Tool(agents...)
	if err != nil {
		return llm.ToolSpec{}, nil, fmt.Errorf("durable: Config.Agents: %w", err)
	}
	infos := make([]AgentInfo, len(agents))
	for i, a := range agents {
		info := AgentInfo{Name: a.Name, System: a.Config.System, MaxIterations: a.Config.MaxIterations, Tools: a.ToolNames()}
		if info.Tools == nil && (a.Config.Tools != nil || a.Config.Registry != nil) {
			info.Tools = []string{} // none is not all
		}
		if h := a.Config.History; h != nil {
			info.Model, info.MaxTokens = h.Config().Model, h.Config().MaxTokens
		}
		infos[i] = info
	}
	return task.Spec(), infos, nil
}

// delegates reports whether call is one for a child workflow: a call of
// the task tool in a run whose worker offered subagents.
func (r *run) delegates(call llm.ToolUse) bool {
	return call.Name == subagent.ToolName && len(r.agents) > 0 && r.tool(call.Name).Spec.Name != ""
}

// delegate runs the task call as a child workflow of the subagent it
// names, whose id is the run's and the call's, so that a replay or a retry
// finds it rather than starting another. Its input is checked, and its
// outcome made the call's result, as the in-process task tool does
// (subagent.Input.Check, subagent.Answer). The child's usage and cost join
// the run's.
func (r *run) delegate(ctx workflow.Context, call llm.ToolUse, id string, approved bool) ToolOutput {
	var in subagent.Input
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return ToolOutput{ToolResult: notRun(call, "invalid input: "+err.Error())}
	}
	names := make([]string, len(r.agents))
	for i, a := range r.agents {
		names[i] = a.Name
	}
	if err := in.Check(names); err != nil {
		return ToolOutput{ToolResult: notRun(call, err.Error())}
	}
	a := r.agents[slices.Index(names, in.SubagentType)]
	// The worker's policy holds for the call, as for any other.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ActivityID: id, StartToCloseTimeout: r.in.ToolTimeout,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: int32(r.in.ToolAttempts)}})
	var why string
	if err := workflow.ExecuteActivity(actx, activityAllow, call, approved).Get(ctx, &why); err != nil {
		if ctx.Err() != nil {
			return ToolOutput{ToolResult: notRun(call, "cancelled")}
		}
		return ToolOutput{ToolResult: toolFailure(call, false, err)}
	} else if why != "" {
		return ToolOutput{ToolResult: notRun(call, why)}
	}
	child := Input{Prompt: in.Prompt, Model: cmp.Or(a.Model, r.in.Model), MaxTokens: a.MaxTokens, System: a.System,
		MaxIterations: a.MaxIterations, Effort: r.in.Effort, DisableCache: r.in.DisableCache, Heartbeat: r.in.Heartbeat,
		ModelTimeout: r.in.ModelTimeout, ToolTimeout: r.in.ToolTimeout, ToolAttempts: r.in.ToolAttempts, Tools: []string{}}
	if a.Model == "" {
		child.MaxTokens, child.Thinking, child.ContextLimit = r.in.MaxTokens, r.in.Thinking, r.in.ContextLimit
	}
	// What is left of the run's limits bounds the child; 0 would be none.
	if d := r.in.MaxDuration; d > 0 {
		child.MaxDuration = d - workflow.Now(ctx).Sub(r.started)
	}
	if n := r.in.MaxTotalTokens; n > 0 {
		child.MaxTotalTokens = n - r.total.Context() - r.subUsage.Context()
	}
	if c := r.in.MaxCostUSD; c > 0 {
		child.MaxCostUSD = c - r.cost(r.total) - r.subCost
	}
	if r.in.MaxDuration > 0 && child.MaxDuration <= 0 || r.in.MaxTotalTokens > 0 && child.MaxTotalTokens <= 0 ||
		r.in.MaxCostUSD > 0 && child.MaxCostUSD <= 0 {
		return ToolOutput{ToolResult: notRun(call, "not run: the run has used up its time, tokens or budget")}
	}
	// Nobody watches a child to approve its calls: it gets none of the
	// tools whose calls wait for a person.
	for _, t := range r.tools {
		name := t.Spec.Name
		if name != subagent.ToolName && !r.needsApproval(name) && (a.Tools == nil || slices.Contains(a.Tools, name)) {
			child.Tools = append(child.Tools, name)
		}
	}
	began := workflow.Now(ctx)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: childID(workflow.GetInfo(ctx).WorkflowExecution.ID, call.ID),
	})
	var res Result
	err := workflow.ExecuteChildWorkflow(cctx, WorkflowName, child).Get(ctx, &res)
	took := workflow.Now(ctx).Sub(began)
	r.subUsage, r.subCost = r.subUsage.Add(res.Usage), r.subCost+res.CostUSD
	if ctx.Err() != nil {
		return ToolOutput{ToolResult: notRun(call, "cancelled")}
	}
	out, err := subagent.Answer(a.Name, res.Result, err)
	if err != nil {
		return ToolOutput{ToolResult: notRun(call, err.Error()), Duration: took}
	}
	out.ToolUseID = call.ID
	return ToolOutput{ToolResult: out, Duration: took}
}

// childID is the workflow ID of the sub-run of task call callID in the run
// workflowID: the same in a replay or a retry, and known to [Stream].
func childID(workflowID, callID string) string {
	return workflowID + "/" + subagent.ToolName + "/" + callID
}
