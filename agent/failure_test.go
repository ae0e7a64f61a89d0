package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// TestMidStreamFailure checks that a turn that fails after output arrived
// is retried whole, that the caller is told to discard the partial output,
// and that nothing of the failed attempt reaches the history.
func TestMidStreamFailure(t *testing.T) {
	tests := []struct {
		name     string
		replies  []at.Reply
		state    State
		errType  string // the *llm.APIError type expected, if the run fails
		events   []string
		retries  []Retry
		requests int
		kept     []string // the history's exchange kept from a failed attempt
	}{{
		name: "error event after text, then success",
		replies: []at.Reply{
			at.NewStream().Text("The answ").ErrorEvent("overloaded_error", "Overloaded"),
			at.NewStream().Text("The answer is 42.").Stop("end_turn"),
		},
		state:    Finished,
		events:   []string{"turn_start", "retry", "turn_start", "result"},
		retries:  []Retry{{Attempt: 2, Error: "llm: overloaded_error: Overloaded (request req_anthropictest0000000001)", Discard: true}},
		requests: 2,
	}, {
		// The call ran: its tool_use and result are kept, not its turn's text.
		name: "reset after a tool call started, then success",
		replies: []at.Reply{
			at.NewStream().Text("Calling.").ToolUse("toolu_1", "echo", `{"text":"hi"}`).EndBlock().Reset(),
			at.NewStream().Text("The answer is 42.").Stop("end_turn"),
		},
		state:    Finished,
		events:   []string{"turn_start", "tool_call_start", "tool_call", "tool_done", "retry", "turn_start", "result"},
		requests: 2,
		kept:     []string{"assistant:", "user:hi"},
	}, {
		name: "stream that ends without message_stop, then success",
		replies: []at.Reply{
			at.NewStream().Text("The answ").EndWithoutStop(),
			at.NewStream().Text("The answer is 42.").Stop("end_turn"),
		},
		state:    Finished,
		events:   []string{"turn_start", "retry", "turn_start", "result"},
		requests: 2,
	}, {
		name: "retries run out",
		replies: []at.Reply{
			at.NewStream().Text("a").ErrorEvent("overloaded_error", "Overloaded"),
			at.NewStream().Text("b").ErrorEvent("overloaded_error", "Overloaded"),
			at.NewStream().Text("c").ErrorEvent("overloaded_error", "Overloaded"),
		},
		state:    Failed,
		errType:  "overloaded_error",
		events:   []string{"turn_start", "retry", "turn_start", "retry", "turn_start", "result"},
		requests: 3,
	}, {
		name: "an error that will not pass is not retried",
		replies: []at.Reply{
			at.NewStream().Text("a").ErrorEvent("invalid_request_error", "bad"),
		},
		state:    Failed,
		errType:  "invalid_request_error",
		events:   []string{"turn_start", "result"},
		requests: 1,
	}, {
		name: "an HTTP error before the stream is retried by the client alone",
		replies: []at.Reply{
			at.HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RetryAfter: time.Millisecond},
			at.NewStream().Text("The answer is 42.").Stop("end_turn"),
		},
		state:    Finished,
		events:   []string{"turn_start", "result"},
		requests: 2,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, client := fake(t, tt.replies...)
			tools := newTools(t)
			a := newAgent(t, client, Config{Registry: tools.reg})
			evs, res, err := collect(t, a.Stream(t.Context(), "What is the answer?"))
			if diff := cmp.Diff(tt.events, kinds(evs, false)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if res.State != tt.state {
				t.Errorf("state = %q, want %q (err %v)", res.State, tt.state, err)
			}
			if tt.errType != "" {
				var ae *llm.APIError
				if !errors.As(err, &ae) || ae.Type != tt.errType {
					t.Errorf("err = %v, want an *llm.APIError of type %s", err, tt.errType)
				}
			} else if err != nil {
				t.Errorf("err = %v", err)
			}
			for _, r := range eventsOf[Retry](evs) {
				if !r.Discard || r.Error == "" || r.Err == nil || r.Err.Error() != r.Error {
					t.Errorf("retry event %+v: want Discard and an error, its text in Error", r)
				}
			}
			if tt.retries != nil {
				if diff := cmp.Diff(tt.retries, eventsOf[Retry](evs), cmpopts.IgnoreFields(Retry{}, "Err")); diff != "" {
					t.Errorf("retries (-want +got):\n%s", diff)
				}
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			// On success the history holds the user's message, the calls a
			// failed attempt ran, and the final turn: no partial turn, no
			// error text. A failed run leaves it as it was: empty.
			msgs := a.cfg.History.Messages()
			var roles []string
			for _, m := range msgs {
				text := llm.TextOf(m.Content)
				for _, b := range m.Content {
					if r, ok := b.(llm.ToolResult); ok {
						text += llm.TextOf(r.Content)
					}
				}
				roles = append(roles, fmt.Sprintf("%s:%s", m.Role, text))
			}
			var want []string
			if tt.state == Finished {
				want = slices.Concat([]string{"user:What is the answer?"}, tt.kept, []string{"assistant:The answer is 42."})
			}
			if diff := cmp.Diff(want, roles); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			validHistory(t, a.cfg.History)
		})
	}
}

