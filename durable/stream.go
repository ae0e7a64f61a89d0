package durable

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/subagent"
)

// An Event is what a caller of [Stream] sees of a run: answer and thinking
// text as they stream, in batches at most [StreamInterval] apart, the tool
// calls and compactions. Exactly one of its fields besides Seq is set,
// except that Waiting goes with ToolCall, Duration with ToolDone,
// Attempt with Discard, Result with Done, and ParentID and Agent with any.
type Event struct {
	// Seq numbers the run's events from 1, across continue-as-new.
	Seq int `json:"seq"`
	// Turn is the iteration of a model turn that starts, from 1.
	Turn int `json:"turn,omitempty"`
	// Text is answer text that streamed since the previous batch.
	Text string `json:"text,omitempty"`
	// Thinking is thinking text that streamed since the previous batch,
	// as agent.ThinkingDelta carries it: not part of the answer. A batch
	// keeps the order of the two: text and thinking that alternate are
	// several events.
	Thinking string `json:"thinking,omitempty"`
	// Discard says that the text of the current turn so far is void: the
	// turn failed mid-stream and is being tried again, as attempt Attempt
	// (2 for the first retry), as agent.Retry says. Attempt is 0 in an
	// event recorded before it existed.
	Discard bool `json:"discard,omitempty"`
	Attempt int  `json:"attempt,omitempty"`
	// ToolCall is a call that starts, or waits for approval when
	// Waiting is set.
	ToolCall *llm.ToolUse `json:"tool_call,omitempty"`
	Waiting  bool         `json:"waiting,omitempty"`
	// ToolDone is the result of a call, and Duration the call's own
	// running time, measured by its worker; 0 if it did not run.
	ToolDone *llm.ToolResult `json:"tool_done,omitempty"`
	Duration time.Duration   `json:"duration_ns,omitempty"`
	// Compacted says the history was compacted, as agent.Compacted does:
	// by the workflow, or by the API during a turn.
	Compacted *memory.Compaction `json:"compacted,omitempty"`
	// Usage is the usage of a model turn that completed, and of the run
	// so far.
	Usage *agent.UsageUpdate `json:"usage,omitempty"`
	// Done is the state the run ended in; it is the last event.
	Done agent.State `json:"done,omitempty"`
	// Result is the run's result, with Done, as agent.Stream's last event
	// is: for a sub-run, what a task call's nested Result carries in
	// process (its text, model turns, usage and cost). The workflow's own
	// result adds the conversation. Nil from a worker that predates it.
	Result *agent.Result `json:"result,omitempty"`

	// ParentID marks the events of a task call's sub-run (Config.Agents),
	// which [Stream] relays: it is the call's tool_use id, and Agent the
	// subagent's name, as in agent.Nested. Their last is the sub-run's
	// Done, with its Result.
	ParentID string `json:"parent_tool_use_id,omitempty"`
	Agent    string `json:"agent,omitempty"`
}

// carriedEvents is how many of the latest events a continue-as-new
// carries over, for a poller that has not read them yet.
const carriedEvents = 256

// StreamInterval is the longest a streamed batch of text waits.
const StreamInterval = 250 * time.Millisecond

// watchLease is how long a watcher's signal makes a run stream its text.
const watchLease = time.Minute

// Names of the streaming signals, and of the query that [Stream] polls.
const (
	signalStream = "agentloop.stream"
	signalWatch  = "agentloop.watch"
	QueryEvents  = "events"
)

// publisher batches a turn's text and thinking and signals them to the
// workflow, when the run streams: at most StreamInterval apart, and once
// more at the end.
type publisher struct {
	ctx    context.Context
	mu     sync.Mutex
	buf    []piece // runs of text or of thinking, in the order they came, under mu
	err    error
	stop   func()
	closed sync.Once
}

// newPublisher starts publishing for the activity attempt of ctx; nil
// when the run does not stream.
func newPublisher(ctx context.Context, on bool) *publisher {
	if !on {
		return nil
	}
	p := &publisher{ctx: ctx}
	if n := activity.GetInfo(ctx).Attempt; n > 1 {
		p.send(Event{Discard: true, Attempt: int(n)})
	}
	p.stop = every(ctx, StreamInterval, p.flush)
	return p
}

// A piece is a run of text, or of thinking, in a batch.
type piece struct {
	thinking bool
	b        []byte
}

// add appends s to the batch's last piece if it is of the same kind, or
// starts a piece.
func (p *publisher) add(s string, thinking bool) {
	if p == nil || s == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.buf); n > 0 && p.buf[n-1].thinking == thinking {
		p.buf[n-1].b = append(p.buf[n-1].b, s...)
		return
	}
	p.buf = append(p.buf, piece{thinking, []byte(s)})
}

