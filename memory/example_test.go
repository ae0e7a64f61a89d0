package memory_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// A run cancelled while its tools were running leaves a tool_use without a
// result; Repair answers it so the next request is valid.
func Example() {
	h := memory.New(memory.Config{Model: "claude-sonnet-4-5"})
	h.AppendUser(llm.Text{Text: "What is 2+3?"})
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{
		llm.ToolUse{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a":2,"b":3}`)},
	}}, llm.Usage{InputTokens: 400, OutputTokens: 30})

	// ... the run is cancelled before the tool ran ...
	fmt.Println(h.Repair())
	last := h.Messages()[2].Content[0].(llm.ToolResult)
	fmt.Println(last.IsError, llm.TextOf(last.Content))
	fmt.Println(h.Tokens() >= 430)
	// Output:
	// [answered interrupted tool calls (1)]
	// true not executed: interrupted
	// true
}
