package cli

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// OTLP/HTTP export is written here, the messages encoded field by field
// with protowire, rather than with the official exporters or the OTLP
// message packages. The exporters import the OTLP collector packages, which
// hold the gRPC services too; gRPC imports golang.org/x/net/trace, whose
// html/template makes the linker keep every exported method of the program
// (a 65 MB binary resting at 30 MB, against 38 MB and 21 MB). The message
// packages bring protobuf's reflection runtime and its registry of
// descriptors, whose init runs in every process: 5.3 MB of the binary and 2
// MiB of its resident pages in every run, telemetry on or off. The field
// numbers are those of opentelemetry-proto's .proto files; the tests decode
// what is sent with the official packages.

// An otlpClient posts OTLP/HTTP export requests in binary protobuf to one
// signal's URL.
type otlpClient struct {
	url     string
	headers map[string]string
	gzip    bool         // OTEL_EXPORTER_OTLP_COMPRESSION=gzip
	http    *http.Client // nil: http.DefaultClient
}

// export posts body, an Export*ServiceRequest, and reads the answer; it
// gives up after flushTimeout and does not retry.
func (c otlpClient) export(ctx context.Context, body []byte) error {
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := cmp.Or(c.http, http.DefaultClient).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("OTLP export to %s: %s", c.url, resp.Status)
	}
	return nil
}

// spanExporter exports spans over OTLP/HTTP, as the SDK's OTLP trace
// exporter (otlptrace) does.
type spanExporter struct{ otlpClient }

func (e spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	if err := e.export(ctx, otlpSpans(spans)); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}
func (spanExporter) Shutdown(context.Context) error { return nil }

// otlpSpans is an ExportTraceServiceRequest holding spans, grouped by
// resource, then by instrumentation scope, in the order they first come.
func otlpSpans(spans []sdktrace.ReadOnlySpan) []byte {
	type scoped struct {
		scope instrumentation.Scope
		spans []byte // its Span fields
	}
	type resourced struct {
		res    *resource.Resource
		scopes []*scoped
	}
	var all []*resourced
	for _, s := range spans {
		var r *resourced
		for _, x := range all {
			if x.res.Equivalent() == s.Resource().Equivalent() {
				r = x
			}
		}
		if r == nil {
			r = &resourced{res: s.Resource()}
			all = append(all, r)
		}
		var sc *scoped
		for _, x := range r.scopes {
			if x.scope == s.InstrumentationScope() {
				sc = x
			}
		}
		if sc == nil {
			sc = &scoped{scope: s.InstrumentationScope()}
			r.scopes = append(r.scopes, sc)
		}
		sc.spans = pbMessage(sc.spans, 2, otlpSpan(s)) // ScopeSpans.spans
	}
	var body []byte
	for _, r := range all {
		var rs []byte // ResourceSpans
		if r.res != nil {
			rs = pbMessage(rs, 1, otlpResource(r.res))
		}
		for _, sc := range r.scopes {
			var ss []byte // ScopeSpans
			if sc.scope != (instrumentation.Scope{}) {
				ss = pbMessage(ss, 1, otlpScope(sc.scope))
			}
			ss = append(ss, sc.spans...)
			ss = pbString(ss, 3, sc.scope.SchemaURL)
			rs = pbMessage(rs, 2, ss)
		}
		rs = pbString(rs, 3, r.res.SchemaURL())
		body = pbMessage(body, 1, rs) // ExportTraceServiceRequest.resource_spans
	}
	return body
}

// otlpSpan is s as an OTLP Span.
func otlpSpan(s sdktrace.ReadOnlySpan) []byte {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	var b []byte
	b = pbBytes(b, 1, tid[:])
	b = pbBytes(b, 2, sid[:])
	b = pbString(b, 3, sc.TraceState().String())
	if psid := parent.SpanID(); psid.IsValid() {
		b = pbBytes(b, 4, psid[:])
	}
	b = pbString(b, 5, s.Name())
	if k := s.SpanKind(); k <= trace.SpanKindConsumer { // OTLP's SpanKind numbers them alike
		b = pbVarint(b, 6, uint64(k))
	}
	b = pbFixed64(b, 7, nanos(s.StartTime()))
	b = pbFixed64(b, 8, nanos(s.EndTime()))
	b = otlpKeyValues(b, 9, s.Attributes())
	b = pbVarint(b, 10, pbCount(s.DroppedAttributes()))
	for _, e := range s.Events() {
		var m []byte // Span.Event
		m = pbFixed64(m, 1, nanos(e.Time))
		m = pbString(m, 2, e.Name)
		m = otlpKeyValues(m, 3, e.Attributes)
		m = pbVarint(m, 4, pbCount(e.DroppedAttributeCount))
		b = pbMessage(b, 11, m)
	}
	b = pbVarint(b, 12, pbCount(s.DroppedEvents()))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		var m []byte // Span.Link
		m = pbBytes(m, 1, ltid[:])
		m = pbBytes(m, 2, lsid[:])
		m = pbString(m, 3, l.SpanContext.TraceState().String())
		m = otlpKeyValues(m, 4, l.Attributes)
		m = pbVarint(m, 5, pbCount(l.DroppedAttributeCount))
		m = pbFixed32(m, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = pbMessage(b, 13, m)
	}
	b = pbVarint(b, 14, pbCount(s.DroppedLinks()))
	var status []byte // Status: OTLP numbers Ok and Error the other way round
	status = pbString(status, 2, s.Status().Description)
	switch s.Status().Code {
	case codes.Ok:
		status = pbVarint(status, 3, 1)
	case codes.Error:
		status = pbVarint(status, 3, 2)
	}
	b = pbMessage(b, 15, status)
	return pbFixed32(b, 16, spanFlags(sc.TraceFlags(), parent))
}

