package servertest

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/tool"
)

// TestQueueRunsInOrder: the calls of two tools that share a Queue (a write
// and an edit of one file) run one after another in tool_use order, as they
// do in process. While the write runs, the workflow, having acted on the
// whole turn, has scheduled no other call.
func TestQueueRunsInOrder(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "write", `{}`).ToolUse("toolu_2", "edit", `{}`).Stop("tool_use"),
		anthropictest.NewStream().Text("Done.").Stop("end_turn"),
	)
	var mu sync.Mutex
	var ran []string
	note := func(s string) { mu.Lock(); ran = append(ran, s); mu.Unlock() }
	release := make(chan struct{})
	write := tool.Must(tool.New("write", "writes the file", func(ctx context.Context, _ none) (string, error) {
		note("write started")
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		note("write ended")
		return "written", nil
	}))
	edit := tool.Must(tool.New("edit", "edits the file", func(ctx context.Context, _ none) (string, error) {
		note("edit")
		return "edited", nil
	}))
	write.Queue, edit.Queue = "file", "file"
	e.worker(t, "queue", Config{}, write, edit)
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "queue", TaskQueue: "queue"}, WorkflowName, Input{Prompt: "write, then edit"})
	if err != nil {
		t.Fatal(err)
	}

	// Wait for the workflow task that acts on the completed model turn: its
	// commands, in the history with it, schedule every call that may start.
	turned, acted := completed("agentloop.ModelTurn"), false
	waitEvent(t, e.c, "queue", func(ev *historypb.HistoryEvent) bool {
		if turned(ev) {
			acted = true
			return false
		}
		return acted && ev.GetWorkflowTaskCompletedEventAttributes() != nil
	})
	var scheduled []string
	it := e.c.GetWorkflowHistory(context.Background(), "queue", "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.ActivityType.GetName() == "agentloop.CallTool" {
			scheduled = append(scheduled, a.ActivityId)
		}
	}
	if len(scheduled) != 1 {
		t.Errorf("calls scheduled while the write runs: %q, want only the write's", scheduled)
	}
	close(release)

	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Text != "Done." {
		t.Errorf("text = %q, want Done.", res.Text)
	}
	if diff := cmp.Diff([]string{"write started", "write ended", "edit"}, ran); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	e.checkRequests(t)
}
