package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentloop/agentloop/agent"
	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/telemetry"
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
// without telemetry, which is the default; with it and no provider
// installed (OpenTelemetry's no-op); and with a recording SDK for traces
// and metrics, with and without content capture.
func BenchmarkTracing(b *testing.B) {
	api := memAPI{
		toolTurn: at.NewStream().Text("Let me add.").ToolUse("toolu_1", "calculator", `{"a":3,`, `"b":5,"operation":"add"}`).Stop("tool_use").Bytes(),
		textTurn: at.NewStream().Text("It is ", "8.").Stop("end_turn").Bytes(),
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	recording := func(capture bool) *telemetry.Telemetry {
		return telemetry.New(telemetry.Config{
			TracerProvider: tp,
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
			CaptureContent: capture,
		})
	}
	for _, bc := range []struct {
		name string
		tel  *telemetry.Telemetry
	}{
		{"none", nil},
		{"off", telemetry.New(telemetry.Config{TracerProvider: noop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})},
		{"recording", recording(false)},
		{"recording+content", recording(true)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := llm.Config{APIKey: "test", HTTPClient: &http.Client{Transport: api}}
			var obs agent.Observer
			if bc.tel != nil {
				cfg.Observe, obs = bc.tel.Observe(""), bc.tel
			}
			client := llm.New(cfg)
			reg := tool.NewRegistry(tool.Config{})
			if err := reg.Register(calculator.New()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				a, err := agent.New(agent.Config{Model: client, Registry: reg, Observer: obs})
				if err != nil {
					b.Fatal(err)
				}
				if res, err := a.Run(context.Background(), "What is 3 + 5?"); err != nil || res.State != agent.Finished {
					b.Fatalf("%+v, %v", res, err)
				}
			}
		})
	}
}
