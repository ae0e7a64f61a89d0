package servertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// streamRun starts a streaming run and returns its events, Done excluded,
// and its result.
func (e *env) streamRun(t *testing.T, id, queue string, in Input) ([]Event, Result) {
	t.Helper()
	in.Stream = true
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for ev, err := range Stream(context.Background(), e.c, id) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Done == "" {
			evs = append(evs, ev)
		}
	}
	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	return evs, res
}

// TestStreamThinking: thinking text streams, batched, while the turn
// streams, and in order with the answer, as thinking, never as answer text,
// which is what the CLI prints on stdout. The model holds the rest of its
// turn until the caller has seen thinking: a worker that sent it only at the
// turn's end would never get there.
func TestStreamThinking(t *testing.T) {
	thoughts := strings.Fields("let me see what the user wants here before I answer")
	words := strings.Fields("the answer is four")
	e := newEnv(t,
		anthropictest.NewStream().
			Block(anthropictest.Block{Type: "thinking", Signature: "sig"}, thoughts...).
			Text(words...).Stop("end_turn"),
	)
	seen := make(chan struct{})
	e.worker(t, "thinking", Config{Model: holdAfterFirst[llm.ThinkingDelta](llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1}), seen)})
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "thinking", TaskQueue: "thinking"},
		WorkflowName, Input{Prompt: "2+2?", Stream: true})
	if err != nil {
		t.Fatal(err)
	}

	var text, thinking strings.Builder
	var kinds []string
	thinkingBatches := 0
	for ev, err := range Stream(context.Background(), e.c, "thinking") {
		if err != nil {
			t.Fatal(err)
		}
		kind := ""
		switch {
		case ev.Thinking != "":
			if ev.Text != "" {
				t.Errorf("event %d has both text and thinking", ev.Seq)
			}
			if thinkingBatches++; thinkingBatches == 1 {
				close(seen) // the rest of the turn may come
			}
			kind = "thinking"
			thinking.WriteString(ev.Thinking)
		case ev.Text != "":
			kind = "text"
			text.WriteString(ev.Text)
		}
		if kind != "" && (len(kinds) == 0 || kinds[len(kinds)-1] != kind) {
			kinds = append(kinds, kind)
		}
	}
	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, ", "); got != "thinking, text" {
		t.Errorf("streamed %s, want thinking, text", got)
	}
	if got, want := thinking.String(), strings.Join(thoughts, ""); got != want {
		t.Errorf("thinking %q, want %q", got, want)
	}
	if got, want := text.String(), strings.Join(words, ""); got != want || res.Text != want {
		t.Errorf("streamed text %q, result %q, want %q", got, res.Text, want)
	}
	// The deltas come in one burst, far inside one StreamInterval.
	if thinkingBatches >= len(thoughts) {
		t.Errorf("the thinking came in %d batches, want fewer than its %d deltas", thinkingBatches, len(thoughts))
	}
}

// TestStreamCompacted: a run that compacts, itself or on the server,
// streams the compaction as the in-process loop reports it; the summary
// call's text is not streamed as answer.
func TestStreamCompacted(t *testing.T) {
	prior := priorTurns()
	const summary = "They asked six questions and got six answers."
	tests := []struct {
		name    string
		replies func() []anthropictest.Reply
		in      Input
	}{
		{"server", func() []anthropictest.Reply {
			return []anthropictest.Reply{
				anthropictest.NewStream().Compaction(summary).Text("Done.").Usage(40, 5, 0, 0).Stop("end_turn"),
			}
		}, Input{History: prior}},
		// Last: its Repeat answers every later request.
		{"client", func() []anthropictest.Reply {
			return []anthropictest.Reply{summarizing(summary)}
		}, Input{History: prior, ContextLimit: 400, Compaction: "client"}},
	}
	e := newEnv(t)
	e.worker(t, "compacted", Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Prompt = "go"
			e.api.Enqueue(tt.replies()...)
			evs, res := e.streamRun(t, "compacted-"+tt.name, "compacted", in)
			var got []memory.Compaction
			var text strings.Builder
			for _, ev := range evs {
				if ev.Compacted != nil {
					got = append(got, *ev.Compacted)
				}
				text.WriteString(ev.Text)
			}
			if text.String() != "Done." || res.Text != "Done." {
				t.Errorf("streamed text %q, result %q, want %q", text.String(), res.Text, "Done.")
			}

			api := anthropictest.NewServer(tt.replies()...)
			defer api.Close()
			// As the workflow starts it: counts unknown.
			h := memory.New(memory.Config{ContextLimit: in.ContextLimit, Compaction: in.Compaction})
			for _, m := range in.History {
				if m.Role == llm.Assistant {
					h.AppendAssistant(m, llm.Usage{})
				} else {
					h.AppendUser(m.Content...)
				}
			}
			a, err := agent.New(agent.Config{Model: llm.New(llm.Config{BaseURL: api.URL}), History: h})
			if err != nil {
				t.Fatal(err)
			}
			var want []memory.Compaction
			for ev, err := range a.Stream(context.Background(), in.Prompt) {
				if err != nil {
					t.Fatal(err)
				}
				if c, ok := ev.(agent.Compacted); ok {
					want = append(want, c.Compaction)
				}
			}
			if len(want) != 1 {
				t.Fatalf("the in-process run compacted %d times, want once", len(want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("compactions (-in-process +durable):\n%s", diff)
			}
		})
	}
}

