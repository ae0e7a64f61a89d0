package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
)

// toolForever answers every request with a new echo call, so the loop
// never ends by itself; a request with tool_choice none gets text.
func toolForever() at.Reply {
	var n atomic.Int64
	return at.Repeat(at.ReplyFunc(func(r *at.Request) at.Reply {
		if p, _ := r.Params(); p != nil && strings.Contains(string(p.ToolChoice), `"none"`) {
			return at.NewStream().Text("Best effort: 42.").Stop("end_turn")
		}
		i := n.Add(1)
		return at.NewStream().Usage(1000, 1, 0, 0).
			ToolUse(fmt.Sprintf("toolu_%d", i), "echo", fmt.Sprintf(`{"text":"call %d"}`, i)).Stop("tool_use")
	}))
}

func TestMaxIterations(t *testing.T) {
	for _, final := range []bool{false, true} {
		t.Run(fmt.Sprint("FinalAnswer=", final), func(t *testing.T) {
			srv, client := fake(t, toolForever())
			a := newAgent(t, client, Config{Registry: newTools(t).reg, MaxIterations: 3, FinalAnswer: final})
			_, res, err := collect(t, a.Stream(t.Context(), "loop"))
			if err != nil {
				t.Fatal(err)
			}
			want := Result{State: IterationLimit, Iterations: 3}
			if final {
				want = Result{State: IterationLimit, Iterations: 4, Text: "Best effort: 42."}
			}
			if res.State != want.State || res.Iterations != want.Iterations || res.Text != want.Text {
				t.Errorf("result = %+v, want %+v", res, want)
			}
			reqs := srv.Requests()
			if len(reqs) != want.Iterations {
				t.Fatalf("%d requests, want %d", len(reqs), want.Iterations)
			}
			if final {
				p, _ := reqs[3].Params()
				if string(p.ToolChoice) != `{"type":"none"}` || len(p.Tools) == 0 {
					t.Errorf("final request: tool_choice %s with %d tools; want none, tools still listed", p.ToolChoice, len(p.Tools))
				}
			}
			validHistory(t, a.cfg.History)
		})
	}
}

func TestMaxTotalTokens(t *testing.T) {
	srv, client := fake(t, toolForever())
	a := newAgent(t, client, Config{Registry: newTools(t).reg, MaxTotalTokens: 1500})
	_, res, err := collect(t, a.Stream(t.Context(), "loop"))
	if err != nil {
		t.Fatal(err)
	}
	// 1001 tokens after the first turn, 2002 after the second: the check
	// before the third call stops the run.
	if res.State != TokenLimit || res.Iterations != 2 || len(srv.Requests()) != 2 {
		t.Errorf("result = %+v after %d requests", res, len(srv.Requests()))
	}
	validHistory(t, a.cfg.History)
}

func TestMaxDuration(t *testing.T) {
	for _, name := range []string{"mid-stream", "mid-tool"} {
		t.Run(name, func(t *testing.T) {
			reply := at.NewStream().Text("thinking very slowly").Stall()
			if name == "mid-tool" {
				reply = at.NewStream().ToolUse("toolu_1", "block", `{"n":1}`).Stop("tool_use")
			}
			_, client := fake(t, reply)
			a := newAgent(t, client, Config{Registry: newTools(t).reg, MaxDuration: 50 * time.Millisecond})
			_, res, err := collect(t, a.Stream(t.Context(), "slow"))
			if err != nil || res.State != TimeLimit {
				t.Errorf("result = %+v, %v; want state %q and no error", res, err, TimeLimit)
			}
			validHistory(t, a.cfg.History)
		})
	}
}

