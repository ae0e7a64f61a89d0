package agent

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// summarising answers the summary calls of memory's compaction with a fixed
// summary and every other request with the next of replies.
func summarising(replies ...at.Reply) at.Reply {
	var mu sync.Mutex
	return at.Repeat(at.ReplyFunc(func(r *at.Request) at.Reply {
		if isSummary(r) {
			return at.NewStream().Text("SUMMARY: the user asked things.").Stop("end_turn")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			return nil
		}
		next := replies[0]
		replies = replies[1:]
		return next
	}))
}

// isSummary reports whether r is a summary call of memory's compaction.
func isSummary(r *at.Request) bool {
	msgs := r.Messages()
	return len(msgs) == 1 && strings.HasPrefix(msgs[0].Text, "<transcript>")
}

// longHistory returns a history with n earlier exchanges, each large
// enough that compaction has something to do, with a small context window.
func longHistory(n int) *memory.History {
	return fill(memory.New(memory.Config{Model: llm.DefaultModel, ContextWindow: 20_000, MaxTokens: 1000, KeepRecent: 1, Compaction: "client"}), n)
}

// fill appends n large exchanges to h and returns it.
func fill(h *memory.History, n int) *memory.History {
	for i := range n {
		h.AppendUser(llm.Text{Text: strings.Repeat("question ", 200) + string(rune('a'+i))})
		h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: strings.Repeat("answer ", 200)}}}, llm.Usage{})
	}
	return h
}

