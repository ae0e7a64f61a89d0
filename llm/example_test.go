package llm_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
)

// Stream a turn, print its text as it arrives, and collect the tool call
// the moment its block is complete.
func ExampleClient_Stream() {
	srv := anthropictest.NewServer(anthropictest.NewStream().
		Text("Let me ", "add that.").
		ToolUse("toolu_1", "add", `{"a":1,`, `"b":2}`).
		Stop("tool_use"))
	defer srv.Close()

	c := llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test"})
	req := llm.Request{
		Model:    "claude-sonnet-4-5",
		Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "What is 1+2?"}}}},
		Tools:    []llm.ToolSpec{{Name: "add", InputSchema: []byte(`{"type":"object"}`)}},
	}
	var a llm.Assembler
	for ev, err := range c.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err, "retryable:", llm.IsRetryable(err))
			return
		}
		if d, ok := ev.(llm.TextDelta); ok {
			fmt.Print(d.Text)
		}
		if b, ok := a.Add(ev); ok {
			if tu, ok := b.(llm.ToolUse); ok {
				fmt.Printf("\ncall %s %s\n", tu.Name, tu.Input)
			}
		}
	}
	t := a.Turn()
	fmt.Println("stop:", t.StopReason, "blocks:", len(t.Message.Content))
	// Output:
	// Let me add that.
	// call add {"a":1,"b":2}
	// stop: tool_use blocks: 2
}
