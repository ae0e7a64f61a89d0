package agent

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentloop/agentloop/internal/telemetry"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// This file traces a run by the GenAI semantic conventions: an
// invoke_agent span per run, an execute_tool span per tool call run, and a
// compact_history span around a compaction, whose summary call, made by an
// *llm.Client, is a chat span inside it. Retries, discarded turns and
// repairs of the history are events on the run's span.

// tracer returns the agent's tracer.
func (a *Agent) tracer() trace.Tracer {
	tp := a.cfg.Telemetry.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer("github.com/agentloop/agentloop/agent")
}

// startRun starts the span of a run on input.
func (a *Agent) startRun(ctx context.Context, input string) (context.Context, trace.Span) {
	name, kvs := "invoke_agent", []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIProviderNameAnthropic, semconv.GenAIRequestModel(a.cfg.ModelName)}
	if a.cfg.Name != "" {
		name += " " + a.cfg.Name
		kvs = append(kvs, semconv.GenAIAgentName(a.cfg.Name))
	}
	ctx, span := a.tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kvs...))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(semconv.GenAIRequestMaxTokens(a.cfg.MaxTokens))
	if a.cfg.ConversationID != "" {
		span.SetAttributes(semconv.GenAIConversationID(a.cfg.ConversationID))
	}
	if a.cfg.Telemetry.CaptureContent {
		span.SetAttributes(attribute.KeyValue{Key: semconv.GenAIInputMessagesKey,
			Value: attribute.SliceValue(telemetry.Message(string(llm.User), "", telemetry.TextPart(input)))})
		if a.cfg.System != "" {
			span.SetAttributes(attribute.KeyValue{Key: semconv.GenAISystemInstructionsKey,
				Value: attribute.SliceValue(telemetry.TextPart(a.cfg.System))})
		}
	}
	return ctx, span
}

// endRun sets the outcome of a run on its span; the caller ends it.
func (a *Agent) endRun(span trace.Span, res Result, err error) {
	if !span.IsRecording() {
		return
	}
	u := res.Usage
	span.SetAttributes(telemetry.State.String(string(res.State)), telemetry.Iterations.Int(res.Iterations),
		semconv.GenAIUsageInputTokens(int(u.Context()-u.OutputTokens)), semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadInputTokens)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheCreationInputTokens)))
	if a.cfg.Telemetry.CaptureContent && res.Text != "" {
		span.SetAttributes(attribute.KeyValue{Key: semconv.GenAIOutputMessagesKey,
			Value: attribute.SliceValue(telemetry.Message(string(llm.Assistant), "", telemetry.TextPart(res.Text)))})
	}
	if err != nil {
		failed(span, llm.ErrorType(err), err.Error())
	}
}

// failed marks span as failed with an error.type and a description.
func failed(span trace.Span, typ, desc string) {
	span.SetAttributes(semconv.ErrorTypeKey.String(typ))
	span.SetStatus(codes.Error, desc)
}

// startTool starts the span of a call that is about to run.
func (r *run) startTool(ctx context.Context, call tool.Call) (context.Context, trace.Span) {
	ctx, span := r.tracer().Start(ctx, "execute_tool "+call.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameExecuteTool))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIToolName(call.Name), semconv.GenAIToolCallID(call.ID), semconv.GenAIToolType("function"))
		if r.cfg.Telemetry.CaptureContent {
			span.SetAttributes(attribute.KeyValue{Key: semconv.GenAIToolCallArgumentsKey, Value: telemetry.JSON(call.Input)})
		}
	}
	return ctx, span
}

// endTool ends the span of a call with its result. The result's text is
// content, so a failure's status says only that the tool failed.
func (r *run) endTool(span trace.Span, res llm.ToolResult) {
	switch {
	case !span.IsRecording():
	case res.IsError:
		failed(span, "tool_error", "the tool reported an error")
	case r.cfg.Telemetry.CaptureContent:
		span.SetAttributes(attribute.KeyValue{Key: semconv.GenAIToolCallResultKey, Value: telemetry.Text(llm.TextOf(res.Content))})
	}
	span.End()
}

// traceNotRun records on the run's span a call the loop answered itself.
func (r *run) traceNotRun(p *pending) {
	if span := trace.SpanFromContext(r.ctx); p.took == 0 && span.IsRecording() {
		span.AddEvent(telemetry.EventNotRun, trace.WithAttributes(semconv.GenAIToolName(p.call.Name), semconv.GenAIToolCallID(p.call.ID)))
	}
}

// traceRetry records on the run's span that a failed turn is asked for
// again, and whether its partial output was thrown away.
func (r *run) traceRetry(attempt int, err error, discard bool) {
	span := trace.SpanFromContext(r.ctx)
	if !span.IsRecording() {
		return
	}
	kvs := trace.WithAttributes(telemetry.Attempt.Int(attempt), semconv.ErrorTypeKey.String(llm.ErrorType(err)))
	if discard {
		span.AddEvent(telemetry.EventDiscarded, kvs)
	}
	span.AddEvent(telemetry.EventRetry, kvs)
}

// traceRepair records on the run's span what a repair of the history fixed.
func (r *run) traceRepair(fixes []string) {
	if span := trace.SpanFromContext(r.ctx); len(fixes) > 0 && span.IsRecording() {
		span.AddEvent(telemetry.EventRepaired, trace.WithAttributes(telemetry.Repairs.StringSlice(fixes)))
	}
}

// startCompact starts the span of a compaction.
func (r *run) startCompact() (context.Context, trace.Span) {
	ctx, span := r.tracer().Start(r.ctx, "compact_history", trace.WithSpanKind(trace.SpanKindInternal))
	if r.cfg.ConversationID != "" && span.IsRecording() {
		span.SetAttributes(semconv.GenAIConversationID(r.cfg.ConversationID))
	}
	return ctx, span
}

// endCompact ends the span of compaction c.
func (r *run) endCompact(span trace.Span, c memory.Compaction, err error) {
	if span.IsRecording() {
		span.SetAttributes(telemetry.TokensBefore.Int(c.Before), telemetry.TokensAfter.Int(c.After), telemetry.Steps.StringSlice(c.Steps))
		switch {
		case errors.Is(err, memory.ErrCannotCompact):
			failed(span, "cannot_compact", err.Error())
		case err != nil:
			failed(span, llm.ErrorType(err), err.Error())
		}
	}
	span.End()
}
