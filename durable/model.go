package durable

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/llm"
)

// model is the agent's llm.Model in the workflow: each call runs the
// ModelTurn activity and yields its turn as events. A tool call the
// activity signals while the turn streams is yielded at once, so that the
// agent starts it while the model still writes; the rest of the turn
// follows when the activity returns.
//
// Retries are Temporal's, by the activity's retry policy, with the
// server's retry-after as the next delay (classify). Only a failure after
// the activity handed over a call is not retried there: the call may have
// run, and only the agent can keep it and tell the model (its MaxAttempts
// retry, waiting by runtime.Backoff).
type model struct{ *run }

// errNoServerSummary declines an on-demand server compaction: the
// activity returns a summary's text, not the compaction block such a
// request answers with, so that block would be billed and lost; memory's
// client summary runs instead. Threshold compaction during a turn keeps
// its block.
var errNoServerSummary = errors.New("durable: on-demand server compaction is not used in a workflow")

// errAttemptChanged ends a turn whose calls came from an attempt of the
// activity that then timed out (its worker died): Temporal ran it again,
// but the agent has the first attempt's calls, so it must try the turn
// anew, as after any failure mid-stream.
var errAttemptChanged = fmt.Errorf("durable: the model turn's worker failed after its calls started: %w", llm.ErrIncompleteStream)

func (m model) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req.Summarize {
			yield(nil, errNoServerSummary)
			return
		}
		r := m.run
		// A turn's text streams and its calls start early; a summary's
		// text is not the answer, and it calls nothing.
		turn := r.streaming
		r.streaming = false
		if turn {
			r.turns++
		}
		r.models++
		id := fmt.Sprintf("model/%d", r.models)
		actx, cancel := workflow.WithCancel(r.root)
		defer cancel()
		actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
			ActivityID:          id,
			StartToCloseTimeout: r.in.ModelTimeout,
			HeartbeatTimeout:    r.in.Heartbeat,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
		})
		in := TurnInput{Request: req, Stream: turn && r.watched(), Eager: turn && len(req.Tools) > 0}
		r.ev.whole = turn && !in.Stream
		defer r.endTurn()
		r.refer(&in)
		f := workflow.ExecuteActivity(actx, activityModelTurn, in)
		s := signalled{run: r, id: id, ch: workflow.GetSignalChannel(r.root, signalToolUse), yield: yield, done: map[string]bool{}}
		stop := func(err error) {
			cancel()
			yield(nil, err)
		}
		for !f.IsReady() {
			if err := workflow.Await(r.root, func() bool { return f.IsReady() || s.ch.Len() > 0 || ctx.Err() != nil }); err != nil {
				stop(err)
				return
			}
			if ctx.Err() != nil {
				stop(context.Cause(ctx))
				return
			}
			if err := s.receive(""); err != nil {
				stop(err)
				return
			}
			if s.stopped {
				return // the deferred cancel stops the activity
			}
		}
		var out TurnOutput
		if err := f.Get(r.root, &out); err != nil {
			// A failed attempt's calls were signalled before it failed.
			if rerr := s.receive(""); rerr != nil {
				err = rerr
			}
			yield(nil, modelError(err))
			return
		}
		// Named by the workflow run and the activity.
		r.sent = sent{version: workflow.GetInfo(r.root).WorkflowExecution.RunID + "/" + id, msgs: req.Messages}
		// Its signals came before it completed, so they are all in their
		// channels now, whether or not they have been read.
		r.drain()
		if err := s.receive(out.Source); err != nil {
			stop(err)
			return
		}
		if s.source != "" && s.source != out.Source {
			stop(errAttemptChanged)
			return
		}
		for i, b := range out.Message.Content {
			if tu, ok := b.(llm.ToolUse); ok && s.done[tu.ID] {
				continue
			}
			if !s.emit(llm.BlockEvents(i, b)...) {
				return
			}
		}
		for j, b := range out.Cut.Content { // never stopped: cut off by max_tokens
			evs := llm.BlockEvents(len(out.Message.Content)+j, b)
			if !s.emit(evs[:len(evs)-1]...) {
				return
			}
		}
		s.emit(llm.MessageDelta{StopReason: out.Stop, Usage: out.Usage, Container: out.Container}, llm.MessageStop{})
	}
}

// signalled yields the calls a model activity signals, as they come.
type signalled struct {
	*run
	id      string // the activity's
	ch      workflow.ReceiveChannel
	yield   func(llm.Event, error) bool
	opened  bool            // MessageStart went
	source  string          // the attempt whose calls were yielded
	done    map[string]bool // their ids
	stopped bool            // the agent stopped reading
}

// emit yields evs, after a MessageStart if none went yet.
func (s *signalled) emit(evs ...llm.Event) bool {
	if !s.opened {
		s.opened = true
		evs = append([]llm.Event{llm.MessageStart{}}, evs...)
	}
	for _, ev := range evs {
		if s.stopped || !s.yield(ev, nil) {
			s.stopped = true
			return false
		}
	}
	return true
}

// receive yields the calls signalled so far by this activity (by the
// attempt want, if set). A call from another attempt than the one whose
// calls were yielded ends the turn.
func (s *signalled) receive(want string) error {
	var sig toolUseSignal
	for s.ch.ReceiveAsync(&sig) {
		switch {
		case !strings.HasPrefix(sig.Source, s.id+"/"), want != "" && sig.Source != want && s.source == "":
			continue // an earlier activity's, or an earlier attempt's
		case s.source != "" && sig.Source != s.source:
			return errAttemptChanged
		}
		// What streamed before the call is shown before it: the batches
		// were signalled first, so they are in their channel if their
		// coroutine has not published them yet.
		s.drain()
		s.source = sig.Source
		s.done[sig.Use.ID] = true
		s.emit(llm.BlockEvents(sig.Pos, sig.Use)...)
	}
	return nil
}

// modelError turns the model activity's failure into the error the agent
// classifies: a prompt too long, or a failure after calls started, which
// the agent retries.
func modelError(err error) error {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Type() {
	case errPromptTooLong:
		var api llm.APIError
		if ae.HasDetails() && ae.Details(&api) == nil {
			return &api // for MarkOverflow to read
		}
		return fmt.Errorf("%w: %w", llm.ErrPromptTooLong, err)
	case errAfterCalls:
		return fmt.Errorf("durable: the model turn failed after its calls started: %w (%w)", llm.ErrIncompleteStream, err)
	}
	return err
}
