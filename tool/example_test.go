package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func Example() {
	type addInput struct {
		A float64 `json:"a" jsonschema:"the first addend"`
		B float64 `json:"b" jsonschema:"the second addend"`
	}
	add := tool.Must(tool.New("add", "Add two numbers.",
		func(ctx context.Context, in addInput) (float64, error) { return in.A + in.B, nil }))
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(add); err != nil {
		panic(err)
	}
	fmt.Println(string(reg.Specs()[0].InputSchema))

	results := reg.Run(context.Background(), []llm.ToolUse{
		{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a": 3, "b": 5}`)},
		{ID: "toolu_2", Name: "add", Input: json.RawMessage(`{"a": 3}`)},
		{ID: "toolu_3", Name: "add", Input: json.RawMessage(`{"a": "3", "c": 1}`)},
	})
	for _, r := range results {
		fmt.Println(r.ToolUseID, r.IsError, llm.TextOf(r.Content))
	}
	// Output:
	// {"type":"object","properties":{"a":{"type":"number","description":"the first addend"},"b":{"type":"number","description":"the second addend"}},"required":["a","b"],"additionalProperties":false}
	// toolu_1 false 8
	// toolu_2 true invalid input for tool "add": missing required field "b"
	// toolu_3 true invalid input for tool "add": 3 problems:
	// - field "a": got string, want number
	// - missing required field "b"
	// - unknown field "c"; use only the fields in the input schema
}
