package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/internal/cli"
	"github.com/agentloop/agentloop/llm"
)

// mode is the durable mode of the command, on the durable package.
type mode struct{}

// dial connects to t's server with the durable data converter and the
// tracing interceptor, which a worker made from the client inherits.
func dial(t cli.Temporal) (client.Client, error) {
	tracing, err := durable.Tracing(t.Telemetry.TracerProvider)
	if err != nil {
		return nil, err
	}
	logger := t.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := client.Dial(client.Options{HostPort: t.HostPort, Namespace: t.Namespace, DataConverter: dataConverter(t),
		Interceptors: []interceptor.ClientInterceptor{tracing}, Logger: tlog.NewStructuredLogger(logger)})
	if _, down := errors.AsType[*serviceerror.Unavailable](err); down {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w; is a server running there? "+
			"agentloop server starts one for development", t.HostPort, err)
	} else if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w", t.HostPort, err)
	}
	return c, nil
}

// dataConverter is the data converter of the workers and clients, with the
// blob store of --blobs, if any.
func dataConverter(t cli.Temporal) converter.DataConverter {
	var store durable.BlobStore
	if t.Blobs != "" {
		store = durable.DirStore(t.Blobs)
	}
	return durable.DataConverter(store)
}

// Serve runs a worker until ctx is done.
func (mode) Serve(ctx context.Context, t cli.Temporal, w cli.Worker) error {
	c, err := dial(t)
	if err != nil {
		return err
	}
	defer c.Close()
	wk := worker.New(c, t.TaskQueue, worker.Options{})
	var store durable.BlobStore
	if t.Blobs != "" {
		store = durable.DirStore(t.Blobs)
	}
	if err := durable.Register(wk, durable.Config{Model: w.Model, Registry: w.Registry, Approve: w.Approve,
		System: w.System, AtMostOnce: w.AtMostOnce, Agents: w.Agents, Telemetry: t.Telemetry, BlobStore: store}); err != nil {
		return err
	}
	stop := make(chan any)
	go func() { <-ctx.Done(); close(stop) }()
	return wk.Run(stop)
}

// Decide answers a call that waits for approval.
func (mode) Decide(ctx context.Context, t cli.Temporal, session, callID string, allow bool, reason string) error {
	c, err := dial(t)
	if err != nil {
		return err
	}
	defer c.Close()
	return durable.Approve(ctx, c, session, durable.Decision{CallID: callID, Allow: allow, Reason: reason})
}

// Run starts the prompt's run, or continues its session, and yields the
// run's events as package agent's.
func (mode) Run(ctx context.Context, t cli.Temporal, p cli.Prompt) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		res, err := run(ctx, t, p, yield)
		yield(res, err)
	}
}

