package servertest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
)

// TestStream: the caller sees the answer in batches while it streams, the
// tool call and its result, and the end, across a continue-as-new. The
// answer is two text blocks, and the model holds the second until the
// caller has seen text: a worker that sent the text only at the turn's end
// would never get there, so the answer comes in at least two batches
// whatever the machine's speed.
func TestStream(t *testing.T) {
	first, second := strings.Fields("one two three four five six"), strings.Fields("seven eight nine ten eleven twelve")
	words := append(slices.Clone(first), second...)
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Stop("tool_use"),
		anthropictest.NewStream().Text(first...).Text(second...).Stop("end_turn"),
	)
	seen := make(chan struct{})
	add, _ := adder()
	e.worker(t, "stream", Config{Model: holdAfterFirst[llm.TextDelta](llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1}), seen)}, add)
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "stream", TaskQueue: "stream"},
		WorkflowName, Input{Prompt: "count", Stream: true, TurnsPerRun: 1})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var batches, seq int
	var kinds []string
	for ev, err := range Stream(context.Background(), e.c, "stream") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != seq+1 {
			t.Errorf("event %d follows %d", ev.Seq, seq)
		}
		seq = ev.Seq
		switch {
		case ev.Text != "":
			if batches++; batches == 1 {
				close(seen) // the second block may come
			}
			text.WriteString(ev.Text)
			if len(kinds) == 0 || kinds[len(kinds)-1] != "text" {
				kinds = append(kinds, "text")
			}
		case ev.ToolCall != nil:
			kinds = append(kinds, "call "+ev.ToolCall.Name)
		case ev.ToolDone != nil:
			kinds = append(kinds, "done "+ev.ToolDone.ToolUseID)
		case ev.Done != "":
			kinds = append(kinds, "end "+string(ev.Done))
		}
	}
	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(kinds, ", "), "call add, done toolu_1, text, end "+string(agent.Finished); got != want {
		t.Errorf("events: %s, want %s", got, want)
	}
	if text.String() != strings.Join(words, "") || text.String() != res.Text {
		t.Errorf("streamed %q, result %q, want %q", text.String(), res.Text, strings.Join(words, ""))
	}
	// The deltas of each block come in one burst, far inside one
	// StreamInterval, so batching joins some of them.
	if batches < 2 || batches >= len(words) {
		t.Errorf("the text came in %d batches, want at least 2, fewer than its %d deltas", batches, len(words))
	}
	if res.Runs != 2 {
		t.Errorf("runs = %d, want 2", res.Runs)
	}
}
