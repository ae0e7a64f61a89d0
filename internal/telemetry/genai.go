package telemetry

import (
	"cmp"
	"context"
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
)

// Bucket boundaries the conventions give for the client metrics.
var (
	SecondsBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	TokenBuckets   = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// Instruments make one package's spans and metrics.
type Instruments struct {
	Tracer   trace.Tracer
	Capture  bool                 // record content
	server   []attribute.KeyValue // server.address and server.port
	duration genaiconv.ClientOperationDuration
	tokens   genaiconv.ClientTokenUsage
	ttfc     genaiconv.ClientOperationTimeToFirstChunk
}

// New returns the instruments of the package scope, from tp and mp or, when
// nil, the global providers. baseURL is the API's, for server.address and
// server.port; empty means the public API.
func New(scope string, tp trace.TracerProvider, mp metric.MeterProvider, capture bool, baseURL string) *Instruments {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	in := &Instruments{Tracer: tp.Tracer(scope), Capture: capture}
	// A failed instrument comes back a no-op: telemetry never fails a call.
	in.duration, _ = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(SecondsBuckets...))
	in.tokens, _ = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(TokenBuckets...))
	in.ttfc, _ = genaiconv.NewClientOperationTimeToFirstChunk(m, metric.WithExplicitBucketBoundaries(SecondsBuckets...))
	host, port := "api.anthropic.com", 443
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
		if p, err := strconv.Atoi(u.Port()); err == nil {
			port = p
		} else if u.Scheme == "http" {
			port = 80
		}
	}
	in.server = []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(port)}
	return in
}

// Spans returns instruments that make only spans, from tp or, when nil,
// the global provider.
func Spans(scope string, tp trace.TracerProvider, capture bool) *Instruments {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Instruments{Tracer: tp.Tracer(scope), Capture: capture}
}

// A ChatRequest is what the chat span records of a request.
type ChatRequest struct {
	Model     string
	MaxTokens int
	// Body returns the request's JSON, whose system prompt, tool names and
	// messages are recorded when content is; only then is it called, since
	// the JSON may have to be joined from parts (megabytes).
	Body func() []byte
}

// A Chat is one attempt of a model call: its "chat {model}" span, and what
// the metrics and the span's closing attributes need from its response.
type Chat struct {
	Ctx     context.Context // carries the span
	in      *Instruments
	span    trace.Span
	metrics bool // some metric instrument is enabled
	model   string
	start   time.Time
	first   time.Duration // until the first chunk; 0 before it
	id      string
	rmodel  string
	usage   []int64 // input, output, cache read, cache creation; nil until known
	finish  string
}

// StartChat starts the span of an attempt at r.
func (in *Instruments) StartChat(ctx context.Context, r ChatRequest) *Chat {
	kvs := append(make([]attribute.KeyValue, 0, 5), semconv.GenAIOperationNameChat, semconv.GenAIProviderNameAnthropic,
		semconv.GenAIRequestModel(r.Model))
	kvs = append(kvs, in.server...)
	ctx, span := in.Tracer.Start(ctx, "chat "+r.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kvs...))
	c := &Chat{Ctx: ctx, in: in, span: span, model: r.Model, start: time.Now(), metrics: in.duration.Enabled(ctx)}
	if !span.IsRecording() {
		return c
	}
	span.SetAttributes(semconv.GenAIRequestMaxTokens(r.MaxTokens), semconv.GenAIRequestStream(true))
	var body struct {
		System   wireContent   `json:"system"`
		Messages []wireMessage `json:"messages"`
		Tools    []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if in.Capture && r.Body != nil && decode(r.Body(), &body) {
		msgs := make([]attribute.Value, len(body.Messages))
		for i, m := range body.Messages {
			msgs[i] = m.value("")
		}
		setContent(span, semconv.GenAIInputMessagesKey, attribute.SliceValue(msgs...))
		if len(body.System) > 0 {
			setContent(span, semconv.GenAISystemInstructionsKey, attribute.SliceValue(body.System.parts()...))
		}
		if len(body.Tools) > 0 {
			defs := make([]attribute.Value, len(body.Tools))
			for i, t := range body.Tools {
				defs[i] = part("function", attribute.String("name", t.Name))
			}
			setContent(span, semconv.GenAIToolDefinitionsKey, attribute.SliceValue(defs...))
		}
	}
	return c
}