// run runs the prompt, yielding its events but the last, and returns how
// it ended.
func run(ctx context.Context, t cli.Temporal, p cli.Prompt, yield func(agent.Event, error) bool) (agent.Result, error) {
	failed := agent.Result{State: agent.Failed}
	c, err := dial(t)
	if err != nil {
		return failed, err
	}
	defer c.Close()
	in := durable.Input{Prompt: p.Prompt, Model: p.Model, MaxTokens: p.MaxTokens, MaxIterations: p.MaxIterations,
		MaxDuration: p.MaxDuration, MaxTotalTokens: p.MaxTotalTokens, MaxCostUSD: p.MaxCostUSD, ContextLimit: p.ContextLimit, System: p.System,
		AppendSystem: p.AppendSystem, Thinking: p.Thinking, Effort: p.Effort, Compaction: p.Compaction, Approve: p.Approve, Stream: true,
		Schema: p.Schema}
	id := p.Session
	if id == "" {
		id = newID()
	} else if prev, err := durable.Conversation(ctx, c, dataConverter(t), id); err == nil {
		in.History = prev
	} else if _, none := errors.AsType[*serviceerror.NotFound](err); !none {
		return failed, fmt.Errorf("session %s: %w", id, err)
	}
	// A session holds one run at a time: a second prompt while one runs
	// fails rather than interleaving.
	wr, err := c.ExecuteWorkflow(context.WithoutCancel(ctx), client.StartWorkflowOptions{
		ID: id, TaskQueue: t.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, durable.WorkflowName, in)
	if _, busy := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); busy {
		return failed, fmt.Errorf("session %s is running a prompt already", id)
	} else if err != nil {
		return failed, err
	}
	if p.Started != nil {
		p.Started(id)
	}
	note := p.Note
	if note == nil {
		note = func(string) {}
	}
	// Asked on the terminal, answered in the workflow, while the stream
	// goes on: it shows when a call is decided, here or elsewhere.
	qs := &questions{ask: p.Ask, note: note, open: map[string]*question{},
		decide: func(ctx context.Context, d durable.Decision) error { return durable.Approve(ctx, c, id, d) }}
	defer qs.close()
	names := map[string]string{} // call id → tool name, for ToolDone
	var shown strings.Builder    // the latest turn's answer text, as shown
	ended := false               // the stream's Done came
	for ev, err := range durable.Stream(ctx, c, id) {
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return failed, err
		}
		if ended = ev.Done != "" && ev.ParentID == ""; ended {
			break
		}
		if ev.ParentID == "" { // a sub-run's text is not the answer
			if ev.Turn > 0 || ev.Discard {
				shown.Reset()
			}
			shown.WriteString(ev.Text)
		}
		qs.follow(ev)
		if e := agentEvent(ev, names, id, note); e != nil && !yield(e, nil) {
			return failed, context.Canceled
		}
		if ev.Waiting && p.Ask != nil {
			qs.start(ctx, *ev.ToolCall)
		}
	}
	qs.close()
	if ctx.Err() != nil {
		if p.Detach {
			return agent.Result{State: agent.Cancelled}, nil
		}
		if err := c.CancelWorkflow(context.WithoutCancel(ctx), id, wr.GetRunID()); err != nil {
			return failed, err
		}
	}
	var res durable.Result
	if err := wr.Get(context.WithoutCancel(ctx), &res); err != nil {
		// The run's own error, without Temporal's wrapping of it.
		if ae, ok := errors.AsType[*temporal.ApplicationError](err); ok {
			err = errors.New(ae.Message())
		}
		return failed, err
	}
	if !ended && ctx.Err() == nil {
		// The run ended, and went, before the client read its last
		// events: its answer still shows.
		rest, ok := strings.CutPrefix(res.Text, shown.String())
		if !ok {
			rest = res.Text
		}
		if rest != "" && !yield(agent.TextDelta{Text: rest}, nil) {
			return failed, context.Canceled
		}
	}
	return res.Result, nil
}

// agentEvent is ev as package agent's event, or nil for one it has none
// for: a call that waits for approval is a note. A sub-run's event is an
// agent.Nested, its Done the sub-run's Result.
func agentEvent(ev durable.Event, names map[string]string, session string, note func(string)) agent.Event {
	switch {
	case ev.ParentID != "":
		inner := ev
		inner.ParentID = ""
		if e := agentEvent(inner, names, session, note); e != nil {
			return agent.Nested{ParentID: ev.ParentID, Agent: ev.Agent, Event: e}
		}
	case ev.Done != "": // a sub-run's: the run's own ends the stream first
		if ev.Result != nil {
			return *ev.Result
		}
		return agent.Result{State: ev.Done} // from a worker that predates Result
	case ev.Turn > 0:
		return agent.TurnStart{Iteration: ev.Turn}
	case ev.Text != "":
		return agent.TextDelta{Text: ev.Text}
	case ev.Thinking != "":
		return agent.ThinkingDelta{Thinking: ev.Thinking}
	case ev.Compacted != nil:
		return agent.Compacted{Compaction: *ev.Compacted}
	case ev.Discard:
		// An event a worker without Attempt recorded was a retry all the same.
		return agent.Retry{Attempt: max(ev.Attempt, 2), Error: "the previous attempt failed", Discard: true}
	case ev.Usage != nil:
		return *ev.Usage
	case ev.ToolCall != nil && ev.Waiting:
		if note != nil { // also when asked on the terminal: it may be answered elsewhere
			note(fmt.Sprintf("%s %s waits for approval: agentloop approve (or deny) --session %s %s",
				ev.ToolCall.Name, ev.ToolCall.Input, session, ev.ToolCall.ID))
		}
	case ev.ToolCall != nil:
		names[ev.ToolCall.ID] = ev.ToolCall.Name
		return agent.ToolCall{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, Input: ev.ToolCall.Input}
	case ev.ToolDone != nil:
		return agent.ToolDone{ID: ev.ToolDone.ToolUseID, Name: names[ev.ToolDone.ToolUseID],
			Content: llm.TextOf(ev.ToolDone.Content), IsError: ev.ToolDone.IsError, Duration: ev.Duration}
	}
	return nil
}

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "agentloop-" + hex.EncodeToString(b)
}
