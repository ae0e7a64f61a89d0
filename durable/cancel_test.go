package durable

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/looprules"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// TestCutShort: a run cancelled by its caller, or out of time, while a
// tool runs ends in that state, with the call answered as cancelled and the
// turn marked interrupted, as the in-process loop leaves it.
func TestCutShort(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{}, 2)
	type none struct{}
	wait := tool.Must(tool.New("wait", "waits until cancelled", func(ctx context.Context, _ none) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	e.worker(t, "cut", Config{}, wait)
	for _, tt := range []struct {
		name  string
		in    Input
		state agent.State
	}{
		{"cancelled", Input{}, agent.Cancelled},
		{"time limit", Input{MaxDuration: 2 * time.Second}, agent.TimeLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.api.Enqueue(anthropictest.NewStream().ToolUse("toolu_1", "wait", `{}`).Stop("tool_use"))
			in := tt.in
			in.Prompt, in.Heartbeat = "wait", time.Second
			id := "cut-" + string(tt.state)
			wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: "cut"}, WorkflowName, in)
			if err != nil {
				t.Fatal(err)
			}
			<-started
			// The call starts while the model's turn streams: wait until the
			// workflow has the turn too, so the cancel cuts a running call
			// short rather than the turn it came in.
			waitEvent(t, e.c, id, completed(activityModelTurn))
			if tt.state == agent.Cancelled {
				if err := e.c.CancelWorkflow(context.Background(), id, ""); err != nil {
					t.Fatal(err)
				}
			}
			var res Result
			if err := wr.Get(context.Background(), &res); err != nil {
				t.Fatal(err)
			}
			if res.State != tt.state {
				t.Errorf("state = %s, want %s", res.State, tt.state)
			}
			h := res.History
			if len(h) != 4 || llm.TextOf(h[2].Content[0].(llm.ToolResult).Content) != "cancelled" || llm.TextOf(h[3].Content) != looprules.Interrupted {
				t.Errorf("history = %+v, want the call cancelled and the turn interrupted", h)
			}
		})
	}
	e.checkRequests(t)
}
