package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
)

// hookAt returns a hook that answers d at point p, and nothing elsewhere.
func hookAt(p HookPoint, d Decision, err error) Hook {
	return func(ctx context.Context, e HookEvent) (Decision, error) {
		if e.Point != p {
			return Decision{}, nil
		}
		return d, err
	}
}

// TestBeforeToolHooks runs one echo call past hooks and checks the result
// the model reads, and whether the tool ran.
func TestBeforeToolHooks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hooks   []Hook
		want    string // the result's text
		isError bool
	}{
		{"no decision", []Hook{hookAt(BeforeTool, Decision{}, nil)}, "hi", false},
		{"deny", []Hook{hookAt(BeforeTool, Decision{Deny: "not today"}, nil)}, "denied: not today", true},
		{"the first deny wins", []Hook{hookAt(BeforeTool, Decision{Deny: "first"}, nil), hookAt(BeforeTool, Decision{Deny: "second"}, nil)},
			"denied: first", true},
		{"a failing hook denies", []Hook{hookAt(BeforeTool, Decision{}, nil), hookAt(BeforeTool, Decision{}, errors.New("crashed"))},
			"denied: a check of this call failed", true},
		{"rewrite", []Hook{hookAt(BeforeTool, Decision{Input: json.RawMessage(`{"text":"bye"}`)}, nil)}, "bye", false},
		{"the last rewrite wins", []Hook{hookAt(BeforeTool, Decision{Input: json.RawMessage(`{"text":"bye"}`)}, nil),
			hookAt(BeforeTool, Decision{Input: json.RawMessage(`{"text":"ciao"}`)}, nil)}, "ciao", false},
		{"rewrite to no JSON object", []Hook{hookAt(BeforeTool, Decision{Input: json.RawMessage(`[1]`)}, nil)},
			`invalid input for tool "echo": the input must be a JSON object, got [1]`, true},
		{"rewrite against the schema", []Hook{hookAt(BeforeTool, Decision{Input: json.RawMessage(`{"text":5}`)}, nil)},
			`invalid input for tool "echo"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client := fake(t, at.NewStream().ToolUse("toolu_1", "echo", `{"text":"hi"}`).Stop("tool_use"),
				at.NewStream().Text("ok").Stop("end_turn"))
			tt := newTools(t)
			a := newAgent(t, client, Config{Registry: tt.reg, Hooks: tc.hooks})
			if _, err := a.Run(t.Context(), "go"); err != nil {
				t.Fatal(err)
			}
			res := srv.Requests()[1].ToolResults()
			if len(res) != 1 || res[0].IsError != tc.isError || !strings.Contains(res[0].Content[0].Text, tc.want) {
				t.Fatalf("results = %+v, want %q, is_error %v", res, tc.want, tc.isError)
			}
			if ran := len(tt.ranNames()) > 0; ran == tc.isError {
				t.Errorf("the tool ran: %v", ran)
			}
			// The history keeps the input the model wrote.
			if in := a.cfg.History.Messages()[1].Content[0].(llm.ToolUse).Input; string(in) != `{"text":"hi"}` {
				t.Errorf("the history's input = %s, want the model's", in)
			}
			validHistory(t, a.cfg.History)
		})
	}
}

func TestAfterToolHooks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hooks []Hook
		want  []string // the texts of the result
	}{
		{"redact", []Hook{hookAt(AfterTool, Decision{Content: []llm.Block{llm.Text{Text: "[redacted]"}}}, nil)}, []string{"[redacted]"}},
		{"context", []Hook{hookAt(AfterTool, Decision{Context: "Note: echoed."}, nil)}, []string{"hi", "Note: echoed."}},
		{"a failing hook is ignored", []Hook{hookAt(AfterTool, Decision{Content: []llm.Block{}}, errors.New("crashed"))}, []string{"hi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client := fake(t, at.NewStream().ToolUse("toolu_1", "echo", `{"text":"hi"}`).Stop("tool_use"),
				at.NewStream().Text("ok").Stop("end_turn"))
			a := newAgent(t, client, Config{Registry: newTools(t).reg, Hooks: tc.hooks})
			evs, _, err := collect(t, a.Stream(t.Context(), "go"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range srv.Requests()[1].ToolResults()[0].Content {
				got = append(got, c.Text)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the result's texts (-want +got):\n%s", diff)
			}
			if done := eventsOf[ToolDone](evs); len(done) != 1 || done[0].Content != strings.Join(tc.want, "\n") {
				t.Errorf("ToolDone = %+v, want what the model reads", done)
			}
		})
	}
}

func TestPromptHooks(t *testing.T) {
	t.Run("block", func(t *testing.T) {
		srv, client := fake(t, at.NewStream().Text("ok").Stop("end_turn"))
		a := newAgent(t, client, Config{Hooks: []Hook{hookAt(PromptSubmit, Decision{Deny: "no secrets in prompts"}, nil)}})
		res, err := a.Run(t.Context(), "my password is hunter2")
		if err != nil || res.State != Blocked || res.Text != "no secrets in prompts" {
			t.Errorf("result = %+v, %v; want %s with the reason", res, err, Blocked)
		}
		if n, m := len(srv.Requests()), len(a.cfg.History.Messages()); n != 0 || m != 0 {
			t.Errorf("%d requests, %d messages; want none", n, m)
		}
	})
	t.Run("context", func(t *testing.T) {
		srv, client := fake(t, at.NewStream().Text("ok").Stop("end_turn"))
		var seen HookEvent
		record := func(ctx context.Context, e HookEvent) (Decision, error) {
			if e.Point == PromptSubmit {
				seen = e
			}
			return Decision{}, nil
		}
		a := newAgent(t, client, Config{ConversationID: "sess_1",
			Hooks: []Hook{record, hookAt(PromptSubmit, Decision{Context: "Today is Monday."}, nil)}})
		if _, err := a.Run(t.Context(), "what day is it?"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(HookEvent{Point: PromptSubmit, Session: "sess_1", Prompt: "what day is it?"}, seen); diff != "" {
			t.Errorf("the hook saw (-want +got):\n%s", diff)
		}
		body := string(srv.Requests()[0].Body)
		if !strings.Contains(body, "what day is it?") || !strings.Contains(body, "Today is Monday.") {
			t.Errorf("the request lacks the prompt or its context: %s", body)
		}
		validHistory(t, a.cfg.History)
	})
}

func TestStopHooks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hooks    []Hook
		requests int
	}{
		{"let it stop", []Hook{hookAt(BeforeStop, Decision{}, nil)}, 1},
		// Always "go on": bounded by MaxIterations, and the run still ends
		// with the model's answer.
		{"continue", []Hook{hookAt(BeforeStop, Decision{Continue: "Check your answer."}, nil)}, 3},
		// A blank reason is no turn: the run ends, where the loop sent the
		// model's answer back as a prefill.
		{"a blank reason", []Hook{hookAt(BeforeStop, Decision{Continue: " \n\t"}, nil)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client := fake(t, at.Repeat(at.NewStream().Text("42").Stop("end_turn")))
			a := newAgent(t, client, Config{Hooks: tc.hooks, MaxIterations: 3})
			res, err := a.Run(t.Context(), "6*7?")
			if err != nil || res.State != Finished || res.Text != "42" {
				t.Errorf("result = %+v, %v", res, err)
			}
			reqs := srv.Requests()
			if len(reqs) != tc.requests {
				t.Fatalf("%d requests, want %d", len(reqs), tc.requests)
			}
			if tc.requests > 1 && !strings.Contains(string(reqs[1].Body), "Check your answer.") {
				t.Errorf("the second request lacks the hook's reason: %s", reqs[1].Body)
			}
			if msgs := a.cfg.History.Messages(); msgs[len(msgs)-1].Role != llm.Assistant {
				t.Errorf("the history ends with a %s turn", msgs[len(msgs)-1].Role)
			}
			validHistory(t, a.cfg.History)
		})
	}
}

func TestCompactHook(t *testing.T) {
	_, client := fake(t, summarising(at.NewStream().Text("ok").Stop("end_turn")))
	var points []HookPoint
	record := func(ctx context.Context, e HookEvent) (Decision, error) {
		points = append(points, e.Point)
		return Decision{}, nil
	}
	a := newAgent(t, client, Config{History: longHistory(25), Hooks: []Hook{record}})
	if _, err := a.Run(t.Context(), "go on"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]HookPoint{PromptSubmit, BeforeCompact, BeforeStop}, points); diff != "" {
		t.Errorf("hook points (-want +got):\n%s", diff)
	}
}
