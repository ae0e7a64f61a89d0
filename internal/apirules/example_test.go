package apirules_test

import (
	"fmt"

	"github.com/agentloop/agentloop/internal/apirules"
)

// A tool_use left unanswered is the mistake an interrupted run makes; Check
// names the rule it breaks and where.
func ExampleCheck() {
	msgs := []apirules.Message{
		{Role: "user", Content: []apirules.Block{{Type: "text", Text: "What is 3 + 5?"}}},
		{Role: "assistant", Content: []apirules.Block{{Type: "tool_use", ID: "toolu_1", Name: "add", Input: []byte(`{"a":3,"b":5}`)}}},
		{Role: "user", Content: []apirules.Block{{Type: "text", Text: "and times 12?"}}},
	}
	for _, v := range apirules.Check(msgs) {
		fmt.Printf("%s at message %d\n", v.Rule, v.Message)
	}
	// Output:
	// tool-unanswered at message 1
}
