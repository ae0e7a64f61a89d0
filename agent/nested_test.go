package agent

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/tool"
)

// TestRelay checks the seam a subagent's events take: what a tool call
// relays reaches the run's stream as Nested, marked with the call's id,
// while the run waits for the call (the call returns only once the reader
// has seen it) and before its ToolDone; outside a call, Relay does nothing.
func TestRelay(t *testing.T) {
	_, model := fake(t,
		anthropictest.NewStream().ToolUse("toolu_1", "inner", `{}`).Stop("tool_use"),
		anthropictest.NewStream().Text("done").Stop("end_turn"))
	seen := make(chan struct{})
	inner := tool.Must(tool.New("inner", "Run an inner agent.", func(ctx context.Context, _ struct{}) (string, error) {
		Relay(context.Background(), "lost", TextDelta{Text: "not in a call"})
		Relay(ctx, "helper", TextDelta{Text: "working"})
		Relay(ctx, "helper", Nested{ParentID: "toolu_9", Agent: "deeper", Event: TurnStart{Iteration: 1}})
		select {
		case <-seen:
			return CallID(ctx), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	a := newAgent(t, model, Config{Tools: []*tool.Tool{inner}})
	var got []Event
	for ev, err := range a.Stream(t.Context(), "go") {
		switch ev := ev.(type) {
		case Nested:
			got = append(got, ev)
			if _, ok := ev.Event.(Nested); ok {
				close(seen)
			}
		case ToolDone:
			ev.Duration = 0 // the call's own time, which varies
			got = append(got, ev)
		case Result:
			if err != nil || ev.State != Finished {
				t.Fatalf("run = %s, %v", ev.State, err)
			}
		}
	}
	want := []Event{
		Nested{ParentID: "toolu_1", Agent: "helper", Event: TextDelta{Text: "working"}},
		Nested{ParentID: "toolu_1", Agent: "helper", Event: Nested{ParentID: "toolu_9", Agent: "deeper", Event: TurnStart{Iteration: 1}}},
		ToolDone{ID: "toolu_1", Name: "inner", Content: "toolu_1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
