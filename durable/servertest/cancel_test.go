package servertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// TestCutShort: a run cancelled by its caller, or out of time, while a
// tool runs ends in that state, with the call answered as cancelled and the
// turn marked interrupted, as the in-process loop leaves it.
func TestCutShort(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{}, 1)
	wait := tool.Must(tool.New("wait", "waits until cancelled", func(ctx context.Context, _ none) (string, error) {
		select {
		case started <- struct{}{}:
		default: // a call the test does not wait for
		}
		<-ctx.Done()
		return "", ctx.Err()
	}))
	e.worker(t, "cut", Config{}, wait)
	check := func(t *testing.T, res Result, state agent.State) {
		t.Helper()
		if res.State != state {
			t.Errorf("state = %s, want %s", res.State, state)
		}
		h := res.History
		if len(h) != 4 || llm.TextOf(h[2].Content[0].(llm.ToolResult).Content) != "cancelled" || llm.TextOf(h[3].Content) != "[interrupted]" {
			t.Errorf("history = %+v, want the call cancelled and the turn interrupted", h)
		}
	}
	// start starts a run and returns its result to come.
	start := func(t *testing.T, id string, in Input) <-chan Result {
		t.Helper()
		e.api.Enqueue(anthropictest.NewStream().ToolUse("toolu_1", "wait", `{}`).Stop("tool_use"))
		in.Prompt, in.Heartbeat = "wait", 5*time.Second
		wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: "cut"}, WorkflowName, in)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan Result, 1)
		go func() {
			var res Result
			if err := wr.Get(context.Background(), &res); err != nil {
				res.State = agent.State("failed: " + err.Error()) // for check to report
			}
			done <- res
		}()
		return done
	}

	t.Run("cancelled", func(t *testing.T) {
		const id = "cut-cancelled"
		done := start(t, id, Input{})
		select {
		case <-started:
		case res := <-done:
			t.Fatalf("the run ended before its tool started: %+v", res)
		}
		// The call starts while the model's turn streams: wait until the
		// workflow has the turn too, so the cancel cuts a running call
		// short rather than the turn it came in.
		waitEvent(t, e.c, id, completed("agentloop.ModelTurn"))
		if err := e.c.CancelWorkflow(context.Background(), id, ""); err != nil {
			t.Fatal(err)
		}
		check(t, <-done, agent.Cancelled)
	})

	// The time limit counts from the run's start on the server's clock, so
	// on a loaded machine it may pass before the model's turn completes:
	// the run is then cut short in its turn, another case, which proves
	// nothing here. The history tells which came first, and such a run is
	// tried again with twice the time.
	t.Run("time limit", func(t *testing.T) {
		for limit, attempt := 2*time.Second, 1; ; limit, attempt = 2*limit, attempt+1 {
			id := fmt.Sprintf("cut-time-limit-%d", attempt)
			done := start(t, id, Input{MaxDuration: limit})
			res := <-done
			turnFirst := false
			turn := completed("agentloop.ModelTurn")
			waitEvent(t, e.c, id, func(ev *historypb.HistoryEvent) bool {
				turnFirst = turn(ev)
				return turnFirst || ev.GetTimerFiredEventAttributes() != nil
			})
			if turnFirst {
				check(t, res, agent.TimeLimit)
				return
			}
			if attempt == 5 {
				t.Fatalf("the time limit passed before the model's turn completed %d times, the last with %v", attempt, limit)
			}
			t.Logf("the time limit of %v passed before the model's turn completed; trying again with %v", limit, 2*limit)
		}
	})
	e.checkRequests(t)
}