// close stops the ticker and sends what is left, once.
func (p *publisher) close() {
	if p == nil {
		return
	}
	p.closed.Do(func() {
		p.stop()
		p.flush()
	})
}

// flush sends the text and thinking so far, a signal for each run. It
// holds mu while it sends, so that batches go out in order.
func (p *publisher) flush() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.buf {
		if pc.thinking {
			p.send(Event{Thinking: string(pc.b)})
		} else {
			p.send(Event{Text: string(pc.b)})
		}
	}
	p.buf = nil
}

// send signals e to the workflow. A lost batch costs the caller some text,
// not the run, so a failure is only kept for the log.
func (p *publisher) send(e Event) {
	info := activity.GetInfo(p.ctx)
	err := activity.GetClient(p.ctx).SignalWorkflow(p.ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, signalStream, e)
	if err != nil && p.err == nil {
		p.err = err
		activity.GetLogger(p.ctx).Warn("durable: streaming to the caller failed", "err", err)
	}
}

// events is the workflow's side of streaming: the run's events, which
// the events query hands out.
type events struct {
	seq int
	log []Event
	// watchedUntil is when the last watcher's lease ends: while it
	// lasts, a turn's text is signalled as it streams.
	watchedUntil time.Time
	// whole says that the current turn's text is published as the agent
	// yields it, from the turn's output, not signalled as it streams.
	// The calls that the turn started early, and their results, are then
	// held until it ends, so that they follow the text written before
	// them, as when it streams.
	whole bool
	held  []Event
}

// publish appends e to the run's events, or holds it (see events.whole).
func (r *run) publish(e Event) {
	if r.ev.whole && (e.ToolCall != nil && !e.Waiting || e.ToolDone != nil) {
		r.ev.held = append(r.ev.held, e)
		return
	}
	r.ev.seq++
	e.Seq = r.ev.seq
	r.ev.log = append(r.ev.log, e)
}

// endTurn publishes what the turn held.
func (r *run) endTurn() {
	r.ev.whole = false
	for _, e := range r.ev.held {
		r.publish(e)
	}
	r.ev.held = nil
}

// watched reports whether a watcher's lease lasts.
func (r *run) watched() bool {
	return workflow.Now(r.root).Before(r.ev.watchedUntil)
}

// streamHandlers receives the watchers' leases and the model activity's
// batches, and answers the events query: the events after a sequence
// number. A query is not recorded in the history.
func (r *run) streamHandlers() error {
	if r.in.Stream {
		r.ev.watchedUntil = workflow.Now(r.root).Add(watchLease)
	}
	watch := workflow.GetSignalChannel(r.root, signalWatch)
	workflow.Go(r.root, func(ctx workflow.Context) {
		for watch.Receive(ctx, nil) {
			r.ev.watchedUntil = workflow.Now(ctx).Add(watchLease)
		}
	})
	// It waits for batches and drains them, rather than receive one: a
	// value handed to a waiting receiver is out of the channel before it
	// is published, and drain, which the model calls to put a turn's text
	// before what follows it, must find every batch not yet published.
	ch := workflow.GetSignalChannel(r.root, signalStream)
	workflow.Go(r.root, func(ctx workflow.Context) {
		for workflow.Await(ctx, func() bool { return ch.Len() > 0 }) == nil {
			r.drain()
		}
	})
	return workflow.SetQueryHandler(r.root, QueryEvents, func(after int) ([]Event, error) {
		i, _ := slices.BinarySearchFunc(r.ev.log, after+1, func(e Event, seq int) int { return e.Seq - seq })
		return r.ev.log[i:], nil
	})
}

// drain publishes the batches signalled so far. The model activity sends
// its last batch before it completes, so after a turn, draining puts the
// turn's text before what follows it, whichever coroutine runs first.
func (r *run) drain() {
	ch := workflow.GetSignalChannel(r.root, signalStream)
	for {
		var e Event
		if !ch.ReceiveAsync(&e) {
			return
		}
		r.publish(e)
	}
}

// closeStream publishes the batches already signalled and waits for the
// update handlers to return, before the run ends or continues as new.
func (r *run) closeStream() error {
	r.drain()
	// A cancelled run still ends its handlers.
	ctx, _ := workflow.NewDisconnectedContext(r.root)
	return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(r.root) })
}

