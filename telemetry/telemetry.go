// Package telemetry traces agentloop by OpenTelemetry's GenAI semantic
// conventions, from the outside: the core (llm, tool, memory, agent) does
// not import it. [Telemetry.Observe] is an [llm.Config].Observe, which
// makes a "chat {model}" span and the gen_ai.client.* metrics of each HTTP
// attempt of a model call; a *Telemetry is an [agent.Observer], which
// wraps a run in its "invoke_agent {name}" span, each tool call in an
// "execute_tool {tool}" span that the call's context carries (a subagent's
// run nests under it), and each compaction in a "compact_history" span.
// What the conventions have no name for is agentloop's own: span events
// for retries, repairs and calls the loop answered without running them,
// and a few attributes. Content (prompts, answers, tool input and output)
// is recorded only when asked for. It uses only the OpenTelemetry API;
// the SDK is the program's choice.
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

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// Config says where traces and metrics go. The zero value uses the
// global providers and records no content.
type Config struct {
	// TracerProvider makes the spans. Nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// CaptureContent records the system prompt, messages, tool names,
	// arguments and results on the spans. Default false: content is large
	// and often sensitive. Credentials are never recorded.
	CaptureContent bool
}

// Bucket boundaries the conventions give for the client metrics.
var (
	SecondsBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	TokenBuckets   = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// scope is the instrumentation scope of every span and metric.
const scope = "github.com/agentloop/agentloop/telemetry"

// Telemetry makes the spans and metrics. Make one with [New]; it is safe
// for concurrent use, and one serves any number of clients and agents.
type Telemetry struct {
	tracer   trace.Tracer
	capture  bool
	duration genaiconv.ClientOperationDuration
	tokens   genaiconv.ClientTokenUsage
	ttfc     genaiconv.ClientOperationTimeToFirstChunk
}

// New returns the Telemetry of cfg.
func New(cfg Config) *Telemetry {
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	t := &Telemetry{tracer: tp.Tracer(scope), capture: cfg.CaptureContent}
	// A failed instrument comes back a no-op: telemetry never fails a call.
	t.duration, _ = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(SecondsBuckets...))
	t.tokens, _ = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(TokenBuckets...))
	t.ttfc, _ = genaiconv.NewClientOperationTimeToFirstChunk(m, metric.WithExplicitBucketBoundaries(SecondsBuckets...))
	return t
}

// Observe returns the [llm.Config].Observe of a client of the API at
// baseURL (empty: the public API's), which it records as server.address
// and server.port. Each attempt is a "chat {model}" client span, under
// the caller's, with the gen_ai.client.* metrics; a retry is an
// agentloop.retry event on the caller's span.
func (t *Telemetry) Observe(baseURL string) func(context.Context, llm.Attempt) (context.Context, func(llm.Event, error)) {
	host, port := "api.anthropic.com", 443
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
		if p, err := strconv.Atoi(u.Port()); err == nil {
			port = p
		} else if u.Scheme == "http" {
			port = 80
		}
	}
	server := []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(port)}
	return func(ctx context.Context, a llm.Attempt) (context.Context, func(llm.Event, error)) {
		if a.Retried != nil {
			retry(ctx, a.N, a.Wait, llm.ErrorType(a.Retried), false)
		}
		c := t.startChat(ctx, a.Request, server)
		return c.ctx, c.see
	}
}

// A chat is one attempt of a model call: its span, and what the metrics
// and the span's closing attributes need from its response.
type chat struct {
	t       *Telemetry
	ctx     context.Context // carries the span
	span    trace.Span
	metrics bool // some metric instrument is enabled
	server  []attribute.KeyValue
	model   string
	start   time.Time
	first   time.Duration // until the first chunk; 0 before it
	id      string
	rmodel  string
	usage   []int64 // input, output, cache read, cache creation; nil until known
	finish  string
	asm     *llm.Assembler // the output, when content is recorded
}

