package memory_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/memory"
)

// The strategy follows the model: Opus 5.5 compacts on the server, with
// context editing first; the requests ask for both.
func ExampleHistory_ContextManagement() {
	h := memory.New(memory.Config{Model: "claude-opus-5-5", ContextLimit: 100_000})
	cm, _ := json.Marshal(h.ContextManagement(false))
	fmt.Println(string(cm))
	// Output:
	// [{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":50000},"keep":{"type":"tool_uses","value":4},"clear_at_least":{"type":"input_tokens","value":10000}},{"type":"compact_20260112","trigger":{"type":"input_tokens","value":80000}}]
}