func TestCancel(t *testing.T) {
	t.Run("mid-stream", func(t *testing.T) {
		_, client := fake(t, at.NewStream().Text("partial").Stall())
		a := newAgent(t, client, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var res Result
		var err error
		for ev, e := range a.Stream(ctx, "hi") {
			switch ev := ev.(type) {
			case TextDelta:
				cancel()
			case Result:
				res, err = ev, e
			}
		}
		if res.State != Cancelled || !errors.Is(err, context.Canceled) {
			t.Errorf("result = %+v, %v; want cancelled with context.Canceled", res, err)
		}
		// The prompt stays, and so does the answer the user saw, marked.
		if diff := cmp.Diff([]string{"user: hi", "assistant: partial|[interrupted]"}, texts(a.cfg.History)); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
		validHistory(t, a.cfg.History)
	})
	t.Run("mid-tool", func(t *testing.T) {
		_, client := fake(t, at.NewStream().Text("Let me wait.").ToolUse("toolu_1", "block", `{"n":1}`).Stop("tool_use"))
		tt := newTools(t)
		a := newAgent(t, client, Config{Registry: tt.reg})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var res Result
		var err error
		for ev, e := range a.Stream(ctx, "hi") {
			switch ev := ev.(type) {
			case UsageUpdate:
				// The turn is over and its call is running: cancel it.
				<-tt.started
				cancel()
			case Result:
				res, err = ev, e
			}
		}
		if res.State != Cancelled || !errors.Is(err, context.Canceled) {
			t.Errorf("result = %+v, %v; want cancelled with context.Canceled", res, err)
		}
		// The call stays in the history, answered, and the turn that did
		// not come is marked as interrupted, without repeating the text
		// of the turn that did.
		want := []string{"user: hi", "assistant: Let me wait.", "user: cancelled: the tool call did not finish (context canceled)", "assistant: [interrupted]"}
		if diff := cmp.Diff(want, texts(a.cfg.History)); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
		validHistory(t, a.cfg.History)
	})
	t.Run("caller stops reading", func(t *testing.T) {
		_, client := fake(t, at.NewStream().Text("partial").Stall())
		a := newAgent(t, client, Config{})
		var last Event
		for ev := range a.Stream(t.Context(), "hi") {
			last = ev
			if _, ok := ev.(TextDelta); ok {
				break
			}
		}
		if _, ok := last.(TextDelta); !ok {
			t.Errorf("last event %T", last)
		}
		if diff := cmp.Diff([]string{"user: hi", "assistant: partial|[interrupted]"}, texts(a.cfg.History)); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
		validHistory(t, a.cfg.History)
	})
	t.Run("caller stops reading mid-tool", func(t *testing.T) {
		_, client := fake(t, at.NewStream().ToolUse("toolu_1", "block", `{"n":1}`).Stop("tool_use"))
		tt := newTools(t)
		a := newAgent(t, client, Config{Registry: tt.reg})
		for ev := range a.Stream(t.Context(), "hi") {
			// Stop once the tool is running: the turn has ended, and the
			// loop waits for the result.
			if _, ok := ev.(UsageUpdate); ok {
				<-tt.started
				break
			}
		}
		validHistory(t, a.cfg.History)
	})
	t.Run("already cancelled", func(t *testing.T) {
		srv, client := fake(t)
		a := newAgent(t, client, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, res, err := collect(t, a.Stream(ctx, "hi"))
		if res.State != Cancelled || !errors.Is(err, context.Canceled) || len(srv.Requests()) != 0 {
			t.Errorf("result = %+v, %v, %d requests", res, err, len(srv.Requests()))
		}
	})
}

func TestToolGate(t *testing.T) {
	srv, client := fake(t,
		at.NewStream().
			ToolUse("toolu_1", "echo", `{"text":"fine"}`).
			ToolUse("toolu_2", "calculator", `{"a":1,"b":2,"operation":"add"}`).
			Stop("tool_use"),
		at.NewStream().Text("ok").Stop("end_turn"),
	)
	tt := newTools(t)
	var asked []string
	a := newAgent(t, client, Config{
		Registry: tt.reg,
		Hooks: []Hook{ToolGate(func(ctx context.Context, call llm.ToolUse) error {
			asked = append(asked, call.ID)
			if call.Name == "calculator" {
				return errors.New("no arithmetic today")
			}
			return nil
		})},
	})
	_, _, err := collect(t, a.Stream(t.Context(), "go"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"toolu_1", "toolu_2"}, asked); diff != "" {
		t.Errorf("approval asked for (-want +got):\n%s", diff)
	}
	res := srv.Requests()[1].ToolResults()
	if len(res) != 2 || res[0].IsError || !res[1].IsError || res[1].Content[0].Text != "denied: no arithmetic today" {
		t.Errorf("results = %+v", res)
	}
	if diff := cmp.Diff([]string{"echo"}, tt.ranNames()); diff != "" {
		t.Errorf("tools run (-want +got):\n%s", diff)
	}
}

func TestRepeatLimit(t *testing.T) {
	same := func(id string) at.Reply {
		return at.NewStream().ToolUse(id, "echo", `{"text": "again"}`).Stop("tool_use")
	}
	srv, client := fake(t,
		same("toolu_1"), same("toolu_2"),
		at.NewStream().ToolUse("toolu_3", "echo", `{ "text":"again" }`).Stop("tool_use"), // same input, other spacing
		same("toolu_4"),
		at.NewStream().ToolUse("toolu_5", "echo", `{"text":"new"}`).Stop("tool_use"),
		at.NewStream().Text("ok").Stop("end_turn"),
	)
	tt := newTools(t)
	a := newAgent(t, client, Config{Registry: tt.reg})
	evs, _, err := collect(t, a.Stream(t.Context(), "go"))
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, r := range eventsOf[ToolDone](evs) {
		got = append(got, r.IsError)
		if r.IsError && !strings.Contains(r.Content, "repeating yourself") {
			t.Errorf("result %+v does not say the model repeats itself", r)
		}
	}
	if diff := cmp.Diff([]bool{false, false, true, true, false}, got); diff != "" {
		t.Errorf("is_error per call (-want +got):\n%s", diff)
	}
	if n := len(tt.ranNames()); n != 3 {
		t.Errorf("tools ran %d times, want 3", n)
	}
	_ = srv
}

func TestMiddleware(t *testing.T) {
	_, client := fake(t, at.NewStream().Text("ok").Stop("end_turn"))
	var seen []string
	a := newAgent(t, client, Config{
		System: "sys",
		Middleware: func(next llm.Model) llm.Model {
			return llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
				seen = append(seen, req.System)
				return next.Stream(ctx, req)
			})
		},
	})
	if _, err := a.Run(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sys"}, seen); diff != "" {
		t.Errorf("middleware saw (-want +got):\n%s", diff)
	}
}

func TestBusy(t *testing.T) {
	_, client := fake(t, at.NewStream().Text("first").Stop("end_turn"))
	a := newAgent(t, client, Config{})
	for range a.Stream(t.Context(), "one") {
		_, res, err := collect(t, a.Stream(t.Context(), "two"))
		if !errors.Is(err, errBusy) || res.State != Failed {
			t.Errorf("overlapping run: %+v, %v; want errBusy", res, err)
		}
		break
	}
	// The first run is over (the caller stopped it): the agent is free.
	_, client = fake(t, at.NewStream().Text("again").Stop("end_turn"))
	a.cfg.Model = client
	if res, err := a.Run(t.Context(), "three"); err != nil || res.Text != "again" {
		t.Errorf("run after: %+v, %v", res, err)
	}
}
