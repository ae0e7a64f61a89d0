package llm

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentloop/agentloop/internal/telemetry"
)

// Telemetry says where traces and metrics go. They follow OpenTelemetry's
// GenAI semantic conventions: here, a "chat {model}" span and the
// gen_ai.client.* metrics for each attempt of a model call; in package
// agent, the invoke_agent and execute_tool spans around them. The zero
// value uses the global providers, which record nothing until a program
// installs an SDK, and then cost next to nothing.
type Telemetry struct {
	// TracerProvider makes the spans. Nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// CaptureContent records content on the spans: the system prompt, the
	// messages sent and received, the tool names offered, and tool
	// arguments and results. Default false, since content is large and
	// often sensitive. Credentials are never recorded.
	CaptureContent bool
}

// Bucket boundaries the conventions give for the client metrics.
var (
	secondsBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets   = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// instruments are a Client's instruments.
type instruments struct {
	tracer   trace.Tracer
	capture  bool
	server   []attribute.KeyValue // server.address and server.port
	duration genaiconv.ClientOperationDuration
	tokens   genaiconv.ClientTokenUsage
	ttfc     genaiconv.ClientOperationTimeToFirstChunk
}

func newTelemetry(t Telemetry, baseURL string) *instruments {
	tp, mp := t.TracerProvider, t.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	const scope = "github.com/agentloop/agentloop/llm"
	m := mp.Meter(scope)
	tel := &instruments{tracer: tp.Tracer(scope), capture: t.CaptureContent}
	// A failed instrument comes back a no-op: telemetry never fails a call.
	tel.duration, _ = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(secondsBuckets...))
	tel.tokens, _ = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	tel.ttfc, _ = genaiconv.NewClientOperationTimeToFirstChunk(m, metric.WithExplicitBucketBoundaries(secondsBuckets...))
	host, port := "api.anthropic.com", 443
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		host, port = u.Hostname(), 443
		if p, err := strconv.Atoi(u.Port()); err == nil {
			port = p
		} else if u.Scheme == "http" {
			port = 80
		}
	}
	tel.server = []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(port)}
	return tel
}

// An attempt observes one attempt of a model call: its span, and what the
// metrics and the span's closing attributes need from its events.
type attempt struct {
	t       *instruments
	ctx     context.Context // carries the span
	span    trace.Span
	metrics bool // some metric instrument is enabled
	req     Request
	start   time.Time
	first   time.Duration // until the first event; 0 before it
	id      string
	model   string
	usage   *Usage
	stop    StopReason
	asm     *Assembler // the output, when content is captured
}

// startChat starts the span of one attempt at req.
func (t *instruments) startChat(ctx context.Context, req Request) *attempt {
	kvs := append(make([]attribute.KeyValue, 0, 5), semconv.GenAIOperationNameChat, semconv.GenAIProviderNameAnthropic,
		semconv.GenAIRequestModel(req.Model))
	kvs = append(kvs, t.server...)
	ctx, span := t.tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kvs...))
	a := &attempt{t: t, ctx: ctx, span: span, req: req, start: time.Now(), metrics: t.duration.Enabled(ctx)}
	if !span.IsRecording() {
		return a
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	span.SetAttributes(semconv.GenAIRequestMaxTokens(maxTokens), semconv.GenAIRequestStream(true))
	if req.Temperature != nil {
		span.SetAttributes(semconv.GenAIRequestTemperature(*req.Temperature))
	}
	if len(req.StopSequences) > 0 {
		span.SetAttributes(semconv.GenAIRequestStopSequences(req.StopSequences...))
	}
	if t.capture {
		span.SetAttributes(attribute.KeyValue{Key: semconv.GenAIInputMessagesKey, Value: messagesValue(req.Messages)})
		if req.System != "" {
			span.SetAttributes(attribute.KeyValue{Key: semconv.GenAISystemInstructionsKey,
				Value: attribute.SliceValue(telemetry.TextPart(req.System))})
		}
		if len(req.Tools) > 0 {
			defs := make([]attribute.Value, len(req.Tools))
			for i, ts := range req.Tools {
				defs[i] = telemetry.Part("function", attribute.String("name", ts.Name))
			}
			span.SetAttributes(attribute.KeyValue{Key: semconv.GenAIToolDefinitionsKey, Value: attribute.SliceValue(defs...)})
		}
		a.asm = new(Assembler)
	}
	return a
}

// observe returns yield, wrapped to watch the events when anything records
// them.
func (a *attempt) observe(yield func(Event, error) bool) func(Event, error) bool {
	if !a.span.IsRecording() && !a.metrics {
		return yield
	}
	return func(ev Event, err error) bool {
		if a.first == 0 {
			a.first = max(time.Since(a.start), 1)
		}
		switch ev := ev.(type) {
		case MessageStart:
			a.id, a.model, a.usage = ev.ID, ev.Model, &ev.Usage
		case MessageDelta:
			a.stop, a.usage = ev.StopReason, &ev.Usage
		}
		if a.asm != nil {
			a.asm.Add(ev)
		}
		return yield(ev, err)
	}
}

