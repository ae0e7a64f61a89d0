package durable

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
	"github.com/agentloop/agentloop/toolsearch"
	"github.com/agentloop/agentloop/typed"
)

// Workflow runs package agent's own loop on in.Prompt, in the workflow: an
// agent.Agent whose Model runs each model turn as an activity and whose
// Runtime runs each tool call as one and keeps the workflow's time (see
// model.go and runtime.go). It returns the run's result and the
// conversation after it. A run that fails fails the workflow, with the
// error; the conversation is then the input's, unchanged.
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	r, err := start(ctx, in)
	if err != nil {
		return Result{}, err
	}
	return r.finish(r.loop())
}

// A run is the state of one workflow run.
type run struct {
	root     workflow.Context
	in       Input
	h        *memory.History
	before   []llm.Message // the history before the run, for a failed run
	tools    []ToolInfo
	agents   []AgentInfo // the worker's subagents, for the task tool
	total    llm.Usage   // the run's own, as its last UsageUpdate said
	subUsage llm.Usage   // of the child workflows of the run's task calls
	subCost  float64
	base     agent.Result // Iterations and Usage of the workflow runs before this one
	started  time.Time    // when the first workflow run started
	runs     int
	waiting  []*approval     // calls waiting for a decision, in the order they came
	approved map[string]bool // calls a person allowed, by id
	ev       events
	sent     sent // the last request a worker completed

	streaming bool // the next model call is a turn's, whose text streams
	turns     int  // model turns of this workflow run
	models    int  // model activities started, for their ids
	calls     int  // tool activities started, for their ids
	running   int  // tool calls not yet returned
	last      map[string]workflow.Future
}

// An approval is a call that waits for a [Decision].
type approval struct {
	call    llm.ToolUse
	decided bool
	d       Decision
}

// start sets the run up from its input: defaults, the history, the tools
// (from the worker on a first run, from the input on continue-as-new) and
// the handlers.
func start(ctx workflow.Context, in Input) (*run, error) {
	defaults(&in)
	r := &run{root: ctx, in: in, approved: map[string]bool{}, last: map[string]workflow.Future{}}
	r.h = restore(in, in.History)
	if in.Resume != nil && in.Resume.History != nil {
		// With its exact token counts, which a list of messages lacks.
		h, err := jsonl.Decode(bytes.NewReader(in.Resume.History), r.h.Config())
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError("durable: the carried history: "+err.Error(), "Failed", nil)
		}
		r.h = h
	}
	// Before anything blocks, so that an update that came with the first
	// workflow task finds its handler.
	if err := r.handlers(); err != nil {
		return nil, err
	}
	if err := r.streamHandlers(); err != nil {
		return nil, err
	}
	if err := r.messagesHandler(); err != nil {
		return nil, err
	}
	if res := in.Resume; res != nil {
		r.before, r.base, r.tools, r.started, r.runs = res.Before, agent.Result{Iterations: res.Iteration, Usage: res.Usage}, res.Tools, res.Started, res.Runs
		r.agents, r.subUsage, r.subCost, r.total = res.Agents, res.SubUsage, res.SubCostUSD, res.Usage
		msgs := r.h.Messages()
		if r.before == nil {
			r.before = msgs[:min(res.BeforeLen, len(msgs))]
		}
		if p := res.Prefix; p != nil && p.Len <= len(msgs) {
			r.sent = sent{version: p.Version, msgs: msgs[:p.Len]}
		}
		r.ev.seq, r.ev.log = res.Seq, res.Events
		return r, nil
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, temporal.NewNonRetryableApplicationError("agent: the prompt is empty", "Failed", nil)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var offer Offer
	if err := workflow.ExecuteActivity(actx, activityTools).Get(ctx, &offer); err != nil {
		return nil, err
	}
	r.tools, r.agents = offer.Tools, offer.Agents
	if in.Tools != nil {
		r.tools = slices.DeleteFunc(r.tools, func(t ToolInfo) bool { return !slices.Contains(in.Tools, t.Spec.Name) })
	}
	// And so for the runs it continues as, which are given r.in.
	if r.in.System == "" {
		r.in.System = offer.System
	}
	if r.in.AppendSystem != "" {
		r.in.System = strings.TrimSpace(r.in.System + "\n\n" + r.in.AppendSystem)
		r.in.AppendSystem = ""
	}
	r.before, r.started, r.runs = r.h.Messages(), workflow.Now(ctx), 1
	return r, nil
}

