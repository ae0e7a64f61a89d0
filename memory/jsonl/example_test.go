package jsonl_test

import (
	"bytes"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
)

// A history written and read back keeps the exact token count the API
// reported, so a resumed session counts as the one it continues.
func Example() {
	h := memory.New(memory.Config{Model: "claude-sonnet-4-5"})
	h.AppendUser(llm.Text{Text: "What is 2+3?"})
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "5"}}},
		llm.Usage{InputTokens: 400, OutputTokens: 1})

	var file bytes.Buffer // jsonl.Save(path, h) writes a file
	if err := jsonl.Encode(&file, h); err != nil {
		panic(err)
	}
	fmt.Print(file.String())
	resumed, err := jsonl.Decode(&file, memory.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(resumed.Messages()), resumed.Tokens())
	// Output:
	// {"role":"user","content":[{"type":"text","text":"What is 2+3?"}]}
	// {"role":"assistant","content":[{"type":"text","text":"5"}],"usage":{"input_tokens":400,"output_tokens":1},"model":"claude-sonnet-4-5","tokens":401}
	// 2 401
}
