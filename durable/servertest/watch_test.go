package servertest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
)

// recorded counts the signals of streamed text and the updates in the history of the workflow
// run runID of id.
func recorded(t *testing.T, c client.Client, id, runID string) (signals, updates int) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		switch ev.EventType {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if ev.GetWorkflowExecutionSignaledEventAttributes().SignalName == "agentloop.stream" {
				signals++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
			updates++
		}
	}
	return signals, updates
}

// TestUnwatched: a run that no one watches records no signal and no update
// in its history, and its events, its text whole, are still there for a
// caller who reads them after it ended; a run that is watched records its
// text batches, and its polls not at all.
func TestUnwatched(t *testing.T) {
	replies := func() []anthropictest.Reply {
		return []anthropictest.Reply{
			anthropictest.NewStream().Text("Adding.").ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Stop("tool_use"),
			anthropictest.NewStream().Text("It ", "is ", "3.").Stop("end_turn"),
		}
	}
	e := newEnv(t, append(replies(), replies()...)...)
	add, _ := adder()
	e.worker(t, "watch", Config{}, add)
	// kinds joins the text of events in a row, which batches may split.
	kinds := func(evs []Event) string {
		var out []string
		text := false
		for _, ev := range evs {
			if ev.Text != "" && text {
				out[len(out)-1] += ev.Text
				continue
			}
			text = ev.Text != ""
			switch {
			case text:
				out = append(out, ev.Text)
			case ev.ToolCall != nil:
				out = append(out, "call "+ev.ToolCall.Name)
			case ev.ToolDone != nil:
				out = append(out, "done "+ev.ToolDone.ToolUseID)
			}
		}
		return strings.Join(out, "|")
	}

	res := e.run(t, "unwatched", "watch", Input{Prompt: "What is 1+2?"})
	if signals, updates := recorded(t, e.c, "unwatched", ""); signals != 0 || updates != 0 {
		t.Errorf("the unwatched run recorded %d signals and %d updates, want none", signals, updates)
	}
	var evs []Event
	for ev, err := range Stream(context.Background(), e.c, "unwatched") {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if got, want := kinds(evs), "Adding.|call add|done toolu_1|It is 3."; got != want {
		t.Errorf("events read after the run: %s, want %s", got, want)
	}
	if len(evs) == 0 || evs[len(evs)-1].Done != agent.Finished || res.Text != "It is 3." {
		t.Errorf("the events end %+v, the result is %q; want %s, %q", evs[len(evs)-1:], res.Text, agent.Finished, "It is 3.")
	}

	watched, wres := e.streamRun(t, "watched", "watch", Input{Prompt: "What is 1+2?"})
	if diff := cmp.Diff(kinds(evs), kinds(watched)); diff != "" {
		t.Errorf("the watched run's events differ (-unwatched +watched):\n%s", diff)
	}
	if signals, updates := recorded(t, e.c, "watched", ""); signals == 0 || updates != 0 {
		t.Errorf("the watched run recorded %d signals and %d updates, want its batches and no update", signals, updates)
	}
	if wres.Text != res.Text {
		t.Errorf("watched result %q, want %q", wres.Text, res.Text)
	}
}
