package durable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// Workflow runs the think → act → observe loop on in.Prompt, as
// agent.Agent.Stream does, with each model turn and each tool call an
// activity. It returns the run's result and the conversation after it. A
// run that fails fails the workflow, with the error; the conversation is
// then the input's, unchanged.
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	r, err := start(ctx, in)
	if err != nil {
		return Result{}, err
	}
	return r.finish(r.loop())
}

// A run is the state of one workflow run: what agent's run struct holds.
type run struct {
	root, ctx workflow.Context // ctx is cancelled when MaxDuration passes
	in        Input
	h         *memory.History
	before    []llm.Message
	tools     []ToolInfo
	specs     []llm.ToolSpec
	iter      int // model calls of the run, over every workflow run
	turns     int // model calls of this workflow run
	usage     llm.Usage
	text      string
	rep       looprules.Repeats
	cont      string
	started   time.Time
	runs      int
	timedOut  bool
	waiting   []*approval // calls waiting for a decision, in the order they came
	batch     *batch      // the calls of the latest model turn
	ev        events
	log       interface{ Warn(string, ...any) }
}

// An approval is a call that waits for a [Decision].
type approval struct {
	call    llm.ToolUse
	decided bool
	d       Decision
}

// start sets the run up from its input: defaults, the history, the tools
// (from the worker on a first run, from the input on continue-as-new) and
// the approval handlers.
func start(ctx workflow.Context, in Input) (*run, error) {
	defaults(&in)
	r := &run{root: ctx, ctx: ctx, in: in, log: workflow.GetLogger(ctx)}
	r.h = restore(in, in.History)
	if in.Resume != nil && in.Resume.History != nil {
		// With its exact token counts, which a list of messages lacks.
		h, err := memory.Decode(bytes.NewReader(in.Resume.History), r.h.Config())
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
	r.receiveToolUses()
	if res := in.Resume; res != nil {
		r.before, r.iter, r.usage, r.text, r.rep = res.Before, res.Iteration, res.Usage, res.Text, res.Repeat
		r.cont, r.tools, r.started, r.runs = res.Container, res.Tools, res.Started, res.Runs
		r.ev.seq, r.ev.log = res.Seq, res.Events
	} else {
		if strings.TrimSpace(in.Prompt) == "" {
			return nil, temporal.NewNonRetryableApplicationError(looprules.ErrEmptyPrompt.Error(), "Failed", nil)
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		var offer Offer
		if err := workflow.ExecuteActivity(actx, activityTools).Get(ctx, &offer); err != nil {
			return nil, err
		}
		r.tools = offer.Tools
		// And so for the runs it continues as, which are given r.in.
		if r.in.System == "" {
			r.in.System = offer.System
		}
		if r.in.AppendSystem != "" {
			r.in.System = strings.TrimSpace(r.in.System + "\n\n" + r.in.AppendSystem)
			r.in.AppendSystem = ""
		}
		r.before, r.started, r.runs = r.h.Messages(), workflow.Now(ctx), 1
	}
	for _, t := range r.tools {
		r.specs = append(r.specs, t.Spec)
	}
	r.h.SetPrefix(r.in.System, r.specs)
	if in.Resume == nil {
		r.h.AppendUser(llm.Text{Text: in.Prompt})
	}
	if in.MaxDuration > 0 {
		var cancel workflow.CancelFunc
		r.ctx, cancel = workflow.WithCancel(ctx)
		left := in.MaxDuration - workflow.Now(ctx).Sub(r.started)
		workflow.Go(r.ctx, func(c workflow.Context) {
			if left <= 0 || workflow.NewTimer(c, left).Get(c, nil) == nil {
				r.timedOut = true
				cancel()
			}
		})
	}
	return r, nil
}

// defaults fills in the zero fields of in.
func defaults(in *Input) {
	if in.MaxIterations == 0 {
		in.MaxIterations = looprules.MaxIterations
	}
	if in.RepeatLimit == 0 {
		in.RepeatLimit = looprules.RepeatLimit
	}
	if in.TurnsPerRun <= 0 {
		in.TurnsPerRun = DefaultTurnsPerRun
	}
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

// errContinue ends the loop of a workflow run that continues as new.
var errContinue = errors.New("continue as new")

// loop is the think → act → observe cycle of agent/loop.go's run.loop.
func (r *run) loop() (agent.State, error) {
	for {
		if err := r.ctx.Err(); err != nil {
			return agent.Cancelled, err
		}
		if lim := r.in.MaxTotalTokens; lim > 0 && r.usage.Context() >= lim {
			return agent.TokenLimit, nil
		}
		final := r.iter >= r.in.MaxIterations
		if final && !r.in.FinalAnswer {
			return agent.IterationLimit, nil
		}
		if r.turns >= r.in.TurnsPerRun {
			return "", errContinue
		}
		r.iter++
		r.turns++
		t, err := r.turn(final)
		if err != nil {
			return agent.Failed, err
		}
		state, next := r.observe(t)
		switch {
		case state == agent.Refused, !final && !next:
			return state, nil
		case final:
			return agent.IterationLimit, nil
		}
	}
}

// finish turns how the loop ended into the workflow's outcome, as
// agent.Agent.Stream does: it rolls a failed or refused run back, marks
// one cut short as interrupted, and repairs the history whatever happened.
func (r *run) finish(state agent.State, err error) (Result, error) {
	switch {
	case errors.Is(err, errContinue):
		return Result{}, r.continueAsNew()
	case r.timedOut:
		state, err = agent.TimeLimit, nil
	case err != nil && r.root.Err() != nil:
		state, err = agent.Cancelled, nil
	case err != nil:
		state = agent.Failed
	}
	switch state {
	case agent.Failed, agent.Refused:
		r.h = restore(r.in, r.before)
	case agent.Cancelled, agent.TimeLimit:
		looprules.Interrupt(r.h, "")
	}
	r.h.Repair()
	r.drain()
	r.publish(Event{Done: state})
	if err := r.closeStream(true); err != nil {
		return Result{}, err
	}
	if state == agent.Failed {
		return Result{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent: iteration %d: %v", r.iter, err), "Failed", nil)
	}
	return Result{
		Result:  agent.Result{Text: r.text, State: state, Iterations: r.iter, Usage: r.usage, CostUSD: r.cost()},
		History: r.h.Messages(),
		Runs:    r.runs,
	}, nil
}

// cost prices the run's usage so far.
func (r *run) cost() float64 {
	return looprules.Cost(r.h, r.usage)
}

// continueAsNew carries the run over to a new workflow run, once every
// update handler has returned.
func (r *run) continueAsNew() error {
	if err := r.closeStream(false); err != nil {
		return err
	}
	var carried bytes.Buffer
	if err := r.h.Encode(&carried); err != nil {
		return err
	}
	next := r.in
	next.History = nil
	next.Resume = &Resume{History: carried.Bytes(), Before: r.before, Iteration: r.iter, Usage: r.usage, Text: r.text, Repeat: r.rep,
		Container: r.cont, Tools: r.tools, Started: r.started, Runs: r.runs + 1, Seq: r.ev.seq,
		Events: r.ev.log[max(0, len(r.ev.log)-carriedEvents):]}
	return workflow.NewContinueAsNewError(r.root, WorkflowName, next)
}

// turn runs one model turn, compacting the history and asking again, once,
// when the prompt was too long, as agent's run.turn does. Other retries are
// the activity's.
func (r *run) turn(final bool) (*TurnOutput, error) {
	compacted := false
	for {
		req, err := r.request(final)
		if err != nil {
			return nil, err
		}
		r.publish(Event{Turn: r.iter})
		r.batch = r.newBatch(final)
		out, err := r.model(req, r.batch.id, len(r.specs) > 0 && !final)
		if err == nil {
			err = r.settle(out)
		}
		r.batch.closed = true
		if err == nil {
			r.usage = r.usage.Add(out.Usage)
			if out.Container != "" {
				r.cont = out.Container
			}
			if out.Stop != llm.ModelContextWindowExceeded {
				if c, ok := looprules.ServerCompaction(r.h, out.Message, out.Usage); ok {
					r.publish(Event{Compacted: &c}) // as agent's think reports it
				}
				r.publish(Event{Usage: &agent.UsageUpdate{Turn: out.Usage, Total: r.usage, CostUSD: r.cost()}})
				return out, nil
			}
			err = looprules.ErrContextWindow
		}
		r.batch.cancel() // the turn failed: so do the calls it started
		overflow, tooLong := promptTooLong(err)
		if r.ctx.Err() != nil || compacted || !tooLong {
			return nil, err
		}
		compacted = true
		r.h.MarkOverflow(overflow)
		if cerr := r.compact(); cerr != nil {
			return nil, fmt.Errorf("%w (compacting after it: %v)", err, cerr)
		}
	}
}

// promptTooLong reports whether err says the prompt was too long, and
// returns the API error that said so, for MarkOverflow to read.
func promptTooLong(err error) (error, bool) {
	if errors.Is(err, llm.ErrPromptTooLong) {
		return err, true
	}
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != errPromptTooLong {
		return nil, false
	}
	var api llm.APIError
	if ae.HasDetails() && ae.Details(&api) == nil {
		return &api, true
	}
	return err, true
}

// model runs the ModelTurn activity with the given ID (empty: Temporal's),
// whose calls start as they come when eager. A summary call passes an
// empty id: its text is not the answer, so it is not streamed, as package
// agent does not show it.
func (r *run) model(req llm.Request, id string, eager bool) (*TurnOutput, error) {
	ctx := workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		ActivityID:          id,
		StartToCloseTimeout: r.in.ModelTimeout,
		HeartbeatTimeout:    r.in.Heartbeat,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
	})
	var out TurnOutput
	err := workflow.ExecuteActivity(ctx, activityModelTurn, TurnInput{Request: req, Stream: r.in.Stream && id != "", Eager: eager}).Get(ctx, &out)
	if err != nil {
		r.drain()
		return nil, err
	}
	// The batches were signalled before the activity completed, but the
	// coroutine that receives them may not have run yet: wait for it, so
	// that the turn's text comes before what follows it.
	if out.Batches > 0 {
		if err := workflow.Await(r.root, func() bool { return r.ev.received[out.Source] >= out.Batches }); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// request builds the next request from the history, repairing and, when
// it has outgrown its limit, compacting it first, as package agent does.
func (r *run) request(final bool) (llm.Request, error) {
	if _, err := looprules.Prepare(r.h, r.log, r.compact); err != nil {
		return llm.Request{}, err
	}
	return looprules.Request(r.h, looprules.Settings{System: r.in.System, Tools: r.specs, Thinking: r.in.Thinking,
		Effort: r.in.Effort, NoCache: r.in.DisableCache, Container: r.cont}, final), nil
}

// errNoServerSummary declines an on-demand server compaction (see compact).
var errNoServerSummary = errors.New("durable: on-demand server compaction is not used in a workflow")

// compact compacts the history with memory's own code, its summary call a
// ModelTurn activity.
func (r *run) compact() error {
	summary := llm.ModelFunc(func(_ context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
		return func(yield func(llm.Event, error) bool) {
			if req.Summarize != nil {
				// The activity returns a summary's text, not the compaction
				// block an on-demand server compaction answers with, so that
				// block would be billed and lost: the client summary runs
				// instead. Threshold compaction during a turn keeps its block.
				yield(nil, errNoServerSummary)
				return
			}
			out, err := r.model(req, "", false)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, ev := range []llm.Event{
				llm.MessageStart{},
				llm.TextDelta{Index: 0, Text: llm.TextOf(out.Message.Content)},
				llm.BlockStop{Index: 0},
				llm.MessageDelta{StopReason: out.Stop, Usage: out.Usage},
				llm.MessageStop{},
			} {
				if !yield(ev, nil) {
					return
				}
			}
		}
	})
	// The context only reaches summary, which uses the workflow's.
	c, err := r.h.Compact(context.Background(), summary)
	r.usage = r.usage.Add(c.Usage)
	if err == nil || len(c.Steps) > 0 { // as agent's compact reports it
		r.publish(Event{Compacted: &c})
	}
	return err
}

// observe applies the turn's stop reason, as agent's run.observe does. It
// returns the state the run ends in, if it ends, and whether it goes on.
func (r *run) observe(t *TurnOutput) (agent.State, bool) {
	// The turn is over once observed: act has waited for its calls, and
	// a refusal's are void. Its batch's context, a child of the run's,
	// would otherwise stay among the run's children until the run ends.
	defer r.batch.cancel()
	// Only the last block can be cut, by max_tokens (agent's run.think).
	msg, cutUses := looprules.Cut(t.Message, t.Cut.Content)
	cut := map[string]bool{}
	for _, tu := range cutUses {
		cut[tu.ID] = true
	}
	r.text = llm.TextOf(msg.Content)
	var uses []llm.ToolUse
	for _, b := range msg.Content {
		if tu, ok := b.(llm.ToolUse); ok {
			uses = append(uses, tu)
		}
	}
	o, known := looprules.Stop(t.Stop, len(uses) > 0)
	switch o {
	case looprules.Refuse:
		return agent.Refused, false
	case looprules.Act:
		r.act(msg, t.Usage, uses, cut)
		return "", true
	}
	if len(msg.Content) > 0 {
		r.h.AppendAssistant(msg, t.Usage)
	}
	switch {
	case o == looprules.Resume:
		return "", true
	case o == looprules.Truncate:
		return agent.Truncated, false
	case !known:
		r.log.Warn("agent: unknown stop reason; treating it as end_turn", "stop_reason", t.Stop)
	}
	return agent.Finished, false
}
