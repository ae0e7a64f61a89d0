package durable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool"
)

// Config configures a worker's side of durable runs. Only Model is
// required.
type Config struct {
	// Model streams the model turns. Required. An [*llm.Client] in
	// production, with MaxAttempts 1: Temporal's retry policy is the one
	// that retries a model turn, and a client that retries too multiplies
	// the requests of a failing turn.
	Model llm.Model
	// Registry runs the tool calls. Default: an empty registry.
	Registry *tool.Registry
	// System is the system prompt of the runs whose Input.System is empty:
	// one that names the worker's tools and working directory, as the
	// CLI's default does. Default none.
	System string
	// Approve, if set, is asked before each tool call runs, on the
	// worker; a call it returns an error for is not run, and the model is
	// told it was denied, with the error. approved says that a person
	// allowed the call in the workflow (Input.Approve). It suits a policy
	// of rules, such as the CLI's --allow and --deny. Default: every call
	// runs.
	Approve func(ctx context.Context, call llm.ToolUse, approved bool) error
	// Telemetry says where the execute_tool spans of the calls go; the
	// chat spans are Model's (its llm.Config.Observe). Default: the global
	// OpenTelemetry provider.
	// A client and worker made with [Tracing] put both under the caller's
	// trace.
	Telemetry telemetry.Config
	// AtMostOnce names tools that must not run twice for one call, such as
	// one that sends money. A call of one whose worker dies is not run
	// again; the model gets an is_error result saying it may or may not
	// have run. Default none: every tool is at-least-once.
	AtMostOnce []string
	// BlobStore is the store of the DataConverter the worker's client
	// uses, if any. Without one, a tool result over [PayloadLimit] cannot
	// cross Temporal: the model gets an is_error result saying so, and the
	// call is not retried. Default nil.
	BlobStore BlobStore
	// Agents are subagents that a run may give tasks to with the task tool
	// (package subagent), offered beside the Registry's tools and instead
	// of any task tool of its own. Each call runs the agent as a child
	// workflow (Input.Tools its tools, its Config.System, its model, the
	// run's other settings), so that it survives a worker's death as its
	// parent does; the call's result is its final text, and its usage and
	// cost join the parent's Result and count against its limits; [Stream]
	// relays its events. Its tools are the worker's tools of
	// their names, less any that wait for a person's approval in the
	// parent (Input.Approve). What is left of the parent's MaxDuration,
	// MaxTotalTokens and MaxCostUSD bounds it. Its Model is the worker's,
	// its Hooks and Observer unused. Default none.
	Agents []subagent.Agent
}

// PayloadLimit is the largest encoded tool result a run carries without a
// BlobStore: Temporal's 2 MiB payload limit, less a margin for the rest of
// the activity's completion.
const PayloadLimit = 2<<20 - 64<<10

// Error types of the activities' application errors, for the workflow to
// classify a failure by, since a Go error does not cross the wire.
const (
	errPromptTooLong = "PromptTooLong"
	errAPI           = "APIError"
	errAfterCalls    = "AfterCalls" // a model turn failed after it handed over a call
)

// Activities are the activities of a durable run. Register them with
// [Register].
type Activities struct {
	cfg   Config
	task  llm.ToolSpec // of Config.Agents
	infos []AgentInfo
	otel  *telemetry.Telemetry
}

// Register registers the workflow and its activities on w.
func Register(w worker.Registry, cfg Config) error {
	if cfg.Model == nil {
		return errors.New("durable: Config.Model is required")
	}
	if cfg.Registry == nil {
		cfg.Registry = tool.NewRegistry(tool.Config{})
	}
	a := &Activities{cfg: cfg, otel: telemetry.New(cfg.Telemetry)}
	if len(cfg.Agents) > 0 {
		var err error
		if a.task, a.infos, err = agentInfos(cfg.Agents); err != nil {
			return err
		}
	}
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(a, activity.RegisterOptions{Name: "agentloop."})
	return nil
}

// Activity names, as Register names them.
const (
	activityTools     = "agentloop.Tools"
	activityModelTurn = "agentloop.ModelTurn"
	activityCallTool  = "agentloop.CallTool"
	activityAllow     = "agentloop.Allow"
)

