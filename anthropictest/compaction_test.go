package anthropictest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCompactionWireFormat checks the builders against the shape of the
// recorded compaction streams: a compaction block with null content, one
// compaction_delta with the summary, and iterations in message_delta's
// usage, the compaction's apart from the message's.
func TestCompactionWireFormat(t *testing.T) {
	got := string(NewStream().Usage(181, 1, 0, 0).Compaction("Summary.", 100, 83, 0, 55096).Text("Hi").Stop("end_turn", 8).Bytes())
	for _, want := range []string{
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"compaction","content":null}}` + "\n\n" +
			"event: ping\n" + `data: {"type": "ping"}` + "\n\n" +
			"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"compaction_delta","content":"Summary."}}` + "\n\n" +
			"event: content_block_stop\n",
		`"usage":{"input_tokens":181,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":8,` +
			`"iterations":[{"type":"compaction","input_tokens":100,"output_tokens":83,"cache_creation_input_tokens":0,"cache_read_input_tokens":55096},` +
			`{"type":"message","input_tokens":181,"output_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}]}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stream lacks\n%s\ngot:\n%s", want, got)
		}
	}
	paused := string(NewStream().Compaction("S").Stop("compaction").Bytes())
	if !strings.Contains(paused, `"stop_reason":"compaction"`) {
		t.Errorf("paused compaction stream has no stop_reason compaction:\n%s", paused)
	}
}

// TestContextManagementChecks checks that the server answers 400, without
// using a scripted reply, what the API refuses of context_management and
// compaction, and serves the rest.
func TestContextManagementChecks(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, beta, extra string
		want              string // a part of the 400's message, "" for a 200
	}{
		{name: "none", want: ""},
		{name: "compact", beta: "compact-2026-01-12", extra: `"context_management":{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":50000}}]}`},
		{name: "compact no beta", extra: `"context_management":{"edits":[{"type":"compact_20260112"}]}`, want: "compact-2026-01-12"},
		{name: "clear no beta", beta: "compact-2026-01-12", extra: `"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}`, want: "context-management-2025-06-27"},
		{name: "both betas", beta: "context-management-2025-06-27, compact-2026-01-12",
			extra: `"context_management":{"edits":[{"type":"clear_thinking_20251015"},{"type":"clear_tool_uses_20250919"},{"type":"compact_20260112"}]}`},
		{name: "low trigger", beta: "compact-2026-01-12", extra: `"context_management":{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":49999}}]}`, want: "at least 50000"},
		{name: "thinking not first", beta: "context-management-2025-06-27",
			extra: `"context_management":{"edits":[{"type":"clear_tool_uses_20250919"},{"type":"clear_thinking_20251015"}]}`, want: "must be the first edit"},
		{name: "unknown edit", beta: "context-management-2025-06-27", extra: `"context_management":{"edits":[{"type":"clear_everything"}]}`, want: "unknown context management edit"},
		{name: "summarize", beta: "compact-2026-09-04", extra: `"compaction":{"type":"summarize"}`},
		{name: "summarize no beta", extra: `"compaction":{"type":"summarize"}`, want: "compact-2026-09-04"},
		{name: "summarize and edits", beta: "compact-2026-09-04,compact-2026-01-12",
			extra: `"compaction":{"type":"summarize"},"context_management":{"edits":[{"type":"compact_20260112"}]}`, want: "cannot be combined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(NewStream().Text("ok"))
			defer srv.Close()
			body := `{"model":"claude-opus-5-5","max_tokens":10,"stream":true,` + msgs
			if tc.extra != "" {
				body += "," + tc.extra
			}
			req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(body+"}"))
			if tc.beta != "" {
				req.Header.Set("Anthropic-Beta", tc.beta)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Type, Message string }
			}
			json.NewDecoder(resp.Body).Decode(&e)
			switch {
			case tc.want == "" && resp.StatusCode != 200:
				t.Errorf("status %d (%s), want 200", resp.StatusCode, e.Error.Message)
			case tc.want != "" && (resp.StatusCode != 400 || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.want)):
				t.Errorf("status %d %s %q, want 400 invalid_request_error naming %q", resp.StatusCode, e.Error.Type, e.Error.Message, tc.want)
			case tc.want != "" && srv.pending() != 1:
				t.Errorf("a refused request used the scripted reply")
			}
		})
	}
}

// TestPromptAfterCompaction checks that the prompt the model reads starts
// at the last compaction block, that each prompt message's Text is of the
// blocks kept, and that a conversation may open with a
// compaction block, as an on-demand compaction's reply is sent back.
func TestPromptAfterCompaction(t *testing.T) {
	body := `{"model":"m","max_tokens":10,"messages":[` +
		`{"role":"user","content":"old"},` +
		`{"role":"assistant","content":[{"type":"text","text":"dropped"},{"type":"compaction","content":"S"},{"type":"text","text":"kept"}]},` +
		`{"role":"user","content":"new"}]}`
	p, err := (&Request{Body: []byte(body)}).Params()
	if err != nil {
		t.Fatal(err)
	}
	var got, texts []string
	for _, m := range p.Prompt {
		for _, b := range m.Content {
			got = append(got, m.Role+":"+b.Type+":"+b.Text)
		}
		texts = append(texts, m.Text)
	}
	want := []string{"assistant:compaction:", "assistant:text:kept", "user:text:new"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Prompt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kept", "new"}, texts); diff != "" {
		t.Errorf("Prompt's Text (-want +got):\n%s", diff)
	}
	if got := p.Messages[1].Text; got != "droppedkept" {
		t.Errorf("Messages[1].Text = %q, want the whole message's text %q", got, "droppedkept")
	}
	opens := `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"compaction","content":"S","signature":"x"}]},{"role":"user","content":"go on"}]}`
	if err := CheckRequest([]byte(opens)); err != nil {
		t.Errorf("a conversation opening with a compaction block: %v", err)
	}
	bad := `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"hi"},{"role":"user","content":"go on"}]}`
	if err := CheckRequest([]byte(bad)); err == nil || !strings.Contains(err.Error(), "first-user") {
		t.Errorf("a conversation opening with assistant text: %v, want first-user", err)
	}
}