// Stream yields the events of the run whose workflow ID is workflowID,
// from the first, until its Done event, or until it closed without one;
// then the result is the workflow's, with client.Client.GetWorkflow. It
// follows the run across continue-as-new, and reads a run that ended as
// well as one in progress; a reader that comes after a continue-as-new
// that no one watched reads the events of the workflow runs from there.
// The events of a task call's sub-run (Config.Agents) come marked with
// the call's id, after the call and before its result, as agent.Nested
// events do in process.
//
// It polls the run with a query, which is not recorded in the workflow's
// history, at most [StreamInterval] apart, and holds a watcher's lease on
// it by a signal a minute: while one is held, the model's text is
// signalled to the workflow as it streams; otherwise a turn's text comes
// whole when the turn ends, as a sub-run's always does.
func Stream(ctx context.Context, c client.Client, workflowID string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		after := 0
		var leased time.Time
		var subs []*subRun // of the task calls that started, in that order
		for {
			if time.Since(leased) > watchLease/2 {
				err := c.SignalWorkflow(ctx, workflowID, "", signalWatch, nil)
				if _, gone := errors.AsType[*serviceerror.NotFound](err); err != nil && !gone {
					yield(Event{}, err)
					return
				}
				leased = time.Now()
			}
			evs, open, err := poll(ctx, c, workflowID, after)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, e := range evs {
				after = e.Seq
				if i := slices.IndexFunc(subs, func(s *subRun) bool { return e.ToolDone != nil && s.callID == e.ToolDone.ToolUseID }); i >= 0 {
					// The call has its result, so its sub-run has ended (or
					// never started): its last events come before the result.
					if _, ok := subs[i].relay(ctx, c, yield); !ok {
						return
					}
					subs = slices.Delete(subs, i, i+1)
				}
				if !yield(e, nil) || e.Done != "" {
					return
				}
				if s := startsSubRun(workflowID, e); s != nil {
					subs = append(subs, s)
				}
			}
			if !open {
				return // it failed before its loop ran, or was terminated
			}
			moved := len(evs) > 0
			for _, s := range subs {
				n, ok := s.relay(ctx, c, yield)
				if !ok {
					return
				}
				moved = moved || n > 0
			}
			if !moved {
				t := time.NewTimer(StreamInterval)
				select {
				case <-ctx.Done():
					t.Stop()
					yield(Event{}, ctx.Err())
					return
				case <-t.C:
				}
			}
		}
	}
}

// A subRun is the child workflow of a task call, whose events Stream
// relays.
type subRun struct {
	id, callID, agent string
	after             int
}

// startsSubRun returns the sub-run of e, if e is a task call that starts.
func startsSubRun(workflowID string, e Event) *subRun {
	call := e.ToolCall
	if call == nil || e.Waiting || call.Name != subagent.ToolName {
		return nil
	}
	var in struct {
		SubagentType string `json:"subagent_type"`
	}
	_ = json.Unmarshal(call.Input, &in) // the name only labels the events; a bad input starts no sub-run
	return &subRun{id: childID(workflowID, call.ID), callID: call.ID, agent: in.SubagentType}
}

// relay yields the sub-run's events that are new, marked, and returns
// how many there were; ok is false if the stream ends, with an error or
// because its reader stopped. A sub-run that has not started yet has none.
func (s *subRun) relay(ctx context.Context, c client.Client, yield func(Event, error) bool) (n int, ok bool) {
	evs, _, err := poll(ctx, c, s.id, s.after)
	if _, gone := errors.AsType[*serviceerror.NotFound](err); gone {
		return 0, true
	} else if err != nil {
		yield(Event{}, err)
		return 0, false
	}
	for _, e := range evs {
		s.after = e.Seq
		e.ParentID, e.Agent = s.callID, s.agent
		if !yield(e, nil) {
			return 0, false
		}
	}
	return len(evs), true
}

// poll returns the events after the sequence number after of the latest
// run of workflowID, and whether it is open: one that closed, such as a
// run that failed before its loop started, has nothing more to say.
func poll(ctx context.Context, c client.Client, workflowID string, after int) ([]Event, bool, error) {
	req := &client.QueryWorkflowWithOptionsRequest{WorkflowID: workflowID, QueryType: QueryEvents, Args: []any{after},
		QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NOT_OPEN}
	resp, err := c.QueryWorkflowWithOptions(ctx, req)
	open := true
	if err == nil && resp.QueryRejected != nil {
		// Closed: its last events are read from its history. A run that
		// continued as new goes on in the next, which the next poll reads.
		open = resp.QueryRejected.Status == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
		req.QueryRejectCondition = enumspb.QUERY_REJECT_CONDITION_NONE
		resp, err = c.QueryWorkflowWithOptions(ctx, req)
	}
	if err != nil {
		return nil, false, err
	}
	var evs []Event
	return evs, open, resp.QueryResult.Get(&evs)
}
