package cli

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// everyValue is an attribute of each type OTLP carries, zero values among
// them, which a oneof must send all the same.
var everyValue = []attribute.KeyValue{
	attribute.String("s", "text"), attribute.String("empty", ""), attribute.Bool("f", false),
	attribute.Int64("zero", 0), attribute.Int64("neg", -3), attribute.Float64("x", 0.5),
	attribute.StringSlice("ss", []string{"a", ""}), attribute.Int64Slice("is", []int64{1, 0}),
	attribute.BoolSlice("bs", []bool{true, false}), attribute.Float64Slice("fs", []float64{0, 2.5}),
	{Key: "bytes", Value: attribute.ByteSliceValue([]byte{0, 1})},
	{Key: "slice", Value: attribute.SliceValue(attribute.StringValue("a"), attribute.IntValue(2))},
	{Key: "map", Value: attribute.MapValue(attribute.String("k", "v"))},
	{Key: "nothing"},
}

// sentTrace transcodes what otlpSpans encodes into the OTLP message.
func sentTrace(t *testing.T, spans []sdktrace.ReadOnlySpan) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	got := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(otlpSpans(spans), got); err != nil {
		t.Fatalf("the encoded spans do not decode: %v", err)
	}
	return got
}

// capturingClient is an otlptrace.Client that keeps what it is given.
type capturingClient struct{ got []*tracepb.ResourceSpans }

func (*capturingClient) Start(context.Context) error { return nil }
func (*capturingClient) Stop(context.Context) error  { return nil }
func (c *capturingClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.got = append(c.got, rs...)
	return nil
}

// TestOTLPSpans checks the hand-written encoding of spans against the
// OpenTelemetry SDK's own OTLP trace exporter, field by field: every field
// of a span, its events and links, each kind of attribute, two scopes and
// two resources.
func TestOTLPSpans(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("0102030405060708090a0b0c0d0e0f10")
	sid, _ := trace.SpanIDFromHex("1112131415161718")
	psid, _ := trace.SpanIDFromHex("2122232425262728")
	ts, _ := trace.ParseTraceState("vendor=value")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: psid, Remote: true})
	start := time.Unix(1_700_000_000, 123)
	res := resource.NewSchemaless(attribute.String("service.name", "agentloop"))
	other := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.41.0", attribute.String("service.name", "other"))
	scope := instrumentation.Scope{Name: "agentloop", Version: "1.0", SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.Bool("b", true))}
	stubs := tracetest.SpanStubs{
		{Name: "everything", SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindClient,
			StartTime: start, EndTime: start.Add(time.Second), Attributes: everyValue,
			Events: []sdktrace.Event{{Name: "ev", Time: start.Add(time.Millisecond), Attributes: everyValue[:2], DroppedAttributeCount: 1}, {Name: "bare"}},
			Links:  []sdktrace.Link{{SpanContext: parent, Attributes: everyValue[2:4], DroppedAttributeCount: 2}},
			Status: sdktrace.Status{Code: codes.Error, Description: "it failed"}, DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
			Resource: res, InstrumentationScope: scope},
		{Name: "ok", SpanContext: sc, SpanKind: trace.SpanKindInternal, StartTime: start, EndTime: start,
			Status: sdktrace.Status{Code: codes.Ok}, Resource: res, InstrumentationScope: instrumentation.Scope{Name: "second"}},
		{Name: "zero", Resource: res, InstrumentationScope: scope},
		{Name: "elsewhere", SpanContext: sc, SpanKind: trace.SpanKindConsumer, Resource: other},
	}.Snapshots()

	var official capturingClient
	exp, err := otlptrace.New(t.Context(), &official)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(t.Context(), stubs); err != nil {
		t.Fatal(err)
	}
	want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: official.got}
	byService := protocmp.SortRepeated(func(a, b *tracepb.ResourceSpans) bool {
		return attrMap(a.Resource.Attributes)["service.name"].(string) < attrMap(b.Resource.Attributes)["service.name"].(string)
	})
	if diff := cmp.Diff(want, sentTrace(t, stubs), protocmp.Transform(), byService); diff != "" {
		t.Errorf("the spans as the SDK's exporter sends them (-want +got):\n%s", diff)
	}
	if got := len(sentTrace(t, stubs).ResourceSpans[0].ScopeSpans); got != 2 {
		t.Errorf("the first resource's spans are in %d scopes, want 2", got)
	}
}

