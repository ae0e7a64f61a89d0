package telemetry

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

var _ agent.Observer = (*Telemetry)(nil)

// A run is what the spans of one run share: the calls its Runtime
// started, so that a call the loop answered itself is told apart, and its
// conversation, for its compactions.
type run struct {
	conversation string
	mu           sync.Mutex
	started      map[string]bool // by call id
}

type runKey struct{}

// Run wraps a's run in its "invoke_agent {Name}" span, which its model
// calls, tool calls and compactions nest under, and records on it the
// loop's retries, repairs and calls not run, and the run's outcome.
func (t *Telemetry) Run(ctx context.Context, a *agent.Agent, input string, start func(context.Context) iter.Seq2[agent.Event, error]) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		cfg := a.Config()
		ctx, span := t.startAgent(ctx, cfg, input)
		defer span.End()
		r := &run{conversation: cfg.ConversationID, started: make(map[string]bool)}
		ctx = context.WithValue(ctx, runKey{}, r)
		for ev, err := range start(ctx) {
			switch ev := ev.(type) {
			case agent.Retry:
				retry(ctx, ev.Attempt, 0, llm.ErrorType(ev.Err), ev.Discard)
			case agent.Repaired:
				event(ctx, EventRepaired, Repairs.StringSlice(ev.Fixes))
			case agent.ToolDone:
				r.mu.Lock()
				ran := r.started[ev.ID]
				r.mu.Unlock()
				if !ran {
					event(ctx, EventNotRun, semconv.GenAIToolName(ev.Name), semconv.GenAIToolCallID(ev.ID))
				}
			case agent.Result:
				t.endAgent(span, ev, err)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// startAgent starts the invoke_agent span of a run of input.
func (t *Telemetry) startAgent(ctx context.Context, cfg agent.Config, input string) (context.Context, trace.Span) {
	hc := cfg.History.Config()
	name, kvs := "invoke_agent", []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIProviderNameAnthropic, semconv.GenAIRequestModel(hc.Model)}
	if cfg.Name != "" {
		name += " " + cfg.Name
		kvs = append(kvs, semconv.GenAIAgentName(cfg.Name))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kvs...))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(semconv.GenAIRequestMaxTokens(hc.MaxTokens))
	if cfg.ConversationID != "" {
		span.SetAttributes(semconv.GenAIConversationID(cfg.ConversationID))
	}
	if t.capture {
		setContent(span, semconv.GenAIInputMessagesKey, attribute.SliceValue(message("user", "", textPart(input))))
		if cfg.System != "" {
			setContent(span, semconv.GenAISystemInstructionsKey, attribute.SliceValue(textPart(cfg.System)))
		}
	}
	return ctx, span
}

// endAgent sets the outcome of a run on its span; the caller ends it.
func (t *Telemetry) endAgent(span trace.Span, res agent.Result, err error) {
	if !span.IsRecording() {
		return
	}
	u := res.Usage
	span.SetAttributes(State.String(string(res.State)), Iterations.Int(res.Iterations))
	span.SetAttributes(usage(u.Context()-u.OutputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)...)
	if t.capture && res.Text != "" {
		setContent(span, semconv.GenAIOutputMessagesKey, attribute.SliceValue(message("assistant", "", textPart(res.Text))))
	}
	if err != nil {
		failed(span, llm.ErrorType(err), err.Error())
	}
}

// Runtime wraps rt so that each call runs in its execute_tool span, which
// ends when its result is waited for.
func (t *Telemetry) Runtime(rt agent.Runtime) agent.Runtime { return tools{rt, t} }

type tools struct {
	agent.Runtime
	t *Telemetry
}

func (rt tools) Start(ctx context.Context, call llm.ToolUse) func() (llm.ToolResult, time.Duration) {
	if r, ok := ctx.Value(runKey{}).(*run); ok {
		r.mu.Lock()
		r.started[call.ID] = true
		r.mu.Unlock()
	}
	ctx, span := rt.t.startTool(ctx, call)
	wait := rt.Runtime.Start(ctx, call) // now: the call starts as the model streams
	return func() (llm.ToolResult, time.Duration) {
		res, took := wait()
		rt.t.endTool(span, res)
		return res, took
	}
}

// Tool runs call by run in its execute_tool span, for a program that runs
// tool calls itself, as package durable's activities do.
func (t *Telemetry) Tool(ctx context.Context, call llm.ToolUse, run func(context.Context) llm.ToolResult) llm.ToolResult {
	ctx, span := t.startTool(ctx, call)
	res := run(ctx)
	t.endTool(span, res)
	return res
}

// startTool starts the execute_tool span of a call about to run.
func (t *Telemetry) startTool(ctx context.Context, call llm.ToolUse) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, "execute_tool "+call.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameExecuteTool))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIToolName(call.Name), semconv.GenAIToolCallID(call.ID), semconv.GenAIToolType("function"))
		if t.capture {
			setContent(span, semconv.GenAIToolCallArgumentsKey, jsonValue(call.Input))
		}
	}
	return ctx, span
}

// endTool ends the span of a call with its result. The result is content,
// so a failure's status says only that the tool failed.
func (t *Telemetry) endTool(span trace.Span, res llm.ToolResult) {
	switch {
	case !span.IsRecording():
	case res.IsError:
		failed(span, "tool_error", "the tool reported an error")
	case t.capture:
		setContent(span, semconv.GenAIToolCallResultKey, textValue(llm.TextOf(res.Content)))
	}
	span.End()
}

// Compact wraps a compaction in its compact_history span, which the
// summary's model calls nest under.
func (t *Telemetry) Compact(ctx context.Context, compact func(context.Context) (memory.Compaction, error)) (memory.Compaction, error) {
	ctx, span := t.tracer.Start(ctx, "compact_history", trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	if r, ok := ctx.Value(runKey{}).(*run); ok && r.conversation != "" && span.IsRecording() {
		span.SetAttributes(semconv.GenAIConversationID(r.conversation))
	}
	c, err := compact(ctx)
	if span.IsRecording() {
		span.SetAttributes(TokensBefore.Int(c.Before), TokensAfter.Int(c.After), Steps.StringSlice(c.Steps))
		if typ := llm.ErrorType(err); errors.Is(err, memory.ErrCannotCompact) {
			failed(span, "cannot_compact", err.Error())
		} else if err != nil {
			failed(span, typ, err.Error())
		}
	}
	return c, err
}
