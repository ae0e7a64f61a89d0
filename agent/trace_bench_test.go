package agent

import (
	"bytes"
	"context"
	"io"
	"iter"
	"net/http"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/telemetry"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

// memAPI answers the Messages API from memory, without a socket: a tool
// call, then, once the request carries its result, the answer. The wire
// bytes are the fake server's own.
type memAPI struct{ toolTurn, textTurn []byte }

func (m memAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body.Close()
	out := m.toolTurn
	if bytes.Contains(body, []byte("tool_result")) {
		out = m.textTurn
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(out)), Request: r}, nil
}

// BenchmarkTracing measures one run (a tool round trip: two model calls
// through a real *llm.Client over an in-memory transport, one tool call)
// with telemetry off, which is the default, and with a recording SDK for
// traces and metrics, with and without content capture.
func BenchmarkTracing(b *testing.B) {
	api := memAPI{
		toolTurn: at.NewStream().Text("Let me add.").ToolUse("toolu_1", "calculator", `{"a":3,`, `"b":5,"operation":"add"}`).Stop("tool_use").Bytes(),
		textTurn: at.NewStream().Text("It is ", "8.").Stop("end_turn").Bytes(),
	}
	recording := func(capture bool) llm.Telemetry {
		return llm.Telemetry{
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())),
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
			CaptureContent: capture,
		}
	}
	for _, bc := range []struct {
		name string
		tel  func() llm.Telemetry
	}{
		{"off", func() llm.Telemetry { return llm.Telemetry{} }},
		{"recording", func() llm.Telemetry { return recording(false) }},
		{"recording+content", func() llm.Telemetry { return recording(true) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tel := bc.tel()
			client := llm.New(llm.Config{APIKey: "test", HTTPClient: &http.Client{Transport: api}, Telemetry: tel})
			reg := tool.NewRegistry(tool.Config{})
			if err := reg.Register(calculator.New()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				a, err := New(Config{Model: client, Registry: reg, Telemetry: tel})
				if err != nil {
					b.Fatal(err)
				}
				if res, err := a.Run(context.Background(), "What is 3 + 5?"); err != nil || res.State != Finished {
					b.Fatalf("%+v, %v", res, err)
				}
			}
			b.StopTimer()
			if tp, ok := tel.TracerProvider.(*sdktrace.TracerProvider); ok {
				tp.Shutdown(context.Background())
			}
		})
	}
}

// BenchmarkRunSpansOff measures what telemetry adds to a run and one tool
// call when no provider is installed.
func BenchmarkRunSpansOff(b *testing.B) {
	a, err := New(Config{Model: llm.ModelFunc(nil)})
	if err != nil {
		b.Fatal(err)
	}
	call := llm.ToolUse{ID: "toolu_1", Name: "calculator", Input: []byte(`{}`)}
	run := func(ctx context.Context, _ string) iter.Seq2[Event, error] {
		return func(yield func(Event, error) bool) {
			_, ts := a.otel.StartTool(ctx, call.Name, call.ID, call.Input)
			a.otel.EndTool(ts, false, "")
			telemetry.Retry(ctx, 2, 0, "overloaded_error", true)
			yield(Result{}, nil)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for range a.traced(context.Background(), "hi", run) {
		}
	}
}