// TestOTLPMetrics checks the hand-written encoding of metrics, decoded by
// the official OTLP package: each kind the SDK's default aggregation makes,
// with zero values that a oneof or an optional field must still send.
func TestOTLPMetrics(t *testing.T) {
	start, now := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_060, 5)
	attrs := attribute.NewSet(attribute.String("gen_ai.token.type", "input"))
	rm := &metricdata.ResourceMetrics{
		Resource: resource.NewWithAttributes("https://opentelemetry.io/schemas/1.41.0", attribute.String("service.name", "agentloop")),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "agentloop", Version: "1.0"},
			Metrics: []metricdata.Metrics{
				{Name: "h", Description: "a histogram", Unit: "{token}", Data: metricdata.Histogram[int64]{
					Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.HistogramDataPoint[int64]{
						{Attributes: attrs, StartTime: start, Time: now, Count: 2, Sum: 150, Bounds: []float64{0, 100}, BucketCounts: []uint64{0, 1, 1},
							Min: metricdata.NewExtrema[int64](0), Max: metricdata.NewExtrema[int64](150)},
						{StartTime: start, Time: now},
					}}},
				{Name: "hf", Data: metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality,
					DataPoints: []metricdata.HistogramDataPoint[float64]{{Count: 1, Sum: 0.25}}}},
				{Name: "sum", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
					DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, Time: now, Value: 0}}}},
				{Name: "gauge", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Value: 0}, {Value: -1.5}}}},
				{Name: "skipped", Data: metricdata.Summary{}},
			},
		}},
	}
	got := &colmetricspb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(pbMessage(nil, 1, otlpMetrics(rm)), got); err != nil {
		t.Fatalf("the encoded metrics do not decode: %v", err)
	}
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	input := []*commonpb.KeyValue{kv("gen_ai.token.type", str("input"))}
	t0, t1 := uint64(start.UnixNano()), uint64(now.UnixNano())
	want := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str("agentloop"))}},
		SchemaUrl: "https://opentelemetry.io/schemas/1.41.0",
		ScopeMetrics: []*metricpb.ScopeMetrics{{
			Scope: &commonpb.InstrumentationScope{Name: "agentloop", Version: "1.0"},
			Metrics: []*metricpb.Metric{
				{Name: "h", Description: "a histogram", Unit: "{token}", Data: &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{
					AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
					DataPoints: []*metricpb.HistogramDataPoint{
						{Attributes: input, StartTimeUnixNano: t0, TimeUnixNano: t1, Count: 2, Sum: new(150.0),
							ExplicitBounds: []float64{0, 100}, BucketCounts: []uint64{0, 1, 1}, Min: new(0.0), Max: new(150.0)},
						{StartTimeUnixNano: t0, TimeUnixNano: t1, Sum: new(0.0)},
					}}}},
				{Name: "hf", Data: &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{
					AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
					DataPoints:             []*metricpb.HistogramDataPoint{{Count: 1, Sum: new(0.25)}}}}},
				{Name: "sum", Data: &metricpb.Metric_Sum{Sum: &metricpb.Sum{
					AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, IsMonotonic: true,
					DataPoints: []*metricpb.NumberDataPoint{{Attributes: input, TimeUnixNano: t1, Value: &metricpb.NumberDataPoint_AsInt{AsInt: 0}}}}}},
				{Name: "gauge", Data: &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: []*metricpb.NumberDataPoint{
					{Value: &metricpb.NumberDataPoint_AsDouble{AsDouble: 0}}, {Value: &metricpb.NumberDataPoint_AsDouble{AsDouble: -1.5}}}}}},
			},
		}},
	}}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("the metrics sent (-want +got):\n%s", diff)
	}
}
