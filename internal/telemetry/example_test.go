package telemetry_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentloop/agentloop/internal/telemetry"
)

// A tool call is an execute_tool span carrying the conventions' tool
// attributes; its arguments and result are content, recorded only when
// capture is on, so here they are not.
func ExampleInstruments_StartTool() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	in := telemetry.Spans("example", tp, false)

	_, span := in.StartTool(context.Background(), "add", "toolu_1", []byte(`{"a":3,"b":5}`))
	in.EndTool(span, false, "8")

	for _, s := range rec.Ended() {
		fmt.Println(s.Name())
		for _, kv := range s.Attributes() {
			fmt.Printf("  %s=%s\n", kv.Key, kv.Value.AsString())
		}
	}
	// Output:
	// execute_tool add
	//   gen_ai.operation.name=execute_tool
	//   gen_ai.tool.name=add
	//   gen_ai.tool.call.id=toolu_1
	//   gen_ai.tool.type=function
}
