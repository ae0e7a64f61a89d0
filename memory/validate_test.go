package memory

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

func user(blocks ...llm.Block) llm.Message { return llm.Message{Role: llm.User, Content: blocks} }
func asst(blocks ...llm.Block) llm.Message {
	return llm.Message{Role: llm.Assistant, Content: blocks}
}
func text(s string) llm.Text { return llm.Text{Text: s} }
func use(id string) llm.ToolUse {
	return llm.ToolUse{ID: id, Name: "calc", Input: json.RawMessage(`{"x":1}`)}
}
func result(id, s string) llm.ToolResult {
	return llm.ToolResult{ToolUseID: id, Content: []llm.Block{text(s)}}
}

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name string
		msgs []llm.Message
		want []string // substrings of the error, one per expected problem; nil means valid
	}{
		{"valid text", []llm.Message{user(text("hi")), asst(text("hello"))}, nil},
		{"valid tool round", []llm.Message{
			user(text("add")),
			asst(text("calling"), use("t1"), use("t2")),
			user(result("t2", "3"), result("t1", "4"), text("go on")),
			asst(text("done")),
		}, nil},
		{"valid thinking and raw", []llm.Message{
			user(text("q")),
			asst(llm.Thinking{Thinking: "hmm", Signature: "sig"}, llm.RedactedThinking{Data: "xx"},
				llm.RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`)},
				text("a")),
		}, nil},
		{"empty", nil, []string{"no messages"}},
		{"first is assistant", []llm.Message{asst(text("x")), user(text("y"))}, []string{"first message must be a user"}},
		{"two users", []llm.Message{user(text("a")), user(text("b"))}, []string{"two user messages in a row"}},
		{"unknown role", []llm.Message{user(text("a")), {Role: "system", Content: []llm.Block{text("x")}}}, []string{`unknown role "system"`}},
		{"empty content", []llm.Message{user()}, []string{"empty content"}},
		{"blank text", []llm.Message{user(text(" \n"))}, []string{"blank text"}},
		{"unanswered at end", []llm.Message{user(text("a")), asst(use("t1"))}, []string{`"t1" is not answered: no message follows`}},
		{"unanswered in middle", []llm.Message{user(text("a")), asst(use("t1"), use("t2")), user(result("t1", "x"))}, []string{`"t2" is not answered in the next message`}},
		{"orphan result", []llm.Message{user(result("t9", "x"))}, []string{`"t9" answers no tool_use`}},
		{"result after text", []llm.Message{user(text("a")), asst(use("t1")), user(text("b"), result("t1", "x"))}, []string{"tool results must come first"}},
		{"duplicate result", []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x"), result("t1", "y"))}, []string{`second tool_result for "t1"`}},
		{"duplicate id", []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("t1")), user(result("t1", "y"))}, []string{`duplicate tool_use id "t1"`}},
		{"bad id", []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t 1", Name: "n"}), user(result("t 1", "x"))}, []string{"is not [a-zA-Z0-9_-]+"}},
		{"input not object", []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t1", Name: "n", Input: json.RawMessage(`{"x":`)}), user(result("t1", "x"))}, []string{"input is not a JSON object"}},
		{"unsigned thinking", []llm.Message{user(text("a")), asst(llm.Thinking{Thinking: "x"}, text("y"))}, []string{"thinking without its signature"}},
		{"wrong roles", []llm.Message{user(use("t1"), llm.Thinking{Thinking: "x", Signature: "s"}), asst(llm.Image{MediaType: "image/png", Data: "AA=="}, result("t1", "x"))}, []string{
			"tool_use in a user message", "thinking in a user message", "image in an assistant message", "tool_result in an assistant message",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateMessages(tt.msgs)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateMessages = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ValidateMessages = %v, want ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestRepair(t *testing.T) {
	tests := []struct {
		name string
		in   []llm.Message
		want []llm.Message
		did  []string // prefixes of the fixes reported
	}{
		{
			name: "valid history untouched",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(text("ok"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(text("ok"))},
		},
		{
			name: "interrupted turn at the end gets synthetic results",
			in:   []llm.Message{user(text("a")), asst(text("t"), use("t1"), use("t2"))},
			want: []llm.Message{user(text("a")), asst(text("t"), use("t1"), use("t2")), user(interrupted("t1"), interrupted("t2"))},
			did:  []string{"answered interrupted tool calls"},
		},
		{
			name: "partly answered turn is completed, real results kept first",
			in:   []llm.Message{user(text("a")), asst(use("t1"), use("t2")), user(result("t2", "x"), text("more"))},
			want: []llm.Message{user(text("a")), asst(use("t1"), use("t2")), user(interrupted("t1"), result("t2", "x"), text("more"))},
			did:  []string{"answered interrupted tool calls"},
		},
		{
			name: "interrupted turn followed by a new user prompt",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(text("never mind"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(interrupted("t1"), text("never mind"))},
			did:  []string{"answered interrupted tool calls"},
		},
		{
			name: "trailing incomplete assistant dropped",
			in:   []llm.Message{user(text("a")), asst(text("t"), llm.ToolUse{ID: "t1", Name: "n", Input: json.RawMessage(`{"x": "cut`)})},
			want: []llm.Message{user(text("a"))},
			did:  []string{"dropped a trailing incomplete assistant turn"},
		},
		{
			name: "orphan results dropped, leading assistant dropped",
			in:   []llm.Message{asst(text("x")), user(result("t1", "x"), text("hello"))},
			want: []llm.Message{user(text("hello"))},
			did:  []string{"dropped orphan tool results", "dropped assistant messages before the first user message"},
		},
		{
			name: "blank text and empty message dropped, users merged",
			in:   []llm.Message{user(text("a")), user(text("  ")), user(text("b"))},
			want: []llm.Message{user(text("a"), text("b"))},
			did:  []string{"dropped blocks the API rejects", "merged consecutive user messages"},
		},
		{
			name: "assistant after emptied user merges",
			in:   []llm.Message{user(text("a")), asst(text("1")), user(result("zz", "x")), asst(text("2"))},
			want: []llm.Message{user(text("a")), asst(text("1"), text("2"))},
			did:  []string{"dropped orphan tool results", "dropped empty messages", "merged consecutive assistant messages"},
		},
		{
			name: "assistant tool turns in a row get results between",
			in:   []llm.Message{user(text("a")), asst(use("t1")), asst(text("b"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(interrupted("t1")), asst(text("b"))},
			did:  []string{"answered interrupted tool calls"},
		},
		{
			name: "duplicate tool_use id dropped with its result",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(text("again"), use("t1")), user(result("t1", "y"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(text("again"))},
			did:  []string{"dropped tool_use blocks with a bad or duplicate id", "dropped orphan tool results", "dropped empty messages"},
		},
		{
			name: "unsigned thinking dropped",
			in:   []llm.Message{user(text("a")), asst(llm.Thinking{Thinking: "x"}, text("y"))},
			want: []llm.Message{user(text("a")), asst(text("y"))},
			did:  []string{"dropped blocks the API rejects (thinking without its signature)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Config{})
			h.entries = nil
			for _, m := range tt.in {
				h.push(entry{msg: m})
			}
			did := h.Repair()
			if diff := cmp.Diff(tt.want, h.Messages()); diff != "" {
				t.Errorf("messages after Repair (-want +got):\n%s", diff)
			}
			if err := h.Validate(); err != nil {
				t.Errorf("Validate after Repair: %v", err)
			}
			if len(did) != len(tt.did) {
				t.Fatalf("Repair reported %q, want %d fixes starting %q", did, len(tt.did), tt.did)
			}
			for i := range did {
				if !strings.HasPrefix(did[i], tt.did[i]) {
					t.Errorf("fix %d = %q, want prefix %q", i, did[i], tt.did[i])
				}
			}
			if again := h.Repair(); again != nil {
				t.Errorf("second Repair = %q, want nothing to do", again)
			}
		})
	}
}

func TestMessagesIsACopy(t *testing.T) {
	h := New(Config{})
	h.AppendUserText("hi")
	h.AppendAssistant(asst(use("t1")), llm.Usage{})
	h.AppendToolResults([]llm.ToolResult{result("t1", "x")})
	msgs := h.Messages()
	msgs[0].Content[0] = text("changed")
	msgs[2].Content[0].(llm.ToolResult).Content[0] = text("changed")
	_ = append(msgs[1].Content, text("more"))
	msgs[1].Role = llm.User
	want := []llm.Message{user(text("hi")), asst(use("t1")), user(result("t1", "x"))}
	if diff := cmp.Diff(want, h.Messages()); diff != "" {
		t.Errorf("history changed through Messages (-want +got):\n%s", diff)
	}
}

func TestAppendUserDropsBlank(t *testing.T) {
	h := New(Config{})
	h.AppendUserText("   ")
	if h.Len() != 0 {
		t.Fatalf("blank user text appended a message")
	}
	h.AppendUser(text(""), text("x"))
	if diff := cmp.Diff([]llm.Message{user(text("x"))}, h.Messages()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