func TestStopReasons(t *testing.T) {
	tests := []struct {
		name     string
		replies  []at.Reply
		history  *memory.History
		state    State
		text     string
		requests int
		// kinds of events, without deltas and usage
		events []string
		// check inspects the requests and the history.
		check func(t *testing.T, reqs []*at.Request, h *memory.History)
	}{{
		name: "stop_sequence",
		replies: []at.Reply{at.NewStream().Text("1, 2, 3").EndBlock().
			Event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"4"},"usage":{"output_tokens":1}}`).
			Event("message_stop", `{"type":"message_stop"}`).EndWithoutStop()},
		state:    Finished,
		text:     "1, 2, 3",
		requests: 1,
		events:   []string{"turn_start", "result"},
	}, {
		name:     "max_tokens on text stops with its text kept",
		replies:  []at.Reply{at.NewStream().Text("A long answer that was cu").Stop("max_tokens")},
		state:    Truncated,
		text:     "A long answer that was cu",
		requests: 1,
		events:   []string{"turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			msgs := h.Messages()
			if got := llm.TextOf(msgs[len(msgs)-1].Content); got != "A long answer that was cu" {
				t.Errorf("last message text = %q", got)
			}
		},
	}, {
		name: "max_tokens cutting a tool_use: complete calls run, the cut one is answered with an error",
		replies: []at.Reply{
			at.NewStream().Text("Two calls.").
				ToolUse("toolu_ok", "echo", `{"text":"whole"}`).
				ToolUse("toolu_cut", "echo", `{"text":"this input never e`).
				Stop("max_tokens"),
			at.NewStream().Text("I will retry shorter.").Stop("end_turn"),
		},
		state:    Finished,
		text:     "I will retry shorter.",
		requests: 2,
		events:   []string{"turn_start", "tool_call_start", "tool_call", "tool_call_start", "tool_done", "tool_done", "turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			msgs := reqs[1].Messages()
			asst := msgs[len(msgs)-2]
			if cut := asst.Content[len(asst.Content)-1]; cut.ID != "toolu_cut" || string(cut.Input) != "{}" {
				t.Errorf("cut block sent back as %s, want toolu_cut with input {}", cut.Raw)
			}
			res := reqs[1].ToolResults()
			if len(res) != 2 || res[0].IsError || res[0].Content[0].Text != "whole" ||
				!res[1].IsError || res[1].Content[0].Text != cutOff {
				t.Errorf("tool results = %+v", res)
			}
		},
	}, {
		name: "pause_turn sends the turn back as the last message",
		replies: []at.Reply{
			at.NewStream().Text("Searching.").
				Block(at.Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"query":"go 1.26"}`).
				Stop("pause_turn"),
			at.NewStream().Text("Found it.").Stop("end_turn"),
		},
		state:    Finished,
		text:     "Found it.",
		requests: 2,
		events:   []string{"turn_start", "turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			msgs := reqs[1].Messages()
			last := msgs[len(msgs)-1]
			if last.Role != "assistant" || len(last.Content) != 2 || last.Content[1].Type != "server_tool_use" {
				t.Fatalf("last message = %+v, want the paused assistant turn", last)
			}
			var in struct{ Query string }
			if json.Unmarshal(last.Content[1].Input, &in); in.Query != "go 1.26" {
				t.Errorf("server tool input sent back = %s", last.Content[1].Raw)
			}
		},
	}, {
		name: "stop_reason compaction sends the compaction back and continues from it",
		replies: []at.Reply{
			at.NewStream().Usage(60000, 1, 0, 0).ToolUse("toolu_1", "echo", `{"text":"x"}`).Stop("tool_use"),
			at.NewStream().Usage(400, 1, 0, 0).Compaction("Echoed x once.").Stop("compaction"),
			at.NewStream().Text("Done.").Stop("end_turn"),
		},
		state:    Finished,
		text:     "Done.",
		requests: 3,
		events:   []string{"turn_start", "tool_call_start", "tool_call", "tool_done", "turn_start", "compacted", "turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			msgs := reqs[2].Messages()
			last := msgs[len(msgs)-1]
			if last.Role != "assistant" || len(last.Content) != 1 || last.Content[0].Type != "compaction" {
				t.Fatalf("last message = %+v, want the compaction block alone", last)
			}
			if len(msgs) != 2 {
				t.Errorf("request after the compaction sent %d messages, want the note and the block", len(msgs))
			}
			var b struct{ Content string }
			if json.Unmarshal(last.Content[0].Raw, &b); b.Content != "Echoed x once." {
				t.Errorf("compaction block sent back as %s", last.Content[0].Raw)
			}
			if h.Tokens() > 1000 {
				t.Errorf("Tokens() = %d after the compaction, want the compacted context's", h.Tokens())
			}
		},
	}, {
		name: "a compaction mid-turn is reported and kept",
		replies: []at.Reply{
			at.NewStream().Usage(300, 1, 0, 0).Compaction("Earlier: nothing.", 70000, 50, 0, 0).Text("Answer.").Stop("end_turn"),
		},
		state:    Finished,
		text:     "Answer.",
		requests: 1,
		events:   []string{"turn_start", "compacted", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			msgs := h.Messages()
			var rb llm.RawBlock
			if len(msgs) == 2 {
				rb, _ = msgs[1].Content[0].(llm.RawBlock)
			}
			if rb.Type != "compaction" {
				t.Errorf("history = %+v, want the note and the compacted turn", msgs)
			}
		},
	}, {
		name:     "refusal takes the refused exchange back",
		replies:  []at.Reply{at.NewStream().Text("I can").Stop("refusal")},
		state:    Refused,
		text:     "I can",
		requests: 1,
		events:   []string{"turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			if msgs := h.Messages(); len(msgs) != 0 {
				t.Errorf("history after a refused first prompt = %+v, want it empty", msgs)
			}
		},
	}, {
		name: "refusal after a tool turn keeps only the earlier conversation",
		replies: []at.Reply{
			at.NewStream().ToolUse("toolu_1", "echo", `{"text":"x"}`).Stop("tool_use"),
			at.NewStream().Text("no").Stop("refusal"),
		},
		history:  fill(memory.New(memory.Config{Model: llm.DefaultModel}), 1),
		state:    Refused,
		text:     "no",
		requests: 2,
		events:   []string{"turn_start", "tool_call_start", "tool_call", "tool_done", "turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			msgs := h.Messages()
			if len(msgs) != 2 || !strings.HasPrefix(llm.TextOf(msgs[0].Content), "question") {
				t.Errorf("history after the refusal = %d messages, want the 2 from before the run", len(msgs))
			}
		},
	}, {
		name: "refusal cancels calls already started",
		replies: []at.Reply{
			at.NewStream().ToolUse("toolu_1", "block", `{"n":1}`).Text("no").Stop("refusal"),
		},
		state:    Refused,
		text:     "no",
		requests: 1,
		events:   []string{"turn_start", "tool_call_start", "tool_call", "result"},
	}, {
		name: "model_context_window_exceeded compacts and continues",
		replies: []at.Reply{summarising(
			at.NewStream().Text("partial").Stop("model_context_window_exceeded"),
			at.NewStream().Text("after compaction").Stop("end_turn"),
		)},
		history:  longHistory(6),
		state:    Finished,
		text:     "after compaction",
		requests: 3, // turn, summary, turn
		events:   []string{"turn_start", "compacted", "retry", "turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			for _, m := range h.Messages() {
				if strings.Contains(llm.TextOf(m.Content), "partial") {
					t.Errorf("the cut turn reached the history")
				}
			}
			if !strings.Contains(llm.TextOf(h.Messages()[0].Content), "SUMMARY") {
				t.Errorf("history does not start with the summary: %+v", h.Messages()[0])
			}
		},
	}, {
		name: "tool_use with only server tools finishes quietly",
		replies: []at.Reply{at.NewStream().
			Block(at.Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"query":"go"}`).
			Block(at.Block{Raw: []byte(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`)}).
			Text("Nothing found.").Stop("tool_use")},
		state:    Finished,
		text:     "Nothing found.",
		requests: 1,
		events:   []string{"turn_start", "result"},
	}, {
		name:     "unknown stop reason is end_turn",
		replies:  []at.Reply{at.NewStream().Text("hm").Stop("brand_new_reason")},
		state:    Finished,
		text:     "hm",
		requests: 1,
		events:   []string{"turn_start", "result"},
	}, {
		name:     "an empty end_turn finishes without an empty message",
		replies:  []at.Reply{at.NewStream().Stop("end_turn")},
		state:    Finished,
		requests: 1,
		events:   []string{"turn_start", "result"},
		check: func(t *testing.T, reqs []*at.Request, h *memory.History) {
			if n := len(h.Messages()); n != 1 {
				t.Errorf("history has %d messages, want the user's only", n)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, client := fake(t, tt.replies...)
			var logs bytes.Buffer
			a := newAgent(t, client, Config{
				Registry: newTools(t).reg,
				History:  tt.history,
				Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
			})
			evs, res, err := collect(t, a.Stream(t.Context(), "go"))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if res.State != tt.state || res.Text != tt.text {
				t.Errorf("result = %+v, want state %q, text %q", res, tt.state, tt.text)
			}
			if diff := cmp.Diff(tt.events, kinds(evs, false)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			reqs := srv.Requests()
			if len(reqs) != tt.requests {
				t.Errorf("%d requests, want %d", len(reqs), tt.requests)
			}
			validHistory(t, a.cfg.History)
			if tt.check != nil {
				tt.check(t, reqs, a.cfg.History)
			}
			if strings.HasSuffix(tt.name, "finishes quietly") && strings.Contains(logs.String(), "unknown stop reason") {
				t.Errorf("a known stop reason was logged as unknown; logs:\n%s", logs.String())
			}
			if tt.name == "unknown stop reason is end_turn" && !strings.Contains(logs.String(), "brand_new_reason") {
				t.Errorf("no log line for the unknown stop reason; logs:\n%s", logs.String())
			}
		})
	}
}