func setContent(span trace.Span, k attribute.Key, v attribute.Value) {
	if v.Type() != attribute.EMPTY {
		span.SetAttributes(attribute.KeyValue{Key: k, Value: v})
	}
}

// Active reports whether anything records the attempt.
func (c *Chat) Active() bool { return c.metrics || c.span.IsRecording() }

// Chunk records a chunk of the response: its first sets the time to first
// chunk.
func (c *Chat) Chunk() {
	if c.first == 0 {
		c.first = max(time.Since(c.start), 1)
	}
}

// Response records the response's id and model.
func (c *Chat) Response(id, model string) { c.id, c.rmodel = id, model }

// Usage records the response's usage so far, by the Anthropic rule: the
// input counts every input token, read from the cache or written to it
// too, and the cache counts are also given apart.
func (c *Chat) Usage(input, output, cacheRead, cacheCreation int64) {
	c.usage = append(c.usage[:0], input+cacheRead+cacheCreation, output, cacheRead, cacheCreation)
}

// Finish records the stop reason, if reason is one.
func (c *Chat) Finish(reason string) { c.finish = cmp.Or(reason, c.finish) }

// End ends the attempt, failed with err of type errType when err is not
// nil, and records its metrics. output, called only when content is
// recorded and err is nil, returns the output message's JSON, or nil.
func (c *Chat) End(err error, errType string, output func() []byte) {
	defer c.span.End()
	if !c.Active() {
		return
	}
	kvs := append(make([]attribute.KeyValue, 0, 5), semconv.GenAIRequestModel(c.model))
	if c.rmodel != "" {
		kvs = append(kvs, semconv.GenAIResponseModel(c.rmodel))
	}
	kvs = append(kvs, c.in.server...)
	if err != nil {
		kvs = append(kvs, ErrType(errType))
	}
	if c.metrics {
		op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAnthropic
		c.in.duration.Record(c.Ctx, time.Since(c.start).Seconds(), op, prov, kvs...)
		if c.first > 0 {
			c.in.ttfc.Record(c.Ctx, c.first.Seconds(), op, prov, kvs...)
		}
		if c.usage != nil {
			c.in.tokens.Record(c.Ctx, c.usage[0], op, prov, genaiconv.TokenTypeInput, kvs...)
			c.in.tokens.Record(c.Ctx, c.usage[1], op, prov, genaiconv.TokenTypeOutput, kvs...)
		}
	}
	span := c.span
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(kvs...)
	if c.id != "" {
		span.SetAttributes(semconv.GenAIResponseID(c.id))
	}
	if c.finish != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(c.finish))
	}
	if u := c.usage; u != nil {
		span.SetAttributes(usage(u[0], u[1], u[2], u[3])...)
	}
	if c.first > 0 {
		span.SetAttributes(semconv.GenAIResponseTimeToFirstChunk(c.first.Seconds()))
	}
	var out wireMessage
	if c.in.Capture && err == nil && output != nil && decode(output(), &out) && out.Role != "" {
		setContent(span, semconv.GenAIOutputMessagesKey, attribute.SliceValue(out.value(c.finish)))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
}

// usage is the conventions' usage attributes; input already includes the
// cached tokens.
func usage(input, output, cacheRead, cacheCreation int64) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAIUsageInputTokens(int(input)), semconv.GenAIUsageOutputTokens(int(output)),
		semconv.GenAIUsageCacheReadInputTokens(int(cacheRead)), semconv.GenAIUsageCacheCreationInputTokens(int(cacheCreation))}
}

// Failed marks span as failed with an error.type and a description.
func Failed(span trace.Span, typ, desc string) {
	span.SetAttributes(ErrType(typ))
	span.SetStatus(codes.Error, desc)
}

// An Agent describes a run for its invoke_agent span.
type Agent struct {
	Name, Model, ConversationID string
	MaxTokens                   int
	Input, System               string // content
}

// StartAgent starts the invoke_agent span of a run.
func (in *Instruments) StartAgent(ctx context.Context, a Agent) (context.Context, trace.Span) {
	name, kvs := "invoke_agent", []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIProviderNameAnthropic, semconv.GenAIRequestModel(a.Model)}
	if a.Name != "" {
		name += " " + a.Name
		kvs = append(kvs, semconv.GenAIAgentName(a.Name))
	}
	ctx, span := in.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kvs...))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(semconv.GenAIRequestMaxTokens(a.MaxTokens))
	if a.ConversationID != "" {
		span.SetAttributes(semconv.GenAIConversationID(a.ConversationID))
	}
	if in.Capture {
		setContent(span, semconv.GenAIInputMessagesKey, attribute.SliceValue(message("user", "", textPart(a.Input))))
		if a.System != "" {
			setContent(span, semconv.GenAISystemInstructionsKey, attribute.SliceValue(textPart(a.System)))
		}
	}
	return ctx, span
}

