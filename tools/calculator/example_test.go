package calculator_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

func ExampleNew() {
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(calculator.New()); err != nil {
		panic(err)
	}
	results := reg.Run(context.Background(), []llm.ToolUse{
		{ID: "toolu_1", Name: "calculator", Input: json.RawMessage(`{"a": 3, "b": 5, "operation": "add"}`)},
		{ID: "toolu_2", Name: "calculator", Input: json.RawMessage(`{"a": 1, "b": 0, "operation": "divide"}`)},
	})
	for _, r := range results {
		fmt.Printf("%s is_error=%v %s\n", r.ToolUseID, r.IsError, llm.TextOf(r.Content))
	}
	// Output:
	// toolu_1 is_error=false 8
	// toolu_2 is_error=true division by zero
}