// spanFlags is OTLP's flags for a span or link: the W3C trace flags, and
// whether its parent (or the linked span) is remote, which OTLP says is
// known.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | 0x100 // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	if parent.IsRemote() {
		flags |= 0x200 // SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
	}
	return flags
}

// otlpResource is r as an OTLP Resource.
func otlpResource(r *resource.Resource) []byte {
	return otlpKeyValues(nil, 1, r.Attributes())
}

// otlpScope is s as an OTLP InstrumentationScope.
func otlpScope(s instrumentation.Scope) []byte {
	b := pbString(nil, 1, s.Name)
	b = pbString(b, 2, s.Version)
	return otlpKeyValues(b, 3, s.Attributes.ToSlice())
}

// metricExporter exports metrics over OTLP/HTTP, cumulative, aggregated as
// the SDK does by default.
type metricExporter struct{ otlpClient }

func (metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (e metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	return e.export(ctx, pbMessage(nil, 1, otlpMetrics(rm))) // ExportMetricsServiceRequest.resource_metrics
}
func (metricExporter) ForceFlush(context.Context) error { return nil }
func (metricExporter) Shutdown(context.Context) error   { return nil }

// otlpMetrics is rm as an OTLP ResourceMetrics: its sums, gauges and
// explicit-bucket histograms, the kinds the SDK's default aggregation
// makes.
func otlpMetrics(rm *metricdata.ResourceMetrics) []byte {
	b := pbMessage(nil, 1, otlpResource(rm.Resource))
	for _, sm := range rm.ScopeMetrics {
		s := pbMessage(nil, 1, otlpScope(sm.Scope)) // ScopeMetrics
		for _, m := range sm.Metrics {
			pm := pbString(nil, 1, m.Name) // Metric
			pm = pbString(pm, 2, m.Description)
			pm = pbString(pm, 3, m.Unit)
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				pm = pbMessage(pm, 9, otlpHistogram(d))
			case metricdata.Histogram[float64]:
				pm = pbMessage(pm, 9, otlpHistogram(d))
			case metricdata.Sum[int64]:
				pm = pbMessage(pm, 7, otlpSum(d))
			case metricdata.Sum[float64]:
				pm = pbMessage(pm, 7, otlpSum(d))
			case metricdata.Gauge[int64]:
				pm = pbMessage(pm, 5, otlpPoints(nil, d.DataPoints))
			case metricdata.Gauge[float64]:
				pm = pbMessage(pm, 5, otlpPoints(nil, d.DataPoints))
			default:
				continue // exponential histograms and summaries: nothing here makes them
			}
			s = pbMessage(s, 2, pm)
		}
		s = pbString(s, 3, sm.Scope.SchemaURL)
		b = pbMessage(b, 2, s)
	}
	return pbString(b, 3, rm.Resource.SchemaURL())
}

// otlpSum is an OTLP Sum.
func otlpSum[N int64 | float64](s metricdata.Sum[N]) []byte {
	b := otlpPoints(nil, s.DataPoints)
	b = pbVarint(b, 2, temporality(s.Temporality))
	if s.IsMonotonic {
		b = pbVarint(b, 3, 1)
	}
	return b
}