// An Outcome is how a run ended, for its span.
type Outcome struct {
	State      string
	Iterations int
	// Usage is input (cached tokens included), output, cache read and
	// cache creation tokens.
	Usage   [4]int64
	Text    string // content: the last answer
	Err     error
	ErrType string
}

// EndAgent sets the outcome of a run on its span; the caller ends it.
func (in *Instruments) EndAgent(span trace.Span, o Outcome) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(State.String(o.State), Iterations.Int(o.Iterations))
	span.SetAttributes(usage(o.Usage[0], o.Usage[1], o.Usage[2], o.Usage[3])...)
	if in.Capture && o.Text != "" {
		setContent(span, semconv.GenAIOutputMessagesKey, attribute.SliceValue(message("assistant", "", textPart(o.Text))))
	}
	if o.Err != nil {
		Failed(span, o.ErrType, o.Err.Error())
	}
}

// StartTool starts the execute_tool span of a call about to run.
func (in *Instruments) StartTool(ctx context.Context, name, id string, args []byte) (context.Context, trace.Span) {
	ctx, span := in.Tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameExecuteTool))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIToolName(name), semconv.GenAIToolCallID(id), semconv.GenAIToolType("function"))
		if in.Capture {
			setContent(span, semconv.GenAIToolCallArgumentsKey, jsonValue(args))
		}
	}
	return ctx, span
}

// EndTool ends the span of a call with its result. The result is content,
// so a failure's status says only that the tool failed.
func (in *Instruments) EndTool(span trace.Span, isError bool, result string) {
	switch {
	case !span.IsRecording():
	case isError:
		Failed(span, "tool_error", "the tool reported an error")
	case in.Capture:
		setContent(span, semconv.GenAIToolCallResultKey, textValue(result))
	}
	span.End()
}

// Retry records on ctx's span that a model call failed with an error of
// type errType and is sent again as attempt after wait (0: not known),
// its partial output thrown away if discarded.
func Retry(ctx context.Context, attempt int, wait time.Duration, errType string, discarded bool) {
	kvs := []attribute.KeyValue{Attempt.Int(attempt), ErrType(errType)}
	if discarded {
		Event(ctx, EventDiscarded, kvs...)
	}
	if wait > 0 {
		kvs = append(kvs, RetryWait.Float64(wait.Seconds()))
	}
	Event(ctx, EventRetry, kvs...)
}

// Repaired records on ctx's span what a repair of the history fixed, if
// anything.
func Repaired(ctx context.Context, fixes []string) {
	if len(fixes) > 0 {
		Event(ctx, EventRepaired, Repairs.StringSlice(fixes))
	}
}

// Event adds the named event to ctx's span, when it records.
func Event(ctx context.Context, name string, kvs ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(kvs...))
	}
}

// ToolKeys are the attributes naming a tool call.
func ToolKeys(name, id string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAIToolName(name), semconv.GenAIToolCallID(id)}
}

// ErrType is the error.type attribute.
func ErrType(typ string) attribute.KeyValue { return semconv.ErrorTypeKey.String(typ) }

// StartCompact starts the compact_history span of a compaction.
func (in *Instruments) StartCompact(ctx context.Context, conversationID string) (context.Context, trace.Span) {
	ctx, span := in.Tracer.Start(ctx, "compact_history", trace.WithSpanKind(trace.SpanKindInternal))
	if conversationID != "" && span.IsRecording() {
		span.SetAttributes(semconv.GenAIConversationID(conversationID))
	}
	return ctx, span
}

// EndCompact ends the span of a compaction, failed with err of type
// errType when err is not nil.
func EndCompact(span trace.Span, before, after int, steps []string, err error, errType string) {
	if span.IsRecording() {
		span.SetAttributes(TokensBefore.Int(before), TokensAfter.Int(after), Steps.StringSlice(steps))
		if err != nil {
			Failed(span, errType, err.Error())
		}
	}
	span.End()
}