// end ends the attempt with its outcome and records its metrics.
func (a *attempt) end(err error) {
	defer a.span.End()
	if !a.metrics && !a.span.IsRecording() {
		return
	}
	failed := err != nil && err != errStop // a consumer that stops reading is no failure
	kvs := append(make([]attribute.KeyValue, 0, 5), semconv.GenAIRequestModel(a.req.Model))
	if a.model != "" {
		kvs = append(kvs, semconv.GenAIResponseModel(a.model))
	}
	kvs = append(kvs, a.t.server...)
	if failed {
		kvs = append(kvs, semconv.ErrorTypeKey.String(ErrorType(err)))
	}
	if a.metrics {
		op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAnthropic
		a.t.duration.Record(a.ctx, time.Since(a.start).Seconds(), op, prov, kvs...)
		if a.first > 0 {
			a.t.ttfc.Record(a.ctx, a.first.Seconds(), op, prov, kvs...)
		}
		if u := a.usage; u != nil {
			a.t.tokens.Record(a.ctx, inputTokens(*u), op, prov, genaiconv.TokenTypeInput, kvs...)
			a.t.tokens.Record(a.ctx, u.OutputTokens, op, prov, genaiconv.TokenTypeOutput, kvs...)
		}
	}
	if span := a.span; span.IsRecording() {
		span.SetAttributes(kvs...)
		if a.id != "" {
			span.SetAttributes(semconv.GenAIResponseID(a.id))
		}
		if a.stop != "" {
			span.SetAttributes(semconv.GenAIResponseFinishReasons(string(a.stop)))
		}
		if u := a.usage; u != nil {
			span.SetAttributes(semconv.GenAIUsageInputTokens(int(inputTokens(*u))), semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
				semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadInputTokens)),
				semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheCreationInputTokens)))
		}
		if a.first > 0 {
			span.SetAttributes(semconv.GenAIResponseTimeToFirstChunk(a.first.Seconds()))
		}
		if a.asm != nil && a.asm.Done() {
			span.SetAttributes(attribute.KeyValue{Key: semconv.GenAIOutputMessagesKey,
				Value: attribute.SliceValue(messageValue(Assistant, a.asm.Message().Content, a.stop))})
		}
		if failed {
			span.SetStatus(codes.Error, err.Error())
		}
	}
}

// inputTokens is the conventions' Anthropic rule: the input counts every
// input token, read from the cache or written to it too.
func inputTokens(u Usage) int64 {
	return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// retrying records on ctx's span that a call is sent again after err.
func retrying(ctx context.Context, attempt int, wait time.Duration, err error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(telemetry.EventRetry, trace.WithAttributes(telemetry.Attempt.Int(attempt),
			telemetry.RetryWait.Float64(wait.Seconds()), semconv.ErrorTypeKey.String(ErrorType(err))))
	}
}

// ErrorType names the class of err as OpenTelemetry's error.type attribute
// wants it, low in cardinality: the API's error type for an [*APIError]
// (such as "overloaded_error" or "rate_limit_error"), "timeout" for
// [ErrIdleTimeout] or a passed deadline, "cancelled", "connection_error",
// "incomplete_stream", "malformed_event", and "_OTHER" for the rest.
func ErrorType(err error) string {
	ae, isAPI := errors.AsType[*APIError](err)
	switch {
	case isAPI && ae.Type != "":
		return ae.Type
	case errors.Is(err, ErrIdleTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, ErrConnection):
		return "connection_error"
	case errors.Is(err, ErrIncompleteStream):
		return "incomplete_stream"
	case errors.Is(err, ErrMalformedEvent):
		return "malformed_event"
	}
	return string(genaiconv.ErrorTypeOther)
}

// messagesValue is msgs in the conventions' input messages schema.
func messagesValue(msgs []Message) attribute.Value {
	vs := make([]attribute.Value, len(msgs))
	for i, m := range msgs {
		vs[i] = messageValue(m.Role, m.Content, "")
	}
	return attribute.SliceValue(vs...)
}

// messageValue is one message of the conventions' schemas; finish is set
// only on output messages.
func messageValue(role Role, content []Block, finish StopReason) attribute.Value {
	parts := make([]attribute.Value, len(content))
	for i, b := range content {
		parts[i] = partValue(b)
	}
	return telemetry.Message(string(role), string(finish), parts...)
}

// partValue is one block as a part of the conventions' schemas. Blocks the
// schemas have no part for keep only their type.
func partValue(b Block) attribute.Value {
	switch b := b.(type) {
	case Text:
		return telemetry.TextPart(b.Text)
	case Thinking:
		return telemetry.Part("reasoning", attribute.String("content", b.Thinking))
	case ToolUse:
		return telemetry.Part("tool_call", attribute.String("id", b.ID), attribute.String("name", b.Name),
			attribute.KeyValue{Key: "arguments", Value: telemetry.JSON(b.Input)})
	case ToolResult:
		return telemetry.Part("tool_call_response", attribute.String("id", b.ToolUseID),
			attribute.KeyValue{Key: "response", Value: telemetry.Text(TextOf(b.Content))})
	case Image:
		return telemetry.Part("blob", attribute.String("modality", "image"), attribute.String("mime_type", b.MediaType),
			attribute.String("content", b.Data))
	}
	return telemetry.Part(b.BlockType())
}