// defaults fills in the zero fields of in.
func defaults(in *Input) {
	if in.Heartbeat <= 0 {
		in.Heartbeat = DefaultHeartbeat
	}
	if in.ModelTimeout <= 0 {
		in.ModelTimeout = DefaultModelTimeout
	}
	if in.ToolTimeout <= 0 {
		in.ToolTimeout = DefaultToolTimeout
	}
	if in.ToolAttempts <= 0 {
		in.ToolAttempts = 5
	}
	if in.MaxIterations <= 0 {
		in.MaxIterations = agent.DefaultMaxIterations
	}
}

// restore makes a history of msgs. Their usage is unknown, so counts are
// estimates until the next turn reports one; a run that continues as new
// carries its history whole instead (Resume.History).
func restore(in Input, msgs []llm.Message) *memory.History {
	h := memory.New(memory.Config{Model: in.Model, MaxTokens: in.MaxTokens, ContextWindow: in.ContextWindow, ContextLimit: in.ContextLimit,
		Compaction: in.Compaction})
	for _, m := range msgs {
		if m.Role == llm.Assistant {
			h.AppendAssistant(m, llm.Usage{})
		} else {
			h.AppendUser(m.Content...)
		}
	}
	return h
}

// loop runs the agent's loop on the run's prompt, or, in a run that
// continues as new, on the history as it stands, with what is left of the
// run's limits.
func (r *run) loop() (agent.Result, error) {
	maxDuration := r.in.MaxDuration
	if maxDuration > 0 {
		if maxDuration -= workflow.Now(r.root).Sub(r.started); maxDuration <= 0 {
			return agent.Result{State: agent.TimeLimit}, nil
		}
	}
	maxTokens := r.in.MaxTotalTokens
	if maxTokens > 0 {
		maxTokens -= r.base.Usage.Context() // > 0: the loop pauses only below its limits
	}
	maxCost := r.in.MaxCostUSD
	if maxCost > 0 {
		// Below the limit too, but for rounding: a cost summed turn by turn
		// may differ in its last bits from the total's.
		if maxCost -= r.cost(r.base.Usage); maxCost <= 0 {
			return agent.Result{State: agent.BudgetLimit, Iterations: r.base.Iterations, Usage: r.base.Usage, CostUSD: r.cost(r.base.Usage)}, nil
		}
	}
	// The agent's context, cancelled when the workflow is. Its children
	// are plain cancel contexts: no goroutine, no timer, so the loop stays
	// deterministic; what blocks, blocks in the workflow (model.go and
	// runtime.go).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workflow.Go(r.root, func(c workflow.Context) {
		c.Done().Receive(c, nil)
		cancel()
	})
	cfg := agent.Config{
		Model: model{r}, Runtime: runtime{r}, History: r.h, System: r.in.System, Thinking: r.in.Thinking, Effort: r.in.Effort,
		MaxIterations: r.in.MaxIterations - r.base.Iterations, FinalAnswer: r.in.FinalAnswer, MaxDuration: maxDuration,
		MaxTotalTokens: maxTokens, MaxCostUSD: maxCost, RepeatLimit: r.in.RepeatLimit, DisableCache: r.in.DisableCache, Hooks: []agent.Hook{agent.ToolGate(r.approve)},
		Logger: slog.New(logHandler{workflow.GetLogger(r.root)}), // no tracing Observer: the activities trace; a replay must not
	}
	// Tool search decides in the workflow too, from the history and the
	// tools, as deterministic as the loop is.
	cfg, err := toolsearch.Configure(cfg, toolsearch.Auto)
	if err != nil {
		return agent.Result{State: agent.Failed}, err
	}
	if r.in.Schema != nil { // typed's checks run in the workflow, deterministic as the loop is
		if cfg, err = typed.Configure(cfg, r.in.Schema, &typed.Options{Reasks: r.in.Reasks}); err != nil {
			return agent.Result{State: agent.Failed}, err
		}
	}
	a, err := agent.New(cfg)
	if err != nil {
		return agent.Result{State: agent.Failed}, err
	}
	prompt := r.in.Prompt
	if r.in.Resume != nil {
		prompt = "" // the paused run goes on
	}
	var res agent.Result
	for ev, err := range a.Stream(ctx, prompt) {
		if ev, ok := ev.(agent.Result); ok {
			res, res.Iterations, res.Usage = ev, r.base.Iterations+ev.Iterations, r.base.Usage.Add(ev.Usage)
			res.CostUSD = r.cost(res.Usage)
			return res, err
		}
		r.observe(ev)
	}
	return res, nil
}

