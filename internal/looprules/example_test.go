package looprules_test

import (
	"fmt"

	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/llm"
)

// The third identical call in a row is answered by the loop, not run.
func ExampleCheck() {
	var rep looprules.Repeats
	call := llm.ToolUse{ID: "toolu_1", Name: "bash", Input: []byte(`{"command":"ls"}`)}
	for range 3 {
		if why, skip := looprules.Check(&rep, 3, call, false); skip {
			fmt.Println(why[:52])
		} else {
			fmt.Println("run")
		}
	}
	// Output:
	// run
	// run
	// not run: you called this tool with this same input 3
}