// otlpHistogram is an OTLP Histogram.
func otlpHistogram[N int64 | float64](h metricdata.Histogram[N]) []byte {
	var b []byte
	for _, p := range h.DataPoints {
		dp := otlpKeyValues(nil, 9, p.Attributes.ToSlice()) // HistogramDataPoint
		dp = pbFixed64(dp, 2, nanos(p.StartTime))
		dp = pbFixed64(dp, 3, nanos(p.Time))
		dp = pbFixed64(dp, 4, p.Count)
		dp = pbDouble(protowire.AppendTag(dp, 5, protowire.Fixed64Type), float64(p.Sum)) // optional: sent when zero
		if len(p.BucketCounts) > 0 {
			var packed []byte
			for _, n := range p.BucketCounts {
				packed = protowire.AppendFixed64(packed, n)
			}
			dp = pbMessage(dp, 6, packed)
		}
		if len(p.Bounds) > 0 {
			var packed []byte
			for _, x := range p.Bounds {
				packed = pbDouble(packed, x)
			}
			dp = pbMessage(dp, 7, packed)
		}
		if v, ok := p.Min.Value(); ok {
			dp = pbDouble(protowire.AppendTag(dp, 11, protowire.Fixed64Type), float64(v))
		}
		if v, ok := p.Max.Value(); ok {
			dp = pbDouble(protowire.AppendTag(dp, 12, protowire.Fixed64Type), float64(v))
		}
		b = pbMessage(b, 1, dp)
	}
	return pbVarint(b, 2, temporality(h.Temporality))
}

// otlpPoints appends ps to b as the data_points (field 1) of a Gauge or
// Sum.
func otlpPoints[N int64 | float64](b []byte, ps []metricdata.DataPoint[N]) []byte {
	for _, p := range ps {
		dp := otlpKeyValues(nil, 7, p.Attributes.ToSlice()) // NumberDataPoint
		dp = pbFixed64(dp, 2, nanos(p.StartTime))
		dp = pbFixed64(dp, 3, nanos(p.Time))
		switch v := any(p.Value).(type) { // a oneof: sent when zero
		case int64:
			dp = protowire.AppendFixed64(protowire.AppendTag(dp, 6, protowire.Fixed64Type), uint64(v))
		case float64:
			dp = pbDouble(protowire.AppendTag(dp, 4, protowire.Fixed64Type), v)
		}
		b = pbMessage(b, 1, dp)
	}
	return b
}

// temporality is OTLP's AggregationTemporality for t.
func temporality(t metricdata.Temporality) uint64 {
	if t == metricdata.DeltaTemporality {
		return 1 // AGGREGATION_TEMPORALITY_DELTA
	}
	return 2 // AGGREGATION_TEMPORALITY_CUMULATIVE
}

// nanos is t in OTLP's Unix nanoseconds; the zero time, or one before
// 1970, is 0, unset.
func nanos(t time.Time) uint64 {
	return uint64(max(0, t.UnixNano()))
}

// pbCount is a count of what was dropped, as OTLP's uint32.
func pbCount(n int) uint64 {
	return uint64(min(max(n, 0), math.MaxUint32))
}

// otlpKeyValues appends kvs to b as field num, repeated KeyValue.
func otlpKeyValues(b []byte, num protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		m := pbString(nil, 1, string(kv.Key))
		m = pbMessage(m, 2, otlpValue(kv.Value))
		b = pbMessage(b, num, m)
	}
	return b
}

// otlpValue is v as an OTLP AnyValue, whose fields are a oneof: each is
// sent when zero too.
func otlpValue(v attribute.Value) []byte {
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	switch v.Type() {
	case attribute.EMPTY:
		return nil
	case attribute.STRING:
		return protowire.AppendString(tag(1, protowire.BytesType), v.AsString())
	case attribute.BOOL:
		return protowire.AppendVarint(tag(2, protowire.VarintType), protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		return protowire.AppendVarint(tag(3, protowire.VarintType), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return pbDouble(tag(4, protowire.Fixed64Type), v.AsFloat64())
	case attribute.BYTESLICE:
		return protowire.AppendBytes(tag(7, protowire.BytesType), v.AsByteSlice())
	case attribute.MAP:
		return protowire.AppendBytes(tag(6, protowire.BytesType), otlpKeyValues(nil, 1, v.AsMap())) // KeyValueList
	}
	var array []byte // ArrayValue
	for _, x := range sliceValues(v) {
		array = pbMessage(array, 1, otlpValue(x))
	}
	return protowire.AppendBytes(tag(5, protowire.BytesType), array)
}

// sliceValues is a slice attribute's elements, each a Value.
func sliceValues(v attribute.Value) (out []attribute.Value) {
	switch v.Type() {
	case attribute.SLICE:
		return v.AsSlice()
	case attribute.BOOLSLICE:
		for _, x := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(x))
		}
	case attribute.INT64SLICE:
		for _, x := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(x))
		}
	case attribute.FLOAT64SLICE:
		for _, x := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(x))
		}
	case attribute.STRINGSLICE:
		for _, x := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(x))
		}
	}
	return out
}

// The pb functions append one field to a message; those of scalars leave
// out a zero value, as proto3 does.

func pbMessage(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
}

func pbBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return pbMessage(b, num, v)
}

func pbString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func pbVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func pbFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

func pbFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
}

// pbDouble appends x's bits, the value of a double field whose tag b ends
// with, or an element of a packed one.
func pbDouble(b []byte, x float64) []byte {
	return protowire.AppendFixed64(b, math.Float64bits(x))
}