// cost prices usage at the run's model.
func (r *run) cost(u llm.Usage) float64 {
	m, _ := llm.LookupModel(r.h.Config().Model)
	return m.Price.Cost(u)
}

// observe publishes an event of the agent's for [Stream]. A watched
// turn's text and thinking are the model activity's to stream, as it
// receives them; an unwatched turn's come whole, from its output.
func (r *run) observe(ev agent.Event) {
	switch ev := ev.(type) {
	case agent.TextDelta:
		if r.ev.whole {
			r.publish(Event{Text: ev.Text})
		}
	case agent.ThinkingDelta:
		if r.ev.whole {
			r.publish(Event{Thinking: ev.Thinking})
		}
	case agent.TurnStart:
		r.streaming = true // the model call that follows is this turn's
		r.publish(Event{Turn: r.base.Iterations + ev.Iteration})
	case agent.ToolCall:
		// A call that waits for approval is published by approve: waiting,
		// then starting once approved, which is how a client tells that it
		// was approved elsewhere.
		if !r.needsApproval(ev.Name) {
			r.publish(Event{ToolCall: &llm.ToolUse{ID: ev.ID, Name: ev.Name, Input: ev.Input}})
		}
	case agent.ToolDone:
		r.publish(Event{ToolDone: &llm.ToolResult{ToolUseID: ev.ID, Content: []llm.Block{llm.Text{Text: ev.Content}}, IsError: ev.IsError},
			Duration: ev.Duration})
	case agent.UsageUpdate:
		ev.Total = r.base.Usage.Add(ev.Total)
		r.total = ev.Total
		ev.CostUSD = r.cost(ev.Total)
		r.publish(Event{Usage: &ev})
	case agent.Compacted:
		r.publish(Event{Compacted: &ev.Compaction})
	case agent.Retry:
		r.publish(Event{Discard: true, Attempt: ev.Attempt})
	}
}

// finish turns how the agent's run ended into the workflow's outcome. The
// agent rolled back, marked and repaired the history of this workflow run;
// a failed or refused run that continued as new goes back further, to the
// history before its first.
func (r *run) finish(res agent.Result, err error) (Result, error) {
	oe, noAnswer := errors.AsType[*typed.OutputError](err)
	if res.State == agent.Paused {
		if res.State = r.limit(); res.State == "" {
			return Result{}, r.continueAsNew(res)
		}
	}
	switch {
	case res.State == agent.Failed, res.State == agent.Refused, noAnswer:
		r.h = restore(r.in, r.before)
	case res.State == agent.Cancelled:
		err = nil
	}
	res.Usage, res.CostUSD = res.Usage.Add(r.subUsage), res.CostUSD+r.subCost
	r.drain()
	r.publish(Event{Done: res.State, Result: &res})
	if err := r.closeStream(); err != nil {
		return Result{}, err
	}
	switch {
	case noAnswer:
		return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "OutputError", nil, oe)
	case res.State == agent.Failed:
		return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "Failed", nil)
	}
	out := Result{Result: res, History: r.h.Messages(), Runs: r.runs}
	if r.in.Schema != nil {
		out.Output = typed.Output(res)
	}
	return out, nil
}