// TestPromptTooLong checks that a 400 "prompt is too long" compacts the
// history once and sends the turn again, and that a second one fails.
func TestPromptTooLong(t *testing.T) {
	tooLong := func() at.Reply {
		return at.HTTPError{Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 25000 tokens > 20000 maximum"}
	}
	t.Run("compact and retry", func(t *testing.T) {
		srv, client := fake(t, summarising(tooLong(), at.NewStream().Text("fits now").Stop("end_turn")))
		a := newAgent(t, client, Config{History: longHistory(6)})
		evs, res, err := collect(t, a.Stream(t.Context(), "go on"))
		if err != nil || res.State != Finished || res.Text != "fits now" {
			t.Fatalf("result %+v, %v", res, err)
		}
		want := []string{"turn_start", "compacted", "retry", "turn_start", "result"}
		if diff := cmp.Diff(want, kinds(evs, false)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if r := eventsOf[Retry](evs)[0]; r.Discard {
			t.Errorf("retry %+v: nothing was yielded, so nothing to discard", r)
		}
		// The turn, one or more summary calls, the turn again.
		reqs := srv.Requests()
		if len(reqs) < 3 || isSummary(reqs[0]) || !isSummary(reqs[1]) || isSummary(reqs[len(reqs)-1]) {
			t.Errorf("%d requests, want turn, summaries, turn", len(reqs))
		}
		validHistory(t, a.cfg.History)
	})
	t.Run("only once", func(t *testing.T) {
		_, client := fake(t, summarising(tooLong(), tooLong()))
		a := newAgent(t, client, Config{History: longHistory(6)})
		_, res, err := collect(t, a.Stream(t.Context(), "go on"))
		var ae *llm.APIError
		if res.State != Failed || !errors.As(err, &ae) || !strings.Contains(ae.Message, "prompt is too long") {
			t.Fatalf("result %+v, %v; want a failure with the 400", res, err)
		}
		validHistory(t, a.cfg.History)
	})
	// A lone prompt too long for the window leaves nothing to compact: no
	// compaction is reported, only the failure.
	t.Run("nothing to compact", func(t *testing.T) {
		_, client := fake(t, at.ReplyFunc(func(*at.Request) at.Reply { return tooLong() }))
		a := newAgent(t, client, Config{History: memory.New(memory.Config{Model: llm.DefaultModel})})
		evs, res, err := collect(t, a.Stream(t.Context(), "a prompt the fake calls too long"))
		if res.State != Failed || !errors.Is(err, llm.ErrPromptTooLong) {
			t.Fatalf("result %+v, %v; want a failure with the 400", res, err)
		}
		if diff := cmp.Diff([]string{"turn_start", "result"}, kinds(evs, false)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

func TestCompactBeforeRequest(t *testing.T) {
	srv, client := fake(t, summarising(at.NewStream().Text("ok").Stop("end_turn")))
	h := longHistory(25)
	if !h.NeedsCompaction() {
		t.Fatal("test history does not need compaction")
	}
	a := newAgent(t, client, Config{History: h})
	evs, res, err := collect(t, a.Stream(t.Context(), "go on"))
	if err != nil || res.State != Finished {
		t.Fatalf("result %+v, %v", res, err)
	}
	want := []string{"compacted", "turn_start", "result"}
	if diff := cmp.Diff(want, kinds(evs, false)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	c := eventsOf[Compacted](evs)[0]
	if c.After >= c.Before || len(c.Steps) == 0 {
		t.Errorf("compaction = %+v", c)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (summary, turn)", n)
	}
	// The summary call's usage counts in the run's.
	if res.Usage.InputTokens != 20 {
		t.Errorf("usage = %+v, want two calls' input", res.Usage)
	}
}

// TestSummaryUsesHistoryModel checks that the model named once, in the
// history's Config, is the model of the turns and of the summaries.
func TestSummaryUsesHistoryModel(t *testing.T) {
	const model = "claude-haiku-4-5"
	srv, client := fake(t, summarising(at.NewStream().Text("ok").Stop("end_turn")))
	h := fill(memory.New(memory.Config{Model: model, ContextWindow: 20_000, MaxTokens: 1000, KeepRecent: 1}), 25)
	a := newAgent(t, client, Config{History: h})
	evs, res, err := collect(t, a.Stream(t.Context(), "go on"))
	if err != nil || res.State != Finished {
		t.Fatalf("result %+v, %v", res, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !isSummary(reqs[0]) {
		t.Fatalf("%d requests, want summary, turn", len(reqs))
	}
	for i, r := range reqs {
		if p, err := r.Params(); err != nil || p.Model != model {
			t.Errorf("request %d model = %+v, %v; want %q", i, p, err, model)
		}
	}
	c := eventsOf[Compacted](evs)
	if len(c) != 1 || !slices.ContainsFunc(c[0].Steps, func(s string) bool { return strings.HasPrefix(s, "summarised") }) {
		t.Errorf("compactions = %+v, want one that summarised", c)
	}
	if !strings.HasPrefix(llm.TextOf(h.Messages()[0].Content), "[This conversation was compacted") {
		t.Errorf("history starts with %q, want the summary", llm.TextOf(h.Messages()[0].Content))
	}
}

// TestCompactionReportedWhenStillTooLong checks that a compaction that
// rewrote the history but could not bring it under the limit (the newest
// message alone is too large) is still reported, and the request is sent
// anyway for the API to judge.
func TestCompactionReportedWhenStillTooLong(t *testing.T) {
	srv, client := fake(t, summarising(at.NewStream().Text("ok").Stop("end_turn")))
	h := memory.New(memory.Config{Model: llm.DefaultModel, ContextWindow: 20_000, MaxTokens: 1000, KeepRecent: 1, Compaction: "client"})
	h.AppendUser(llm.Text{Text: "Read the file."})
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{
		llm.ToolUse{ID: "toolu_1", Name: "echo", Input: []byte(`{"text":"x"}`)}}}, llm.Usage{})
	h.AppendUser(llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: strings.Repeat("file ", 2000)}}})
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "Read it."}}}, llm.Usage{})
	a := newAgent(t, client, Config{History: h})
	evs, res, err := collect(t, a.Stream(t.Context(), strings.Repeat("huge ", 20_000)))
	if err != nil || res.State != Finished {
		t.Fatalf("result %+v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"compacted", "turn_start", "result"}, kinds(evs, false)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if c := eventsOf[Compacted](evs); len(c) == 1 && (c[0].After >= c[0].Before || len(c[0].Steps) == 0) {
		t.Errorf("compaction = %+v, want steps that shrank the history", c[0])
	}
	if n := len(srv.Requests()); n < 2 {
		t.Errorf("%d requests, want summaries and the turn", n)
	}
}

// TestEagerCallKept: a call that ran while a turn streamed stays in the
// history, with its real result, when the turn fails and is tried again,
// so that the model is not left unaware of its side effect and does not
// do it twice. A failed run still takes it back, with the rest.
func TestEagerCallKept(t *testing.T) {
	for _, tt := range []struct {
		name    string
		answer  error // of the second attempt
		state   State
		history []string
	}{
		{"retried", nil, Finished, []string{"user: count", "assistant: ", "user: count is 1", "assistant: Counted."}},
		{"failed", errors.New("scripted: down"), Failed, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			counter, err := tool.New("count", "Count.", func(context.Context, struct{}) (string, error) {
				n++
				return fmt.Sprintf("count is %d", n), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			m := (&scripted{}).add(fmt.Errorf("reset: %w", llm.ErrIncompleteStream),
				llm.MessageStart{},
				llm.ToolUseStart{Index: 0, ID: "toolu_1", Name: "count", Input: json.RawMessage(`{}`)},
				llm.BlockStop{Index: 0})
			if tt.answer != nil {
				m.add(tt.answer)
			} else {
				m.add(nil, textTurn("Counted.", llm.EndTurn)...)
			}
			a := newAgent(t, m, Config{Tools: []*tool.Tool{counter}, MaxAttempts: 2})
			res, _ := a.Run(t.Context(), "count")
			if res.State != tt.state {
				t.Errorf("state = %s, want %s", res.State, tt.state)
			}
			if n != 1 {
				t.Errorf("the tool ran %d times, want 1", n)
			}
			if len(m.reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(m.reqs))
			}
			// The retry itself was asked with the call and its result.
			last := m.reqs[1].Messages
			if got := len(last); got != 3 || llm.TextOf(last[2].Content[0].(llm.ToolResult).Content) != "count is 1" {
				t.Errorf("the retry's request lacks the call's result: %+v", last)
			}
			if diff := cmp.Diff(tt.history, texts(a.cfg.History)); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			validHistory(t, a.cfg.History)
		})
	}
}
