package llm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/internal/apirules"
)

// A final assistant turn the caller wrote fails before any request on the
// models that reject a prefill, and passes on those that take one; the
// API's own paused turn sent back, and a Summarize call, pass everywhere.
// Sampling parameters in Extra fail on every model. count_tokens is held
// to neither rule.
func TestCheckTurn(t *testing.T) {
	user := Message{Role: User, Content: []Block{Text{Text: "Find the Go release notes."}}}
	prefill := Message{Role: Assistant, Content: []Block{Text{Text: "{"}}}
	raw := func(typ, js string) Message {
		return Message{Role: Assistant, Content: []Block{Text{Text: "Searching."}, RawBlock{Type: typ, JSON: json.RawMessage(js)}}}
	}
	paused := raw("server_tool_use", `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`)
	result := raw("web_search_tool_result", `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`)
	compacted := Message{Role: Assistant, Content: []Block{RawBlock{Type: apirules.CompactionBlock, JSON: json.RawMessage(`{"type":"compaction","content":"Summary."}`)}}}
	tests := []struct {
		name, model string
		msgs        []Message
		summarize   bool
		extra       map[string]any
		count       bool
		wantErr     string // a substring; empty means none
	}{
		{"prefill on opus 5.5", "claude-opus-5-5", []Message{user, prefill}, false, nil, false, "does not continue a final assistant message"},
		{"prefill on fable 5.1", "claude-fable-5-1", []Message{user, prefill}, false, nil, false, "does not continue"},
		{"prefill on sonnet 5.5", "claude-sonnet-5-5", []Message{user, prefill}, false, nil, false, "does not continue"},
		{"prefill on haiku 5.5", "claude-haiku-5-5", []Message{user, prefill}, false, nil, false, "does not continue"},
		{"prefill on opus 5", "claude-opus-5", []Message{user, prefill}, false, nil, false, "does not continue"},
		{"prefill on opus 4.6", "claude-opus-4-6", []Message{user, prefill}, false, nil, false, "does not continue"},
		{"prefill on an unknown model", "claude-next", []Message{user, prefill}, false, nil, false, "does not know"},
		{"prefill on haiku 4.5", "claude-haiku-4-5-20251001", []Message{user, prefill}, false, nil, false, ""},
		{"prefill on opus 4.5", "claude-opus-4-5", []Message{user, prefill}, false, nil, false, ""},
		{"prefill on haiku 4.5 with thinking", "claude-haiku-4-5", []Message{user, prefill}, false, nil, false, "only with thinking off"},
		{"an empty final assistant message", "claude-opus-5-5", []Message{user, {Role: Assistant}}, false, nil, false, "does not continue"},
		{"pause_turn sent back", "claude-opus-5-5", []Message{user, paused}, false, nil, false, ""},
		{"pause_turn after a server tool result", "claude-haiku-5-5", []Message{user, result}, false, nil, false, ""},
		{"pause_turn and a prefill, one turn", "claude-sonnet-5-5", []Message{user, paused, prefill}, false, nil, false, ""},
		{"compaction sent back", "claude-fable-5-1", []Message{user, compacted}, false, nil, false, ""},
		{"a summarize call", "claude-opus-5-5", []Message{user, prefill}, true, nil, false, ""},
		{"a user turn last", "claude-opus-5-5", []Message{user, prefill, user}, false, nil, false, ""},
		{"prefill on count_tokens", "claude-opus-5-5", []Message{user, prefill}, false, nil, true, ""},
		{"temperature on opus 5.5", "claude-opus-5-5", []Message{user}, false, map[string]any{"temperature": 0.2}, false, `Extra["temperature"]`},
		{"temperature 1 on haiku 4.5", "claude-haiku-4-5", []Message{user}, false, map[string]any{"temperature": 1}, false, `Extra["temperature"]`},
		{"top_p on sonnet 5.5", "claude-sonnet-5-5", []Message{user}, false, map[string]any{"top_p": 0.99}, false, `Extra["top_p"]`},
		{"top_k on an unknown model", "claude-next", []Message{user}, false, map[string]any{"top_k": 5}, false, `Extra["top_k"]`},
		{"other Extra fields", "claude-opus-5-5", []Message{user}, false, map[string]any{"stop_sequences": []string{"END"}}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{Model: tt.model, Messages: tt.msgs, Extra: tt.extra}
			if strings.HasSuffix(tt.name, "with thinking") {
				r.Thinking = &ThinkingConfig{BudgetTokens: 1024}
			}
			if tt.summarize {
				r.Summarize = true
			}
			_, err := requestBody(r, tt.count)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