// continueAsNew carries the run over to a new workflow run, once every
// update handler has returned.
func (r *run) continueAsNew(res agent.Result) error {
	if err := r.closeStream(); err != nil {
		return err
	}
	var carried bytes.Buffer
	if err := jsonl.Encode(&carried, r.h); err != nil {
		return err
	}
	next := r.in
	next.History = nil
	next.Resume = &Resume{History: carried.Bytes(), Iteration: res.Iterations, Usage: res.Usage,
		Tools: r.tools, Agents: r.agents, SubUsage: r.subUsage, SubCostUSD: r.subCost, Started: r.started, Runs: r.runs + 1, Seq: r.ev.seq}
	if r.watched() {
		// For a watcher that has not read them yet. Unwatched, a run's
		// events are its own: a reader that comes later reads the last
		// workflow run's.
		next.Resume.Events = r.ev.log[max(0, len(r.ev.log)-carriedEvents):]
	}
	// What the history begins with is named, not carried again.
	msgs := r.h.Messages()
	if n := len(r.before); commonPrefix(r.before, msgs) == n {
		next.Resume.BeforeLen = n
	} else {
		next.Resume.Before = r.before
	}
	if n := commonPrefix(r.sent.msgs, msgs); n > 0 {
		next.Resume.Prefix = &Prefix{Version: r.sent.version, Len: n}
	}
	return workflow.NewContinueAsNewError(r.root, WorkflowName, next)
}

// handlers registers the query that lists the calls waiting for approval
// and the update that decides one.
func (r *run) handlers() error {
	if err := workflow.SetQueryHandler(r.root, QueryPending, func() ([]llm.ToolUse, error) {
		calls := make([]llm.ToolUse, len(r.waiting))
		for i, a := range r.waiting {
			calls[i] = a.call
		}
		return calls, nil
	}); err != nil {
		return err
	}
	find := func(id string) *approval {
		i := slices.IndexFunc(r.waiting, func(a *approval) bool { return a.call.ID == id && !a.decided })
		if i < 0 {
			return nil
		}
		return r.waiting[i]
	}
	return workflow.SetUpdateHandlerWithOptions(r.root, UpdateApprove,
		func(ctx workflow.Context, d Decision) error {
			if a := find(d.CallID); a != nil {
				a.decided, a.d = true, d
			}
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, d Decision) error {
			if find(d.CallID) == nil {
				return fmt.Errorf("durable: no call %q is waiting for approval", d.CallID)
			}
			return nil
		}})
}

// approve is the check of the agent's tool-call hook: a call of a tool in Input.Approve
// waits, in the workflow, for a person's [Decision].
func (r *run) approve(ctx context.Context, call llm.ToolUse) error {
	if !r.needsApproval(call.Name) {
		return nil
	}
	a := &approval{call: call}
	r.waiting = append(r.waiting, a)
	r.publish(Event{ToolCall: &call, Waiting: true})
	err := workflow.Await(r.root, func() bool { return a.decided || ctx.Err() != nil })
	r.waiting = slices.DeleteFunc(r.waiting, func(w *approval) bool { return w == a })
	switch {
	case err != nil:
		return err
	case !a.decided:
		return context.Cause(ctx)
	case !a.d.Allow:
		return errors.New(cmp.Or(a.d.Reason, "the user did not approve this call"))
	}
	r.approved[call.ID] = true
	r.publish(Event{ToolCall: &call}) // it starts
	return nil
}

// needsApproval reports whether a call of the tool waits for a Decision.
func (r *run) needsApproval(tool string) bool {
	return slices.Contains(r.in.Approve, tool) || slices.Contains(r.in.Approve, "*")
}

// logHandler hands the agent's log lines to the workflow's logger, which
// drops them during a replay.
type logHandler struct{ log log.Logger }

func (h logHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h logHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logHandler) WithGroup(string) slog.Handler            { return h }
func (h logHandler) Handle(_ context.Context, rec slog.Record) error {
	var kv []any
	rec.Attrs(func(a slog.Attr) bool {
		kv = append(kv, a.Key, a.Value.Any())
		return true
	})
	if rec.Level >= slog.LevelWarn {
		h.log.Warn(rec.Message, kv...)
	} else {
		h.log.Info(rec.Message, kv...)
	}
	return nil
}
