package servertest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

type deployIn struct {
	Env string `json:"env"`
}

// deployer returns a deploy tool and the count of its runs.
func deployer() (*tool.Tool, *atomic.Int32) {
	var n atomic.Int32
	return tool.Must(tool.New("deploy", "deploys", func(ctx context.Context, in deployIn) (string, error) {
		n.Add(1)
		return "deployed to " + in.Env, nil
	})), &n
}

// waiting returns an event test that is true once the workflow has
// finished the task after its model turn: the call then waits.
func waiting() func(*historypb.HistoryEvent) bool {
	turn := completed("agentloop.ModelTurn")
	seen := false
	return func(ev *historypb.HistoryEvent) bool {
		if !seen {
			seen = turn(ev)
			return false
		}
		return ev.GetWorkflowTaskCompletedEventAttributes() != nil
	}
}

// TestApprovalSurvivesWorker: a call waits for approval; its worker goes
// away; a new worker gets the decision and finishes the run. The call runs
// once, on the new worker, or not at all when denied.
func TestApprovalSurvivesWorker(t *testing.T) {
	tests := []struct {
		name     string
		decision Decision
		ran      int32
		result   string
	}{
		{"allowed", Decision{CallID: "toolu_1", Allow: true}, 1, "deployed to prod"},
		{"denied", Decision{CallID: "toolu_1", Reason: "not on a Friday"}, 0, "denied: not on a Friday"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.api.Enqueue(
				anthropictest.NewStream().ToolUse("toolu_1", "deploy", `{"env":"prod"}`).Stop("tool_use"),
				anthropictest.NewStream().Text("Done.").Stop("end_turn"),
			)
			queue, id := "approve-"+tt.name, "approve-"+tt.name
			before, ranBefore := deployer()
			w1 := e.worker(t, queue, Config{}, before)
			wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue},
				WorkflowName, Input{Prompt: "deploy to prod", Approve: []string{"deploy"}})
			if err != nil {
				t.Fatal(err)
			}
			waitEvent(t, e.c, id, waiting())
			calls, err := Pending(context.Background(), e.c, id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]llm.ToolUse{{ID: "toolu_1", Name: "deploy", Input: []byte(`{"env":"prod"}`)}}, calls); diff != "" {
				t.Errorf("pending calls (-want +got):\n%s", diff)
			}
			if err := Approve(context.Background(), e.c, id, Decision{CallID: "toolu_9", Allow: true}); err == nil || !strings.Contains(err.Error(), "toolu_9") {
				t.Errorf("approving an unknown call: err = %v, want one naming it", err)
			}
			w1.Stop()

			after, ranAfter := deployer()
			e.worker(t, queue, Config{}, after)
			if err := Approve(context.Background(), e.c, id, tt.decision); err != nil {
				t.Fatal(err)
			}
			var res Result
			if err := wr.Get(context.Background(), &res); err != nil {
				t.Fatal(err)
			}
			if res.State != agent.Finished {
				t.Errorf("state = %s, want finished", res.State)
			}
			if n := ranBefore.Load(); n != 0 {
				t.Errorf("the old worker ran deploy %d times", n)
			}
			if n := ranAfter.Load(); n != tt.ran {
				t.Errorf("deploy ran %d times, want %d", n, tt.ran)
			}
			reqs := e.api.Requests()
			got := reqs[len(reqs)-1].ToolResults()
			if len(got) != 1 || got[0].Content[0].Text != tt.result {
				t.Errorf("tool result = %+v, want %q", got, tt.result)
			}
		})
	}
	e.checkRequests(t)
}