// TestToolDuration: each ToolDone carries the call's running time, as its
// worker measured it around the handler, so never less than the handler's
// own measure of itself (a causal bound, not a timing guess).
func TestToolDuration(t *testing.T) {
	const wait = 50 * time.Millisecond
	ran := make(chan time.Duration, 1)
	slow := tool.Must(tool.New("slow", "takes a while", func(ctx context.Context, in struct{}) (string, error) {
		began := time.Now()
		<-time.After(wait) // the work the call does, not synchronisation
		ran <- time.Since(began)
		return "done", nil
	}))
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "slow", `{}`).ToolUse("toolu_2", "missing", `{}`).Stop("tool_use"),
		anthropictest.NewStream().Text("Done.").Stop("end_turn"),
	)
	e.worker(t, "duration", Config{}, slow)
	evs, _ := e.streamRun(t, "duration", "duration", Input{Prompt: "go"})
	took := map[string]time.Duration{}
	for _, ev := range evs {
		if ev.ToolDone != nil {
			took[ev.ToolDone.ToolUseID] = ev.Duration
		}
	}
	own := <-ran
	if d, ok := took["toolu_1"]; !ok || d < own {
		t.Errorf("slow's ToolDone duration = %v (reported: %v), want at least its own %v", d, ok, own)
	}
	if _, ok := took["toolu_2"]; !ok {
		t.Error("the unknown tool's call has no ToolDone")
	}
}

// TestToolOutputJSON: a CallTool result is read from a history recorded
// before it had a duration, and a worker that does not know durations
// reads today's.
func TestToolOutputJSON(t *testing.T) {
	res := llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: "3"}}, IsError: true}
	old, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var fromOld ToolOutput
	if err := json.Unmarshal(old, &fromOld); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ToolOutput{ToolResult: res}, fromOld); diff != "" {
		t.Errorf("from the old shape (-want +got):\n%s", diff)
	}
	out := ToolOutput{ToolResult: res, Duration: 1500 * time.Millisecond}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var back ToolOutput
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out, back); diff != "" {
		t.Errorf("round trip of %s (-want +got):\n%s", b, diff)
	}
	var asOld llm.ToolResult
	if err := json.Unmarshal(b, &asOld); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res, asOld); diff != "" {
		t.Errorf("read as a bare result (-want +got):\n%s", diff)
	}
}

// TestStreamOrder: the thinking and text that streamed before a tool call
// come before the call, which starts while the turn still streams, as in
// process: the CLI shows the model's note, then the call.
func TestStreamOrder(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().Block(anthropictest.Block{Type: "thinking", Signature: "sig"}, "First the sum.").
			Text("Adding.").ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Stop("tool_use"),
		anthropictest.NewStream().Text("3.").Stop("end_turn"),
	)
	add, _ := adder()
	e.worker(t, "order", Config{}, add)
	evs, _ := e.streamRun(t, "order", "order", Input{Prompt: "1+2?"})
	var got []string
	for _, ev := range evs {
		switch {
		case ev.Thinking != "":
			got = append(got, "thinking "+ev.Thinking)
		case ev.Text != "":
			got = append(got, "text "+ev.Text)
		case ev.ToolCall != nil:
			got = append(got, "call "+ev.ToolCall.ID)
		case ev.ToolDone != nil:
			got = append(got, "done "+ev.ToolDone.ToolUseID)
		}
	}
	want := []string{"thinking First the sum.", "text Adding.", "call toolu_1", "done toolu_1", "text 3."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
