package servertest

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

type none struct{}

// holdAfterFirst passes m's events on, but once the first block of a turn
// that opened with an event of type E (llm.ToolUseStart, llm.TextDelta,
// llm.ThinkingDelta) stops, holds the rest of the turn until release is
// closed: a worker that acts on that block only when the turn ends never
// gets there. It gives up after a minute, with an error that fails the
// test's run.
func holdAfterFirst[E llm.Event](m llm.Model, release <-chan struct{}) llm.Model {
	return llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
		return func(yield func(llm.Event, error) bool) {
			block, held := -1, false
			for ev, err := range m.Stream(ctx, req) {
				if !yield(ev, err) || err != nil {
					return
				}
				if _, ok := ev.(E); ok && block < 0 {
					block = blockIndex(ev)
				}
				if stop, ok := ev.(llm.BlockStop); !ok || stop.Index != block || held {
					continue
				}
				held = true
				select {
				case <-release:
				case <-time.After(time.Minute):
					yield(nil, &llm.APIError{StatusCode: 400, Message: "the test saw nothing of the held block while the turn streamed"})
					return
				}
			}
		}
	})
}

// blockIndex returns the index of the block a block's opening event opens.
func blockIndex(ev llm.Event) int {
	switch ev := ev.(type) {
	case llm.ToolUseStart:
		return ev.Index
	case llm.TextDelta:
		return ev.Index
	case llm.ThinkingDelta:
		return ev.Index
	}
	panic(fmt.Sprintf("holdAfterFirst: %T opens no block", ev))
}

// TestToolsStartWhileModelStreams: a call starts in its worker as soon as
// its input is complete, while the model still streams the rest of the
// turn, as in process; the turn's later call starts with the turn's end,
// the results come in tool_use order, and a replay of the run's history
// is deterministic (TestReplay's "eager" scenario records one).
func TestToolsStartWhileModelStreams(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "first", `{}`).Text("While it runs, ").ToolUse("toolu_2", "add", `{"a":1,"b":2}`).Stop("tool_use"),
		anthropictest.NewStream().Text("Done.").Stop("end_turn"),
	)
	ran := make(chan struct{})
	var once sync.Once
	first := tool.Must(tool.New("first", "runs first", func(ctx context.Context, _ none) (string, error) {
		once.Do(func() { close(ran) })
		return "first ran", nil
	}))
	add, _ := adder()
	e.worker(t, "eager", Config{Model: holdAfterFirst[llm.ToolUseStart](llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1}), ran)}, first, add)
	res := e.run(t, "eager", "eager", Input{Prompt: "go"})
	if res.Text != "Done." {
		t.Errorf("text = %q, want Done.", res.Text)
	}
	var got []string
	for _, b := range e.api.Requests()[1].ToolResults() {
		got = append(got, b.ToolUseID+": "+b.Content[0].Text)
	}
	if diff := cmp.Diff([]string{"toolu_1: first ran", "toolu_2: 3"}, got); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	e.checkRequests(t)
}

// TestEagerCallsOfFailedAttempt: a turn that fails after a call started is
// tried again, by the agent's loop as in process; the failed attempt's
// call runs once, and it and its real result are in the history before
// the retry, so that the model knows what it already did.
func TestEagerCallsOfFailedAttempt(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "count", `{}`).Text("and then").Reset(),
		anthropictest.NewStream().ToolUse("toolu_2", "add", `{"a":1,"b":2}`).Stop("tool_use"),
		anthropictest.NewStream().Text("3.").Stop("end_turn"),
	)
	ran := make(chan struct{})
	var runs atomic.Int32
	count := tool.Must(tool.New("count", "counts its runs", func(ctx context.Context, _ none) (string, error) {
		n := runs.Add(1)
		if n == 1 {
			close(ran)
		}
		return fmt.Sprintf("counted %d", n), nil
	}))
	add, _ := adder()
	e.worker(t, "eager-retry", Config{Model: holdAfterFirst[llm.ToolUseStart](llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1}), ran)}, count, add)
	res := e.run(t, "eager-retry", "eager-retry", Input{Prompt: "go"})
	if n := runs.Load(); n != 1 {
		t.Errorf("the call ran %d times, want once", n)
	}
	var got []string
	for _, b := range e.api.Requests()[1].ToolResults() {
		got = append(got, b.ToolUseID+": "+b.Content[0].Text)
	}
	if diff := cmp.Diff([]string{"toolu_1: counted 1"}, got); diff != "" {
		t.Errorf("the retry's tool results (-want +got):\n%s", diff)
	}
	var uses []string
	for _, m := range res.History {
		for _, b := range m.Content {
			if tu, ok := b.(llm.ToolUse); ok {
				uses = append(uses, tu.ID)
			}
		}
	}
	if diff := cmp.Diff([]string{"toolu_1", "toolu_2"}, uses); diff != "" {
		t.Errorf("tool calls in the history (-want +got):\n%s", diff)
	}
	e.checkRequests(t)
}
