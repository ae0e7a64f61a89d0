package llm

import (
	"context"
	"errors"
	"slices"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentloop/agentloop/internal/telemetry"
)

// Telemetry says where traces and metrics go, by OpenTelemetry's GenAI
// semantic conventions: a "chat {model}" span and the gen_ai.client.*
// metrics for each attempt of a model call (package agent adds the spans
// around them). The zero value uses the global providers.
type Telemetry struct {
	// TracerProvider makes the spans. Nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// CaptureContent records the system prompt, messages, tool names,
	// arguments and results on the spans. Default false: content is large
	// and often sensitive. Credentials are never recorded.
	CaptureContent bool
}

// An attempt is the telemetry of one attempt of a model call; asm
// assembles the output when content is recorded.
type attempt struct {
	*telemetry.Chat
	asm *Assembler
}

// startChat starts the telemetry of an attempt at req, whose JSON is body.
func startChat(in *telemetry.Instruments, ctx context.Context, req Request, b body) *attempt {
	ch := in.StartChat(ctx, telemetry.ChatRequest{Model: req.Model, MaxTokens: req.maxTokens(), Body: func() []byte { return slices.Concat(b...) }})
	a := &attempt{Chat: ch}
	if in.Capture && ch.Active() {
		a.asm = new(Assembler)
	}
	return a
}

// observe returns yield, wrapped to watch the events if anything records.
func (a *attempt) observe(yield func(Event, error) bool) func(Event, error) bool {
	if !a.Active() {
		return yield
	}
	return func(ev Event, err error) bool {
		a.Chunk()
		switch ev := ev.(type) {
		case MessageStart:
			a.Response(ev.ID, ev.Model)
			a.Usage(ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.CacheReadInputTokens, ev.Usage.CacheCreationInputTokens)
		case MessageDelta:
			a.Finish(string(ev.StopReason))
			a.Usage(ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.CacheReadInputTokens, ev.Usage.CacheCreationInputTokens)
		}
		if a.asm != nil {
			a.asm.Add(ev)
		}
		return yield(ev, err)
	}
}

// end ends the attempt. A consumer that stopped reading is no failure.
func (a *attempt) end(err error) {
	if err == errStop {
		err = nil
	}
	a.End(err, ErrorType(err), func() []byte {
		if a.asm == nil || !a.asm.turn.Done {
			return nil
		}
		out, _ := marshal(a.asm.Turn().Message)
		return out
	})
}

// ErrorType names the class of err, low in cardinality, for OpenTelemetry's
// error.type: an [*APIError]'s type (such as "overloaded_error"), "timeout"
// for an idle stream or a passed deadline, "cancelled", "connection_error",
// "incomplete_stream", "malformed_event", or "_OTHER".
func ErrorType(err error) string {
	ae, isAPI := errors.AsType[*APIError](err)
	switch {
	case isAPI && ae.Type != "":
		return ae.Type
	case errors.Is(err, errIdleTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, errConnection):
		return "connection_error"
	case errors.Is(err, ErrIncompleteStream):
		return "incomplete_stream"
	case errors.Is(err, errMalformedEvent):
		return "malformed_event"
	}
	return "_OTHER"
}