// startChat starts the span of an attempt at req.
func (t *Telemetry) startChat(ctx context.Context, req llm.Request, server []attribute.KeyValue) *chat {
	kvs := append([]attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameAnthropic,
		semconv.GenAIRequestModel(req.Model)}, server...)
	ctx, span := t.tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kvs...))
	c := &chat{t: t, ctx: ctx, span: span, server: server, model: req.Model, start: time.Now(), metrics: t.duration.Enabled(ctx)}
	if !span.IsRecording() {
		return c
	}
	span.SetAttributes(semconv.GenAIRequestMaxTokens(cmp.Or(max(req.MaxTokens, 0), llm.DefaultMaxTokens)), semconv.GenAIRequestStream(true))
	if !t.capture {
		return c
	}
	c.asm = new(llm.Assembler)
	setContent(span, semconv.GenAIInputMessagesKey, messages("", req.Messages...))
	if !apirules.IsBlank(req.System) { // as the request sends it
		setContent(span, semconv.GenAISystemInstructionsKey, attribute.SliceValue(textPart(req.System)))
	}
	if len(req.Tools) > 0 {
		defs := make([]attribute.Value, len(req.Tools))
		for i, tool := range req.Tools {
			defs[i] = part("function", attribute.String("name", tool.Name))
		}
		setContent(span, semconv.GenAIToolDefinitionsKey, attribute.SliceValue(defs...))
	}
	return c
}

func setContent(span trace.Span, k attribute.Key, v attribute.Value) {
	if v.Type() != attribute.EMPTY {
		span.SetAttributes(attribute.KeyValue{Key: k, Value: v})
	}
}

// see records an event of the attempt, or, for a nil event, its end.
func (c *chat) see(ev llm.Event, err error) {
	if ev == nil {
		c.end(err)
		return
	}
	if !c.metrics && !c.span.IsRecording() {
		return
	}
	if c.first == 0 {
		c.first = max(time.Since(c.start), 1)
	}
	switch ev := ev.(type) {
	case llm.MessageStart:
		c.id, c.rmodel = ev.ID, ev.Model
		c.setUsage(ev.Usage)
	case llm.MessageDelta:
		c.finish = cmp.Or(string(ev.StopReason), c.finish)
		c.setUsage(ev.Usage)
	}
	if c.asm != nil {
		c.asm.Add(ev)
	}
}

// setUsage records the response's usage so far, by the Anthropic rule:
// the input counts every input token, read from the cache or written to
// it too, and the cache counts are also given apart.
func (c *chat) setUsage(u llm.Usage) {
	c.usage = append(c.usage[:0], u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens, u.OutputTokens,
		u.CacheReadInputTokens, u.CacheCreationInputTokens)
}

// end ends the attempt, failed if err is not nil, and records its metrics.
func (c *chat) end(err error) {
	defer c.span.End()
	if !c.metrics && !c.span.IsRecording() {
		return
	}
	kvs := append(make([]attribute.KeyValue, 0, 5), semconv.GenAIRequestModel(c.model))
	if c.rmodel != "" {
		kvs = append(kvs, semconv.GenAIResponseModel(c.rmodel))
	}
	kvs = append(kvs, c.server...)
	if err != nil {
		kvs = append(kvs, errType(llm.ErrorType(err)))
	}
	if c.metrics {
		op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAnthropic
		c.t.duration.Record(c.ctx, time.Since(c.start).Seconds(), op, prov, kvs...)
		if c.first > 0 {
			c.t.ttfc.Record(c.ctx, c.first.Seconds(), op, prov, kvs...)
		}
		if c.usage != nil {
			c.t.tokens.Record(c.ctx, c.usage[0], op, prov, genaiconv.TokenTypeInput, kvs...)
			c.t.tokens.Record(c.ctx, c.usage[1], op, prov, genaiconv.TokenTypeOutput, kvs...)
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
	if c.asm != nil && err == nil {
		if out := c.asm.Turn(); out.Done {
			setContent(span, semconv.GenAIOutputMessagesKey, messages(c.finish, out.Message))
		}
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

// failed marks span as failed with an error.type and a description.
func failed(span trace.Span, typ, desc string) {
	span.SetAttributes(errType(typ))
	span.SetStatus(codes.Error, desc)
}

// errType is the error.type attribute.
func errType(typ string) attribute.KeyValue { return semconv.ErrorTypeKey.String(typ) }

// retry records on ctx's span that a model call failed with an error of
// type typ and is sent again as attempt after wait (0: not known), its
// partial output thrown away if discarded.
func retry(ctx context.Context, attempt int, wait time.Duration, typ string, discarded bool) {
	kvs := []attribute.KeyValue{Attempt.Int(attempt), errType(typ)}
	if discarded {
		event(ctx, EventDiscarded, kvs...)
	}
	if wait > 0 {
		kvs = append(kvs, RetryWait.Float64(wait.Seconds()))
	}
	event(ctx, EventRetry, kvs...)
}

// event adds the named event to ctx's span, when it records.
func event(ctx context.Context, name string, kvs ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(kvs...))
	}
}
