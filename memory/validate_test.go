package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

// validate checks the request h's messages would make against the fake
// API's rules (anthropictest.CheckRequest), each violation named by its
// rule; an empty history has nothing to send yet.
func (h *History) validate() error {
	if len(h.entries) == 0 {
		return nil
	}
	body, err := json.Marshal(map[string]any{"model": "m", "max_tokens": 1, "messages": h.Messages()})
	if err != nil {
		return fmt.Errorf("memory: the history does not marshal: %w", err)
	}
	return anthropictest.CheckRequest(body)
}

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

// TestRepairMeetsRules checks Repair against the fake API's rules: a
// history the API takes stays as it is (consecutive messages of one role
// included, which the API merges), and one that breaks a rule, named here as
// the fake API names it, comes out valid.
func TestRepairMeetsRules(t *testing.T) {
	tests := []struct {
		name  string
		msgs  []llm.Message
		rules []string // broken, as anthropictest.CheckRequest names them; nil: valid
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
		{"empty history", nil, nil},
		{"two users merge", []llm.Message{user(text("a")), user(text("b"))}, nil},
		{"results split over two user messages", []llm.Message{user(text("a")), asst(use("t1"), use("t2")), user(result("t1", "x")), user(result("t2", "y"), text("b"))}, nil},
		{"first is assistant", []llm.Message{asst(text("x")), user(text("y"))}, []string{"first-user"}},
		{"unknown role", []llm.Message{user(text("a")), {Role: "developer", Content: []llm.Block{text("x")}}}, []string{"role"}},
		{"empty content", []llm.Message{user()}, []string{"empty-content"}},
		{"blank text", []llm.Message{user(text(" \n"))}, []string{"empty-text"}},
		{"paused turn ending in whitespace", []llm.Message{user(text("a")), asst(text("searching "))}, []string{"trailing-whitespace"}},
		{"unanswered at end", []llm.Message{user(text("a")), asst(use("t1"))}, []string{"tool-unanswered"}},
		{"unanswered in middle", []llm.Message{user(text("a")), asst(use("t1"), use("t2")), user(result("t1", "x"))}, []string{"tool-unanswered"}},
		{"orphan result", []llm.Message{user(result("t9", "x"))}, []string{"tool-result-orphan"}},
		{"result after text", []llm.Message{user(text("a")), asst(use("t1")), user(text("b"), result("t1", "x"))}, []string{"tool-result-first"}},
		{"result after a merged text message", []llm.Message{user(text("a")), asst(use("t1")), user(text("b")), user(result("t1", "x"))}, []string{"tool-result-first"}},
		{"duplicate result", []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x"), result("t1", "y"))}, []string{"tool-result-once"}},
		{"duplicate id", []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("t1")), user(result("t1", "y"))}, []string{"tool-use-id"}},
		{"bad id", []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t 1", Name: "n"}), user(result("t 1", "x"))}, []string{"tool-use-id"}},
		{"input not object", []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t1", Name: "n", Input: json.RawMessage(`[1]`)}), user(result("t1", "x"))}, []string{"tool-input"}},
		{"unsigned thinking", []llm.Message{user(text("a")), asst(llm.Thinking{Thinking: "x"}, text("y"))}, []string{"thinking-signature"}},
		{"nil block", []llm.Message{user(text("a"), nil)}, []string{"block-type"}},
		{"wrong roles", []llm.Message{user(text("a")), asst(llm.Image{MediaType: "image/png", Data: "AA=="}, use("t1")), user(result("t1", "x"), llm.Thinking{Thinking: "x", Signature: "s"})},
			[]string{"block-role", "block-role"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Config{})
			for _, m := range tt.msgs {
				h.push(entry{Entry: Entry{Message: m}})
			}
			before := h.Messages()
			err := h.validate()
			if tt.rules == nil {
				if err != nil {
					t.Fatalf("validate = %v, want nil", err)
				}
				if did := h.Repair(); did != nil {
					t.Errorf("Repair of a valid history = %q, want nothing to do", did)
				}
				if diff := cmp.Diff(before, h.Messages()); diff != "" {
					t.Errorf("Repair changed a valid history (-before +after):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("validate = nil, want %q broken", tt.rules)
			}
			if got := strings.Count(err.Error(), "\n\t"); got != len(tt.rules) {
				t.Errorf("%d violations, want %d: %v", got, len(tt.rules), err)
			}
			for _, rule := range tt.rules {
				if !strings.Contains(err.Error(), "["+rule+"]") {
					t.Errorf("error %q lacks [%s]", err, rule)
				}
			}
			if did := h.Repair(); did == nil {
				t.Error("Repair = nil, want fixes")
			}
			if err := h.validate(); err != nil {
				t.Errorf("after Repair: %v", err)
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
			want: []llm.Message{user(text("a")), asst(use("t1"), use("t2")), user(result("t2", "x"), interrupted("t1"), text("more"))},
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
			did:  []string{"dropped assistant messages before the first user message", "dropped orphan tool results"},
		},
		{
			// A turn's messages, which the API merges, stay apart.
			name: "blank text and empty message dropped",
			in:   []llm.Message{user(text("a")), user(text("  ")), user(text("b"))},
			want: []llm.Message{user(text("a")), user(text("b"))},
			did:  []string{"dropped blank text", "dropped empty messages"},
		},
		{
			// Sent back as the final message to resume it, a paused turn
			// may not end in whitespace.
			name: "paused turn ending in whitespace trimmed",
			in:   []llm.Message{user(text("a")), asst(text("found it"), llm.RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`)}, text("searching \n"))},
			want: []llm.Message{user(text("a")), asst(text("found it"), llm.RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`)}, text("searching"))},
			did:  []string{"trimmed whitespace ending the final assistant message"},
		},
		{
			name: "assistant messages around an emptied user turn make one turn",
			in:   []llm.Message{user(text("a")), asst(text("1")), user(result("zz", "x")), asst(text("2"))},
			want: []llm.Message{user(text("a")), asst(text("1")), asst(text("2"))},
			did:  []string{"dropped orphan tool results", "dropped empty messages"},
		},
		{
			name: "assistant messages in a row are one turn, answered after the last",
			in:   []llm.Message{user(text("a")), asst(use("t1")), asst(text("b"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), asst(text("b")), user(interrupted("t1"))},
			did:  []string{"answered interrupted tool calls"},
		},
		{
			// Dropped, the call would take its result with it and leave the
			// assistant turn last mid-run: a prefill the current models refuse.
			name: "duplicate tool_use id from an earlier turn made fresh, with its result",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(text("again"), use("t1")), user(result("t1", "y"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(text("again"), use("toolu_repaired_1")), user(result("toolu_repaired_1", "y"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one"},
		},
		{
			name: "duplicate tool_use id in one turn: the results go to the calls in order",
			in:   []llm.Message{user(text("a")), asst(use("t1"), use("t1")), user(result("t1", "x"), result("t1", "y"))},
			want: []llm.Message{user(text("a")), asst(use("t1"), use("toolu_repaired_1")), user(result("t1", "x"), result("toolu_repaired_1", "y"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one"},
		},
		{
			// The API merges the two user messages: the results of a turn
			// may stand in either.
			name: "duplicate tool_use id made fresh, its result in the second message of the user turn",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("t1")), user(text("b")), user(result("t1", "y"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("toolu_repaired_1")), user(result("toolu_repaired_1", "y"), text("b"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one", "moved tool results before the other blocks of their turn"},
		},
		{
			name: "duplicate tool_use ids in one turn, their results split over two messages",
			in:   []llm.Message{user(text("a")), asst(use("t1"), use("t1")), user(result("t1", "x")), user(result("t1", "y"))},
			want: []llm.Message{user(text("a")), asst(use("t1"), use("toolu_repaired_1")), user(result("t1", "x")), user(result("toolu_repaired_1", "y"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one"},
		},
		{
			name: "a result in the next user turn is not matched to an earlier turn's call",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("t1")), user(result("t1", "y")), asst(text("ok")), user(result("t1", "z"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("toolu_repaired_1")), user(result("toolu_repaired_1", "y")), asst(text("ok"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one", "dropped orphan tool results", "dropped empty messages"},
		},
		{
			name: "malformed tool_use id made fresh, skipping ids in use, with its result",
			in:   []llm.Message{user(text("a")), asst(use("toolu_repaired_1")), user(result("toolu_repaired_1", "x")), asst(llm.ToolUse{ID: "t 1", Name: "calc", Input: json.RawMessage(`{"x":1}`)}), user(result("t 1", "y"))},
			want: []llm.Message{user(text("a")), asst(use("toolu_repaired_1")), user(result("toolu_repaired_1", "x")), asst(use("toolu_repaired_2")), user(result("toolu_repaired_2", "y"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one"},
		},
		{
			name: "unanswered duplicate made fresh, then answered",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("t1"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("toolu_repaired_1")), user(interrupted("toolu_repaired_1"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one", "answered interrupted tool calls"},
		},
		{
			// A model not in the model table (llm.LookupModel) is taken to bind its thinking.
			name: "the thinking a fresh id invalidates dropped",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(llm.Thinking{Thinking: "hm", Signature: "s"}, use("t1")), user(result("t1", "y"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("toolu_repaired_1")), user(result("toolu_repaired_1", "y"))},
			did:  []string{"gave tool calls with a bad or duplicate id a fresh one"},
		},
		{
			name: "tool_use without a name dropped with its result",
			in:   []llm.Message{user(text("a")), asst(text("b"), llm.ToolUse{ID: "t1"}), user(result("t1", "x"), text("go on"))},
			want: []llm.Message{user(text("a")), asst(text("b")), user(text("go on"))},
			did:  []string{"dropped tool_use blocks with no name", "dropped orphan tool results"},
		},
		{
			name: "result after text moved first",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(text("b"), result("t1", "x"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x"), text("b"))},
			did:  []string{"moved tool results before the other blocks of their turn"},
		},
		{
			// The turn, which the API merges, is one message once changed.
			name: "result after a text message of its turn moved first",
			in:   []llm.Message{user(text("a")), asst(use("t1")), user(text("b")), user(result("t1", "x"))},
			want: []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x"), text("b"))},
			did:  []string{"moved tool results before the other blocks of their turn"},
		},
		{
			name: "cut-off tool input before the last turn becomes {}",
			in:   []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t1", Name: "calc", Input: json.RawMessage(`{"x": "cut`)}), user(result("t1", "x")), asst(text("ok"))},
			want: []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t1", Name: "calc", Input: json.RawMessage(`{}`)}), user(result("t1", "x")), asst(text("ok"))},
			did:  []string{"replaced tool inputs that were not JSON objects with {}"},
		},
		{
			name: "unsigned thinking dropped",
			in:   []llm.Message{user(text("a")), asst(llm.Thinking{Thinking: "x"}, text("y"))},
			want: []llm.Message{user(text("a")), asst(text("y"))},
			did:  []string{"dropped unsigned thinking"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Config{})
			h.entries = nil
			for _, m := range tt.in {
				h.push(entry{Entry: Entry{Message: m}})
			}
			did := h.Repair()
			if diff := cmp.Diff(tt.want, h.Messages()); diff != "" {
				t.Errorf("messages after Repair (-want +got):\n%s", diff)
			}
			if err := h.validate(); err != nil {
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
	h.AppendUser(llm.Text{Text: "hi"})
	h.AppendAssistant(asst(use("t1")), llm.Usage{})
	h.AppendUser(result("t1", "x"))
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
	h.AppendUser(llm.Text{Text: "   "})
	if len(h.entries) != 0 {
		t.Fatalf("blank user text appended a message")
	}
	h.AppendUser(text(""), text("x"))
	if diff := cmp.Diff([]llm.Message{user(text("x"))}, h.Messages()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAppendNilBlock checks that a nil block in an appended turn does not
// panic, and that Repair drops it.
func TestAppendNilBlock(t *testing.T) {
	h := New(Config{})
	h.AppendUser(text("a"), nil)
	h.AppendAssistant(asst(text("b"), nil), llm.Usage{InputTokens: 10})
	h.Repair()
	if diff := cmp.Diff([]llm.Message{user(text("a")), asst(text("b"))}, h.Messages()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// interrupted is the synthetic result Repair gives call id.
func interrupted(id string) llm.Block {
	return llm.ToolResult{ToolUseID: id, IsError: true, Content: []llm.Block{llm.Text{Text: interruptedResult}}}
}

// TestRepairTrimKeepsExactCount checks that trimming the whitespace that
// ends an answer keeps the exact count the API gave for it.
func TestRepairTrimKeepsExactCount(t *testing.T) {
	h := New(Config{})
	h.AppendUser(text("hi"))
	h.AppendAssistant(asst(text("hello\n")), llm.Usage{InputTokens: 500, OutputTokens: 20})
	if did := h.Repair(); len(did) != 1 || h.Tokens() != 520 || llm.TextOf(h.Messages()[1].Content) != "hello" {
		t.Errorf("Repair = %q, Tokens = %d, text %q; want one trim, 520, %q", did, h.Tokens(), llm.TextOf(h.Messages()[1].Content), "hello")
	}
}
