package servertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/tool"
)

// reviewer is a subagent whose only tool is add, on model.
func reviewer(t testing.TB, add *tool.Tool, model string) subagent.Agent {
	t.Helper()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(add); err != nil {
		t.Fatal(err)
	}
	return subagent.Agent{Name: "reviewer", Description: "reviews code", Config: agent.Config{
		Model: llm.New(llm.Config{}), System: "You review code.", Registry: reg,
		History: memory.New(memory.Config{Model: model}),
	}}
}

// taskCall is a call of the task tool that gives the reviewer prompt.
func taskCall(id, agentName, prompt string) *anthropictest.Stream {
	in, _ := json.Marshal(map[string]string{"description": "review", "prompt": prompt, "subagent_type": agentName})
	return anthropictest.NewStream().ToolUse(id, subagent.ToolName, string(in)).Stop("tool_use")
}

// requestTools returns the names of the tools a request offers.
func requestTools(t testing.TB, p *anthropictest.Params) []string {
	t.Helper()
	var names []string
	for _, raw := range p.Tools {
		var spec struct{ Name string }
		if err := json.Unmarshal(raw, &spec); err != nil {
			t.Fatal(err)
		}
		names = append(names, spec.Name)
	}
	return names
}

func TestSubagentChildWorkflow(t *testing.T) {
	const childModel = "claude-haiku-4-5"
	e := newEnv(t,
		taskCall("toolu_1", "reviewer", "Review main.go."),
		anthropictest.NewStream().Text("main.go looks fine.").Stop("end_turn"),
		anthropictest.NewStream().Text("The reviewer says it is fine.").Stop("end_turn"),
	)
	add, _ := adder()
	other := tool.Must(tool.New("shout", "shouts", func(ctx context.Context, in struct{}) (string, error) { return "!", nil }))
	e.worker(t, "q", Config{Agents: []subagent.Agent{reviewer(t, add, childModel)}}, add, other)
	res := e.run(t, "sub", "q", Input{Prompt: "Have main.go reviewed."})

	if res.State != agent.Finished || res.Text != "The reviewer says it is fine." {
		t.Errorf("result = %+v, want finished with the parent's answer", res.Result)
	}
	want := llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: "main.go looks fine."}}}
	if diff := cmp.Diff(want, res.History[2].Content[0]); diff != "" {
		t.Errorf("the task call's result (-want +got):\n%s", diff)
	}
	reqs := e.api.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	parent, err := reqs[0].Params()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"add", "shout", "task"}, requestTools(t, parent)); diff != "" {
		t.Errorf("the parent's tools (-want +got):\n%s", diff)
	}
	child, err := reqs[1].Params()
	if err != nil {
		t.Fatal(err)
	}
	if child.Model != childModel || !strings.Contains(string(child.System), "You review code.") ||
		len(child.Messages) != 1 || child.Messages[0].Text != "Review main.go." {
		t.Errorf("the child's request: model %s, system %s, messages %+v; want %s, the reviewer's prompt, and the task's prompt alone",
			child.Model, child.System, child.Messages, childModel)
	}
	if diff := cmp.Diff([]string{"add"}, requestTools(t, child)); diff != "" {
		t.Errorf("the child's tools (-want +got):\n%s", diff)
	}
	// Three turns of 10 input tokens each: the child's counts.
	if res.Usage.InputTokens != 30 {
		t.Errorf("usage = %+v, want the three turns', the child's included", res.Usage)
	}
	if _, err := e.c.DescribeWorkflowExecution(context.Background(), "sub/task/toolu_1", ""); err != nil {
		t.Errorf("the child workflow: %v", err)
	}
	e.checkRequests(t)
}

func TestSubagentBadCalls(t *testing.T) {
	for _, tc := range []struct {
		name, agent, prompt, want string
	}{
		{"unknown agent", "writer", "Write.", `unknown subagent_type "writer"; the agents are reviewer`},
		{"blank prompt", "reviewer", " ", "the prompt is blank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, taskCall("toolu_1", tc.agent, tc.prompt), anthropictest.NewStream().Text("Sorry.").Stop("end_turn"))
			add, _ := adder()
			e.worker(t, "q", Config{Agents: []subagent.Agent{reviewer(t, add, "")}}, add)
			res := e.run(t, "sub", "q", Input{Prompt: "Delegate."})
			got, _ := res.History[2].Content[0].(llm.ToolResult)
			if !got.IsError || !strings.Contains(llm.TextOf(got.Content), tc.want) {
				t.Errorf("result = %+v, want an is_error result saying %q", got, tc.want)
			}
			if n := len(e.api.Requests()); n != 2 {
				t.Errorf("%d model requests, want 2: no child ran", n)
			}
		})
	}
}
