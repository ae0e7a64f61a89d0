package servertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

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
	denyTask := func(ctx context.Context, call llm.ToolUse, approved bool) error {
		if call.Name == subagent.ToolName {
			return errors.New("no delegation here")
		}
		return nil
	}
	for _, tc := range []struct {
		name, agent, prompt string
		approve             func(context.Context, llm.ToolUse, bool) error
		want                string
	}{
		{"unknown agent", "writer", "Write.", nil, `unknown subagent_type "writer"; the agents are reviewer`},
		{"blank prompt", "reviewer", " ", nil, "the prompt is blank"},
		{"denied by the worker", "reviewer", "Review.", denyTask, "denied: no delegation here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, taskCall("toolu_1", tc.agent, tc.prompt), anthropictest.NewStream().Text("Sorry.").Stop("end_turn"))
			add, _ := adder()
			e.worker(t, "q", Config{Agents: []subagent.Agent{reviewer(t, add, "")}, Approve: tc.approve}, add)
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

// TestSubagentLimit: a child that hits its iteration limit gives an
// is_error result that says so, with its last text.
func TestSubagentLimit(t *testing.T) {
	e := newEnv(t,
		taskCall("toolu_1", "reviewer", "Review."),
		anthropictest.NewStream().Text("Adding first.").ToolUse("toolu_2", "add", `{"a":1,"b":2}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It failed.").Stop("end_turn"),
	)
	add, _ := adder()
	sub := reviewer(t, add, "")
	sub.Config.MaxIterations = 1
	e.worker(t, "q", Config{Agents: []subagent.Agent{sub}}, add)
	res := e.run(t, "sub", "q", Input{Prompt: "Delegate."})
	got, _ := res.History[2].Content[0].(llm.ToolResult)
	want := `agent "reviewer" stopped without a final answer: iteration_limit; its last text:` + "\n\nAdding first."
	if !got.IsError || llm.TextOf(got.Content) != want {
		t.Errorf("result = %+v, want an is_error result %q", got, want)
	}
}

// crashAgents is the crash test's subagent: a worker whose only tool is
// the registry's second.
func crashAgents(reg *tool.Registry) ([]subagent.Agent, error) {
	second, _ := reg.Lookup("second")
	own := tool.NewRegistry(tool.Config{})
	if err := own.Register(second); err != nil {
		return nil, err
	}
	return []subagent.Agent{{Name: "worker", Description: "does the slow work", Config: agent.Config{
		Model: llm.New(llm.Config{}), System: "You do the slow work.", Registry: own}}}, nil
}

// TestSubagentWorkerKilled kills the worker while a subagent's tool runs
// in its child workflow, and finishes the run on a new worker: the child
// goes on from where it was, its completed model turn not asked again, and
// the parent gets its answer.
func TestSubagentWorkerKilled(t *testing.T) {
	e := newEnv(t,
		taskCall("toolu_1", "worker", "Do the slow work."),
		anthropictest.NewStream().ToolUse("toolu_2", "second", `{}`).Stop("tool_use"),
		anthropictest.NewStream().Text("The slow work is done.").Stop("end_turn"),
		anthropictest.NewStream().Text("It is done.").Stop("end_turn"),
	)
	const id = "kill-sub"
	dir := t.TempDir()
	started, kill := startWorker(t, e, id, dir, envAgents+"=1")
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: id},
		WorkflowName, Input{Prompt: "Delegate the slow work.", Heartbeat: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	kill()
	w := newCrashWorker(t, e, id, dir, true)
	defer w.Stop()

	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Text != "It is done." {
		t.Errorf("text = %q, want %q", res.Text, "It is done.")
	}
	want := llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: "The slow work is done."}}}
	if diff := cmp.Diff(want, res.History[2].Content[0]); diff != "" {
		t.Errorf("the task call's result (-want +got):\n%s", diff)
	}
	ran, err := os.ReadFile(filepath.Join(dir, "ran"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(ran)); !sameCounts(got, []string{"second", "second"}) {
		t.Errorf("tools ran %q, want second twice: once on each worker", got)
	}
	if n := len(e.api.Requests()); n != 4 {
		t.Errorf("%d model requests, want 4: no turn asked twice", n)
	}
	// One child, which the new worker's replay found rather than started.
	children := 0
	it := e.c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil {
			children++
		}
	}
	if children != 1 {
		t.Errorf("%d child workflows started, want 1", children)
	}
	e.checkRequests(t)
}

// TestSubagentContinueAsNew: a run that continues as new between two
// delegations keeps its subagents and counts both children's tokens.
func TestSubagentContinueAsNew(t *testing.T) {
	e := newEnv(t,
		taskCall("toolu_1", "reviewer", "Review a.go."),
		anthropictest.NewStream().Text("a.go is fine.").Stop("end_turn"),
		taskCall("toolu_2", "reviewer", "Review b.go."),
		anthropictest.NewStream().Text("b.go is fine.").Stop("end_turn"),
		anthropictest.NewStream().Text("Both are fine.").Stop("end_turn"),
	)
	add, _ := adder()
	e.worker(t, "q", Config{Agents: []subagent.Agent{reviewer(t, add, "")}}, add)
	res := e.run(t, "sub", "q", Input{Prompt: "Have a.go and b.go reviewed.", TurnsPerRun: 1})

	if res.Text != "Both are fine." || res.Runs != 3 {
		t.Errorf("result = %+v (%d runs), want the final answer after 3 runs", res.Result, res.Runs)
	}
	var got []string
	for _, m := range res.History {
		for _, b := range m.Content {
			if r, ok := b.(llm.ToolResult); ok {
				got = append(got, llm.TextOf(r.Content))
			}
		}
	}
	if diff := cmp.Diff([]string{"a.go is fine.", "b.go is fine."}, got); diff != "" {
		t.Errorf("the task calls' results (-want +got):\n%s", diff)
	}
	// Five turns of 10 input tokens each, two of them the children's.
	if res.Usage.InputTokens != 50 {
		t.Errorf("usage = %+v, want five turns' input tokens", res.Usage)
	}
	e.checkRequests(t)
}

// TestSubagentParentLimits: what is left of the run's token limit bounds
// its child, a run with nothing left starts none, and the child's tokens
// count in the run's later checks of its limit: the run stops without
// another turn.
func TestSubagentParentLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int64
		requests int
		want     string
	}{
		// Each turn uses 10 input tokens and a few output ones: at 20,
		// the child has less than a turn's left after its first, and
		// the parent none; at 11, the parent's first turn uses it all.
		{"the child stops at what is left", 20, 2, `agent "reviewer" stopped without a final answer: token_limit`},
		{"nothing left", 11, 1, "not run: the run has used up its time, tokens or budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				taskCall("toolu_1", "reviewer", "Review."),
				anthropictest.NewStream().ToolUse("toolu_2", "add", `{"a":1,"b":2}`).Stop("tool_use"),
				anthropictest.NewStream().Text("Stopped.").Stop("end_turn"),
				anthropictest.NewStream().Text("Unused.").Stop("end_turn"),
			)
			add, _ := adder()
			e.worker(t, "q", Config{Agents: []subagent.Agent{reviewer(t, add, "")}}, add)
			res := e.run(t, "sub", "q", Input{Prompt: "Delegate.", MaxTotalTokens: tc.max})
			got, _ := res.History[2].Content[0].(llm.ToolResult)
			if !got.IsError || !strings.HasPrefix(llm.TextOf(got.Content), tc.want) {
				t.Errorf("result = %+v, want an is_error result %q", got, tc.want)
			}
			if n := len(e.api.Requests()); n != tc.requests {
				t.Errorf("%d model requests, want %d", n, tc.requests)
			}
			if res.State != agent.TokenLimit || res.Usage.Context() < tc.max {
				t.Errorf("the run ended %s with %d tokens, want %s at %d or more", res.State, res.Usage.Context(), agent.TokenLimit, tc.max)
			}
		})
	}
}

// TestSubagentCancelled: cancelling a run while its child's tool runs
// cancels the child too; the task call is answered as cancelled.
func TestSubagentCancelled(t *testing.T) {
	e := newEnv(t,
		taskCall("toolu_1", "reviewer", "Wait."),
		anthropictest.NewStream().ToolUse("toolu_2", "wait", `{}`).Stop("tool_use"),
	)
	started := make(chan struct{})
	wait := tool.Must(tool.New("wait", "waits until cancelled", func(ctx context.Context, _ none) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	e.worker(t, "q", Config{Agents: []subagent.Agent{reviewer(t, wait, "")}}, wait)
	const id = "sub-cancel"
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: "q"},
		WorkflowName, Input{Prompt: "Delegate.", Heartbeat: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	waitEvent(t, e.c, id+"/task/toolu_1", completed("agentloop.ModelTurn"))
	if err := e.c.CancelWorkflow(context.Background(), id, ""); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	got, _ := res.History[2].Content[0].(llm.ToolResult)
	if res.State != agent.Cancelled || llm.TextOf(got.Content) != "cancelled" {
		t.Errorf("state %s, task result %+v; want cancelled, and the call answered as cancelled", res.State, got)
	}
	child, err := e.c.DescribeWorkflowExecution(context.Background(), id+"/task/toolu_1", "")
	if err != nil {
		t.Fatal(err)
	}
	if s := child.WorkflowExecutionInfo.Status; s == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("the child is %s after its parent was cancelled", s)
	}
}

// TestSubagentEventsRelayed: Stream relays a sub-run's events, marked with
// the task call's id and the agent's name, after the call and before its
// result, whether it reads the run while it runs or after it ended. The
// sub-run's last carries its Result, as an in-process subagent's does:
// its answer, model turns and usage.
func TestSubagentEventsRelayed(t *testing.T) {
	want := []string{
		"turn 1", "call task",
		"reviewer@toolu_1: turn 1", "reviewer@toolu_1: call add", "reviewer@toolu_1: done toolu_2",
		"reviewer@toolu_1: turn 2", "reviewer@toolu_1: text It is 3.", "reviewer@toolu_1: end finished",
		"done toolu_1", "turn 2", "text The reviewer says 3.", "end finished",
	}
	for _, live := range []bool{true, false} {
		t.Run(fmt.Sprintf("live=%t", live), func(t *testing.T) {
			e := newEnv(t,
				taskCall("toolu_1", "reviewer", "Add 1 and 2."),
				anthropictest.NewStream().ToolUse("toolu_2", "add", `{"a":1,"b":2}`).Stop("tool_use"),
				anthropictest.NewStream().Text("It is 3.").Stop("end_turn"),
				anthropictest.NewStream().Text("The reviewer says 3.").Stop("end_turn"),
			)
			add, _ := adder()
			e.worker(t, "q", Config{Agents: []subagent.Agent{reviewer(t, add, "")}}, add)
			in := Input{Prompt: "Delegate."}
			if live {
				in.Stream = true
				if _, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "sub", TaskQueue: "q"}, WorkflowName, in); err != nil {
					t.Fatal(err)
				}
			} else {
				e.run(t, "sub", "q", in)
			}
			var got []string
			var results []agent.Result // of the sub-run's Done, then the run's
			for ev, err := range Stream(context.Background(), e.c, "sub") {
				if err != nil {
					t.Fatal(err)
				}
				var s string
				switch {
				case ev.Turn > 0:
					s = fmt.Sprintf("turn %d", ev.Turn)
				case ev.Text != "":
					s = "text " + ev.Text
				case ev.ToolCall != nil:
					s = "call " + ev.ToolCall.Name
				case ev.ToolDone != nil:
					s = "done " + ev.ToolDone.ToolUseID
				case ev.Done != "":
					s = "end " + string(ev.Done)
					if ev.Result == nil {
						t.Fatalf("%s: Done without its Result", s)
					}
					results = append(results, *ev.Result)
				default:
					continue
				}
				if ev.ParentID != "" {
					s = ev.Agent + "@" + ev.ParentID + ": " + s
				}
				// Batches of streamed text are joined.
				if n := len(got); n > 0 && strings.HasPrefix(s, "text ") && strings.HasPrefix(got[n-1], "text ") {
					got[n-1] += strings.TrimPrefix(s, "text ")
					continue
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// Turns of 10 input tokens each: two in the sub-run, four in all.
			if len(results) != 2 {
				t.Fatalf("%d results, want the sub-run's and the run's", len(results))
			}
			for i, w := range []struct {
				text       string
				iterations int
				input      int64
			}{{"It is 3.", 2, 20}, {"The reviewer says 3.", 2, 40}} {
				r := results[i]
				if r.State != agent.Finished || r.Text != w.text || r.Iterations != w.iterations || r.Usage.InputTokens != w.input {
					t.Errorf("result %d = %+v, want finished with %q after %d turns and %d input tokens", i, r, w.text, w.iterations, w.input)
				}
			}
		})
	}
}
