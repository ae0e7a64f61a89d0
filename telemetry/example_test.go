package telemetry_test

import (
	"context"
	"fmt"
	"net/http"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

// A Telemetry traces a client's model calls as its Observe, and an
// agent's runs, tool calls and compactions as its Observer. Here a run
// against a fake API calls a tool once, and the spans nest as the
// conventions draw them. Content is not recorded unless
// Config.CaptureContent asks for it.
func Example() {
	api := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"a":3,"b":5,"operation":"add"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It is 8.").Stop("end_turn"),
	)
	defer api.Close()
	rec := tracetest.NewSpanRecorder()
	tel := telemetry.New(telemetry.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := llm.New(llm.Config{BaseURL: api.URL, HTTPClient: &http.Client{Transport: tr}, Observe: tel.Observe(api.URL)})
	a, err := agent.New(agent.Config{Model: client, Tools: []*tool.Tool{calculator.New()}, Name: "helper", Observer: tel})
	if err != nil {
		panic(err)
	}
	if _, err := a.Run(context.Background(), "What is 3 + 5?"); err != nil {
		panic(err)
	}
	for _, s := range rec.Ended() { // in the order they ended
		fmt.Println(s.Name())
	}
	// Output:
	// chat claude-sonnet-5-5
	// execute_tool calculator
	// chat claude-sonnet-5-5
	// invoke_agent helper
}
