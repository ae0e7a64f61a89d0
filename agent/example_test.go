package agent_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

// The shortest real program: one custom tool, and an agent that calls it.
// The fake API plays the model's two turns; against the real one, drop srv
// and give llm.Config an APIKey.
func Example() {
	srv := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "weather", `{"city": "Oslo"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It is 4 °C in Oslo.").Stop("end_turn"),
	)
	defer srv.Close()

	type place struct {
		City string `json:"city"`
	}
	weather, err := tool.New("weather", "Today's temperature in a city.", func(ctx context.Context, p place) (string, error) {
		return "4 °C in " + p.City, nil
	})
	if err != nil {
		panic(err)
	}
	a, err := agent.New(agent.Config{Model: llm.New(llm.Config{BaseURL: srv.URL}), Tools: []*tool.Tool{weather}})
	if err != nil {
		panic(err)
	}
	res, err := a.Run(context.Background(), "How warm is it in Oslo?")
	fmt.Println(res.Text, err)
	// Output:
	// It is 4 °C in Oslo. <nil>
}

// The calculator loop, streamed: the model asks for two calculations, one
// turn each, then answers. Each tool call starts as soon as its input is
// complete; its result goes back in the next request.
func ExampleAgent_Stream() {
	// The fake server plays the model's three turns. The tool input
	// arrives in fragments, as the real API sends it.
	srv := anthropictest.NewServer(
		anthropictest.NewStream().
			Text("First 3 + 5.").
			ToolUse("toolu_1", "calculator", `{"a": 3, "b": 5, `, `"operation": "add"}`).
			Stop("tool_use"),
		anthropictest.NewStream().
			ToolUse("toolu_2", "calculator", `{"a": 8, "b": 12, "operation": "multiply"}`).
			Stop("tool_use"),
		anthropictest.NewStream().Text("(3 + 5) × 12 = 96.").Stop("end_turn"),
	)
	defer srv.Close()

	a, err := agent.New(agent.Config{
		Model: llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test"}),
		Tools: []*tool.Tool{calculator.New()},
	})
	if err != nil {
		panic(err)
	}

	for ev, err := range a.Stream(context.Background(), "What is (3 + 5) × 12?") {
		switch ev := ev.(type) {
		case agent.TurnStart:
			fmt.Printf("-- turn %d\n", ev.Iteration)
		case agent.TextDelta:
			fmt.Printf("text: %s\n", ev.Text)
		case agent.ToolCall:
			fmt.Printf("call: %s %s\n", ev.Name, ev.Input)
		case agent.ToolDone:
			fmt.Printf("result: %s\n", ev.Content)
		case agent.Result:
			fmt.Printf("-- %s after %d turns: %s\n", ev.State, ev.Iterations, ev.Text)
		}
		if err != nil {
			fmt.Println("error:", err)
		}
	}
	// Output:
	// -- turn 1
	// text: First 3 + 5.
	// call: calculator {"a": 3, "b": 5, "operation": "add"}
	// result: 8
	// -- turn 2
	// call: calculator {"a": 8, "b": 12, "operation": "multiply"}
	// result: 96
	// -- turn 3
	// text: (3 + 5) × 12 = 96.
	// -- finished after 3 turns: (3 + 5) × 12 = 96.
}

// Run is Stream without the events. Here a hook denies every call; the
// model reads the denial as the tool's result.
func ExampleAgent_Run() {
	srv := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"a": 1, "b": 1, "operation": "add"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("I was not allowed to calculate.").Stop("end_turn"),
	)
	defer srv.Close()
	a, _ := agent.New(agent.Config{
		Model: llm.New(llm.Config{BaseURL: srv.URL, HTTPClient: &http.Client{}}),
		Tools: []*tool.Tool{calculator.New()},
		Hooks: []agent.Hook{func(ctx context.Context, e agent.HookEvent) (agent.Decision, error) {
			if e.Point == agent.BeforeTool {
				return agent.Decision{Deny: "read-only session"}, nil
			}
			return agent.Decision{}, nil
		}},
	})
	res, err := a.Run(context.Background(), "What is 1 + 1?")
	fmt.Println(res.State, res.Iterations, res.Text, err)

	sent := srv.Requests()[1].ToolResults()[0]
	fmt.Println(sent.IsError, sent.Content[0].Text)
	// Output:
	// finished 2 I was not allowed to calculate. <nil>
	// true denied: read-only session
}
