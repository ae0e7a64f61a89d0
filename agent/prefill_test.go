package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// On each current model, none of the loop's requests is a prefill, which
// these models reject: a paused turn (pause_turn) and a compaction (stop
// reason compaction) go back as the API's own turn, which the strict fake
// and llm's check both take, and every other way a history can end with an
// assistant turn (a finished or interrupted run, a resumed session, a
// turn left paused, an unanswered call repaired) is followed by the
// prompt, or mid-run by the results of its calls, also of a call whose id
// Repair made fresh. The fake answers a prefill with the API's 400, and fake() holds
// every request to anthropictest.CheckRequest.
func TestNoPrefillOnCurrentModels(t *testing.T) {
	models := []string{"claude-opus-5-5", "claude-fable-5-1", "claude-sonnet-5-5", "claude-haiku-5-5"}
	paused := at.NewStream().Text("Searching.").
		Block(at.Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"query":"go 1.26"}`).
		Stop("pause_turn")
	answer := func(h *memory.History, blocks ...llm.Block) {
		h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: blocks}, llm.Usage{})
	}
	tests := []struct {
		name    string
		replies func() []at.Reply
		history func(h *memory.History) // what an earlier run or session left
		last    string                  // the role the last request ends with
	}{
		{"pause_turn continues the paused turn", func() []at.Reply {
			return []at.Reply{paused, at.NewStream().Text("Found it.").Stop("end_turn")}
		}, nil, "assistant"},
		{"stop_reason compaction continues from the block", func() []at.Reply {
			return []at.Reply{at.NewStream().Compaction("They asked about Go.").Stop("compaction"), at.NewStream().Text("Done.").Stop("end_turn")}
		}, nil, "assistant"},
		// Repair gives the second call a fresh id rather than drop it and
		// its result, which would leave "Again." last.
		{"a call reusing an earlier call's id", func() []at.Reply {
			return []at.Reply{at.NewStream().ToolUse("toolu_1", "echo", `{"text":"a"}`).Stop("tool_use"),
				at.NewStream().Text("Again.").ToolUse("toolu_1", "echo", `{"text":"b"}`).Stop("tool_use"),
				at.NewStream().Text("Done.").Stop("end_turn")}
		}, nil, "user"},
		{"a resumed session that ended with an answer", nil, func(h *memory.History) {
			h.AppendUser(llm.Text{Text: "hi"})
			answer(h, llm.Text{Text: "Hello."})
		}, "user"},
		{"an interrupted run", nil, func(h *memory.History) {
			h.AppendUser(llm.Text{Text: "tell me a story"})
			answer(h, llm.Text{Text: "Once"}, llm.Text{Text: interrupted})
		}, "user"},
		{"a turn left paused", nil, func(h *memory.History) {
			h.AppendUser(llm.Text{Text: "search"})
			answer(h, llm.RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`)},
				llm.RawBlock{Type: "web_search_tool_result", JSON: json.RawMessage(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`)})
		}, "user"},
		{"an unanswered call, repaired", nil, func(h *memory.History) {
			h.AppendUser(llm.Text{Text: "echo x"})
			answer(h, llm.ToolUse{ID: "toolu_1", Name: "echo", Input: json.RawMessage(`{"text":"x"}`)})
		}, "user"},
	}
	for _, model := range models {
		for _, tt := range tests {
			t.Run(model+"/"+tt.name, func(t *testing.T) {
				replies := []at.Reply{at.NewStream().Text("ok").Stop("end_turn")}
				if tt.replies != nil {
					replies = tt.replies()
				}
				srv, client := fake(t, replies...)
				h := memory.New(memory.Config{Model: model})
				if tt.history != nil {
					tt.history(h)
				}
				a := newAgent(t, client, Config{History: h, Registry: newTools(t).reg})
				res, err := a.Run(context.Background(), "go on")
				if err != nil {
					t.Fatalf("Run: %v (state %s)", err, res.State)
				}
				reqs := srv.Requests()
				msgs := reqs[len(reqs)-1].Messages()
				if diff := cmp.Diff(tt.last, msgs[len(msgs)-1].Role); diff != "" {
					t.Errorf("the last request ends with (-want +got):\n%s", diff)
				}
			})
		}
	}
}
