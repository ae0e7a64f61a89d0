package subagent_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/tool"
)

// A main agent that hands a review to a reviewer subagent. Two fake APIs
// play the two models; against the real one, give both llm.Configs an
// APIKey (one client serves both).
func Example() {
	main := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "task",
			`{"description": "review the patch", "prompt": "Review this patch: x := 1/0", "subagent_type": "reviewer"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("The reviewer found a division by zero.").Stop("end_turn"),
	)
	defer main.Close()
	sub := anthropictest.NewServer(anthropictest.NewStream().Text("Bug: division by zero.").Stop("end_turn"))
	defer sub.Close()

	task, err := subagent.Tool(subagent.Agent{
		Name:        "reviewer",
		Description: "Reviews a patch for bugs.",
		Config:      agent.Config{Model: llm.New(llm.Config{BaseURL: sub.URL}), System: "You review code. Report bugs only."},
	})
	if err != nil {
		panic(err)
	}
	a, err := agent.New(agent.Config{Model: llm.New(llm.Config{BaseURL: main.URL}), Tools: []*tool.Tool{task}})
	if err != nil {
		panic(err)
	}
	for ev, err := range a.Stream(context.Background(), "Review my patch.") {
		switch ev := ev.(type) {
		case agent.Nested:
			if r, ok := ev.Event.(agent.Result); ok {
				fmt.Printf("  [%s for %s] %s\n", ev.Agent, ev.ParentID, r.Text)
			}
		case agent.ToolDone:
			fmt.Printf("%s: %s\n", ev.Name, ev.Content)
		case agent.Result:
			fmt.Println(ev.Text, err)
		}
	}
	// Output:
	//   [reviewer for toolu_1] Bug: division by zero.
	// task: Bug: division by zero.
	// The reviewer found a division by zero. <nil>
}
