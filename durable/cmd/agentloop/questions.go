package main

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
)

// questions are the calls of a run asked about on the terminal. The run
// goes on while they are open, and the stream shows when someone else
// decided a call: then its question is withdrawn, and the answer shows.
type questions struct {
	ask    func(context.Context, llm.ToolUse) error // cli.Prompt.Ask
	decide func(context.Context, durable.Decision) error
	note   func(string)
	open   map[string]*question // by call ID
}

// A question is one call's, asked in a goroutine of its own.
type question struct {
	call     llm.ToolUse
	cancel   context.CancelFunc
	done     chan struct{}
	answered bool // set before done closes
}

// start asks about call, and sends the answer to the run.
func (qs *questions) start(ctx context.Context, call llm.ToolUse) {
	qctx, cancel := context.WithCancel(ctx)
	q := &question{call: call, cancel: cancel, done: make(chan struct{})}
	qs.open[call.ID] = q
	go func() {
		defer close(q.done)
		err := qs.ask(qctx, call)
		if qctx.Err() != nil {
			return // withdrawn, or the client stops
		}
		q.answered = true
		d := durable.Decision{CallID: call.ID, Allow: err == nil}
		if err != nil {
			d.Reason = err.Error()
		}
		// Someone may have decided it a moment earlier: then the run
		// refuses this answer, and the stream shows theirs.
		if err := qs.decide(ctx, d); err != nil && ctx.Err() == nil {
			qs.note(fmt.Sprintf("answering %s: %v", call.ID, err))
		}
	}()
}

// follow withdraws the question of a call that ev shows decided: a call
// that starts, or one that is done (denied) without starting.
func (qs *questions) follow(ev durable.Event) {
	switch {
	case ev.ToolCall != nil && !ev.Waiting:
		qs.withdraw(ev.ToolCall.ID, "approved")
	case ev.ToolDone != nil:
		qs.withdraw(ev.ToolDone.ToolUseID, "decided")
	}
}

// withdraw ends the question about the call id, if one is open, and notes
// that the call was decided elsewhere when nobody had answered it here.
func (qs *questions) withdraw(id, how string) {
	q := qs.open[id]
	if q == nil {
		return
	}
	delete(qs.open, id)
	q.cancel()
	<-q.done
	if !q.answered && how != "" {
		qs.note(fmt.Sprintf("%s %s was %s elsewhere", q.call.Name, id, how))
	}
}

// close withdraws every question still open, when the run ends or the
// client stops.
func (qs *questions) close() {
	for id := range qs.open {
		qs.withdraw(id, "")
	}
}