// Offer is what a worker offers a run, which records it once so that a
// worker with other tools cannot change the run's past.
type Offer struct {
	Tools []ToolInfo `json:"tools"`
	// System is Config.System.
	System string `json:"system,omitempty"`
	// Agents are Config.Agents, whose task tool is among Tools.
	Agents []AgentInfo `json:"agents,omitempty"`
}

// Tools describes the worker's tools, its subagents and its system prompt.
func (a *Activities) Tools(ctx context.Context) (Offer, error) {
	specs := a.cfg.Registry.Specs()
	var infos []ToolInfo
	for _, s := range specs {
		if a.infos != nil && s.Name == subagent.ToolName {
			continue // the child workflows' task tool stands for it
		}
		info := ToolInfo{Spec: s, AtMostOnce: slices.Contains(a.cfg.AtMostOnce, s.Name)}
		if t, _ := a.cfg.Registry.Lookup(s.Name); t != nil {
			info.Queue = t.Queue
		}
		infos = append(infos, info)
	}
	if a.infos != nil {
		infos = append(infos, ToolInfo{Spec: a.task})
	}
	return Offer{Tools: infos, System: a.cfg.System, Agents: a.infos}, nil
}

// ModelTurn streams one model turn and returns it assembled.
func (a *Activities) ModelTurn(ctx context.Context, in TurnInput) (TurnOutput, error) {
	defer heartbeat(ctx)()
	info := activity.GetInfo(ctx)
	source := attemptSource(info)
	req, err := a.request(ctx, in)
	if err != nil {
		return TurnOutput{}, err
	}
	pub := newPublisher(ctx, in.Stream)
	defer pub.close() // on every path, before the activity completes
	var asm llm.Assembler
	calls := false // a call was handed over
	for ev, err := range a.cfg.Model.Stream(ctx, req) {
		if err != nil && calls && ctx.Err() == nil {
			// Its calls may have run: the agent decides (see model).
			return TurnOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), errAfterCalls, nil)
		}
		if err != nil {
			return TurnOutput{}, classify(err)
		}
		block, stopped := asm.Add(ev)
		switch ev := ev.(type) {
		case llm.TextDelta:
			pub.add(ev.Text, false)
		case llm.ThinkingDelta:
			pub.add(ev.Thinking, true)
		case llm.BlockStop:
			// A call whose input is complete starts now, in the workflow,
			// while the rest of the turn streams. One whose signal is lost
			// starts when the turn ends, and so does one with a large
			// input, which the signal would put in the history twice.
			if tu, ok := block.(llm.ToolUse); ok && stopped && in.Eager && len(tu.Input) <= BlobThreshold {
				pub.flush()                                // what streamed before the call is shown before it
				pos := len(asm.Turn().Message.Content) - 1 // the earlier blocks are complete
				err := activity.GetClient(ctx).SignalWorkflow(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID,
					signalToolUse, toolUseSignal{Source: source, Use: tu, Pos: pos})
				if err == nil {
					calls = true
				} else {
					activity.GetLogger(ctx).Warn("durable: starting a call early failed; it starts with the turn's end", "err", err)
				}
			}
		}
	}
	turn := asm.Turn()
	if !turn.Done {
		return TurnOutput{}, classify(llm.ErrIncompleteStream)
	}
	pub.close()
	return TurnOutput{
		Source:    source,
		Message:   turn.Message,
		Stop:      turn.StopReason,
		Usage:     turn.Usage,
		Container: turn.Container,
		Cut:       llm.Message{Role: llm.Assistant, Content: turn.Incomplete},
	}, nil
}

// signalToolUse is the signal by which a model turn hands the workflow
// each tool call whose input is complete.
const signalToolUse = "agentloop.tool_use"

// toolUseSignal is a complete tool call of the model turn attempt Source,
// the block at Pos of its message, signalled after the text before it.
type toolUseSignal struct {
	Source string      `json:"source"`
	Use    llm.ToolUse `json:"use"`
	Pos    int         `json:"pos"`
}

