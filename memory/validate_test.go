package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

// validate returns every violation of the API's rules in h as one error,
// each named by its rule, or nil.
func (h *History) validate() error {
	vs := h.violations()
	if len(vs) == 0 {
		return nil
	}
	ps := make([]string, len(vs))
	for i, v := range vs {
		if ps[i] = fmt.Sprintf("message %d", v.Message); v.Block >= 0 {
			ps[i] += fmt.Sprintf(", block %d", v.Block)
		}
		ps[i] += fmt.Sprintf(": %s [%s]", v.Msg, v.Rule)
	}
	return errors.New("memory: history breaks the API's rules: " + strings.Join(ps, "; "))
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

// Validate reports every violation, each named by its rule, the same rules
// anthropictest.CheckRequest enforces.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		msgs []llm.Message
		want []string // rules, one per expected problem; nil means valid
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
		{"first is assistant", []llm.Message{asst(text("x")), user(text("y"))}, []string{"first-user"}},
		{"unknown role", []llm.Message{user(text("a")), {Role: "system", Content: []llm.Block{text("x")}}}, []string{"role"}},
		{"empty content", []llm.Message{user()}, []string{"empty-content"}},
		{"blank text", []llm.Message{user(text(" \n"))}, []string{"empty-text"}},
		{"paused turn ending in whitespace", []llm.Message{user(text("a")), asst(text("searching "))}, []string{"trailing-whitespace"}},
		{"unanswered at end", []llm.Message{user(text("a")), asst(use("t1"))}, []string{"tool-unanswered"}},
		{"unanswered in middle", []llm.Message{user(text("a")), asst(use("t1"), use("t2")), user(result("t1", "x"))}, []string{"tool-unanswered"}},
		{"orphan result", []llm.Message{user(result("t9", "x"))}, []string{"tool-result-orphan"}},
		{"result after text", []llm.Message{user(text("a")), asst(use("t1")), user(text("b"), result("t1", "x"))}, []string{"tool-result-first"}},
		{"duplicate result", []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x"), result("t1", "y"))}, []string{"tool-result-once"}},
		{"duplicate id", []llm.Message{user(text("a")), asst(use("t1")), user(result("t1", "x")), asst(use("t1")), user(result("t1", "y"))}, []string{"tool-use-id"}},
		{"bad id", []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t 1", Name: "n"}), user(result("t 1", "x"))}, []string{"tool-use-id"}},
		{"input not object", []llm.Message{user(text("a")), asst(llm.ToolUse{ID: "t1", Name: "n", Input: json.RawMessage(`{"x":`)}), user(result("t1", "x"))}, []string{"tool-input"}},
		{"unsigned thinking", []llm.Message{user(text("a")), asst(llm.Thinking{Thinking: "x"}, text("y"))}, []string{"thinking-signature"}},
		{"nil block", []llm.Message{user(text("a"), nil)}, []string{"block-type"}},
		{"wrong roles", []llm.Message{user(text("a")), asst(llm.Image{MediaType: "image/png", Data: "AA=="}, use("t1")), user(result("t1", "x"), llm.Thinking{Thinking: "x", Signature: "s"})},
			[]string{"block-role", "block-role"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateMessages(tt.msgs)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate = nil, want an error")
			}
			if got := strings.Count(err.Error(), "]; ") + 1; got != len(tt.want) {
				t.Errorf("%d problems, want %d: %v", got, len(tt.want), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), "["+w+"]") {
					t.Errorf("error %q lacks [%s]", err, w)
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
			name: "blank text and empty message dropped, users merged",
			in:   []llm.Message{user(text("a")), user(text("  ")), user(text("b"))},
			want: []llm.Message{user(text("a"), text("b"))},
			did:  []string{"dropped blank text", "dropped empty messages", "merged consecutive user messages"},
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
			name: "assistant after emptied user merges",
			in:   []llm.Message{user(text("a")), asst(text("1")), user(result("zz", "x")), asst(text("2"))},
			want: []llm.Message{user(text("a")), asst(text("1"), text("2"))},
			did:  []string{"dropped orphan tool results", "dropped empty messages", "merged consecutive assistant messages"},
		},
		{
			name: "assistant tool turns in a row merge, then get results",
			in:   []llm.Message{user(text("a")), asst(use("t1")), asst(text("b"))},
			want: []llm.Message{user(text("a")), asst(use("t1"), text("b")), user(interrupted("t1"))},
			did:  []string{"merged consecutive assistant messages", "answered interrupted tool calls"},
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