// attemptSource names the attempt of the activity: its signals are told
// apart from an earlier attempt's by it.
func attemptSource(info activity.Info) string {
	return fmt.Sprintf("%s/%d", info.ActivityID, info.Attempt)
}

// classify turns a model error into the application error that tells
// Temporal whether to retry: a transient one is retried by the activity's
// retry policy, after the server's retry-after if it sent one; any other
// is not.
func classify(err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, llm.ErrPromptTooLong):
		var details []any
		if ae, ok := errors.AsType[*llm.APIError](err); ok {
			details = append(details, ae)
		}
		return temporal.NewNonRetryableApplicationError(err.Error(), errPromptTooLong, nil, details...)
	case llm.IsRetryable(err):
		var wait time.Duration
		if ae, ok := errors.AsType[*llm.APIError](err); ok {
			wait = ae.RetryAfter
		}
		return temporal.NewApplicationErrorWithOptions(err.Error(), errAPI, temporal.ApplicationErrorOptions{NextRetryDelay: wait})
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), errAPI, nil)
}

// CallTool runs one tool call, which a person approved if approved. A
// tool's failure is its result, for the model; the activity fails only
// when its worker does.
func (a *Activities) CallTool(ctx context.Context, call llm.ToolUse, approved bool) (ToolOutput, error) {
	defer heartbeat(ctx)()
	if why, _ := a.Allow(ctx, call, approved); why != "" {
		return ToolOutput{ToolResult: notRun(call, why)}, nil
	}
	began := time.Now()
	res := a.otel.Tool(ctx, call, func(ctx context.Context) llm.ToolResult { return a.cfg.Registry.Start(ctx, call)() })
	took := time.Since(began)
	if err := ctx.Err(); err != nil {
		// The result says "cancelled"; the workflow, not the model, decides
		// what a cancelled activity means.
		return ToolOutput{}, err
	}
	out := ToolOutput{ToolResult: res, Duration: took}
	if a.cfg.BlobStore == nil {
		// Measured as it will go, compressed, images included: a result
		// Temporal refuses would fail the activity, run the tool again and
		// again, and tell the model only that its worker failed.
		if p, err := dataConverter.ToPayload(out); err == nil && proto.Size(p) > PayloadLimit {
			out.ToolResult = notRun(call, fmt.Sprintf("not delivered: this call ran, but its result is %d bytes encoded, over the %d "+
				"that a durable run carries without a blob store. Ask for less at once: a part, a summary, or a file to read in pieces.",
				proto.Size(p), PayloadLimit))
		}
	}
	return out, nil
}

// Allow asks Config.Approve about a call, which a person approved if
// approved: it returns why the call is denied, or "" if it may run. A task
// call asks it before its child workflow starts.
func (a *Activities) Allow(ctx context.Context, call llm.ToolUse, approved bool) (string, error) {
	if a.cfg.Approve != nil {
		if err := a.cfg.Approve(ctx, call, approved); err != nil {
			return "denied: " + err.Error(), nil
		}
	}
	return "", nil
}

// dataConverter is DataConverter(nil), which measures a payload as it goes
// without a blob store.
var dataConverter = DataConverter(nil)

// heartbeat heartbeats for the activity of ctx until the returned function
// is called, three times per heartbeat timeout, so that the server notices a
// dead worker within that timeout.
func heartbeat(ctx context.Context) (stop func()) {
	d := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if d <= 0 {
		return func() {}
	}
	return every(ctx, d, func() { activity.RecordHeartbeat(ctx) })
}

// every calls f every d on a goroutine of its own, until ctx ends or the
// returned stop is called, which returns once that goroutine has.
func every(ctx context.Context, d time.Duration, f func()) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				f()
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-exited }
}

// toolFailure is the result a call gets when no worker could complete it.
func toolFailure(call llm.ToolUse, atMostOnce bool, err error) llm.ToolResult {
	why := fmt.Sprintf("not completed: the worker running this call failed (%v).", err)
	if atMostOnce {
		why = fmt.Sprintf("not completed: the worker running this call failed (%v), and %s must not run twice, "+
			"so it was not retried. It may or may not have taken effect: check before calling it again.", err, call.Name)
	}
	return notRun(call, why)
}
