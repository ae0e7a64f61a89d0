package llm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/internal/apirules"
)

func TestAssembler(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name       string
		events     []Event
		completed  []Block // what Add returned, in order
		want       []Block // Message().Content
		incomplete []Block
		stop       StopReason
	}{{
		name: "text",
		events: []Event{MessageStart{ID: "m"}, TextDelta{}, TextDelta{Text: "Hel"}, TextDelta{Text: "lo"}, BlockStop{},
			MessageDelta{StopReason: EndTurn}, MessageStop{}},
		completed: []Block{Text{Text: "Hello"}},
		want:      []Block{Text{Text: "Hello"}},
		stop:      EndTurn,
	}, {
		name: "tool input rules",
		events: []Event{
			ToolUseStart{Index: 0, ID: "a", Name: "f", Input: raw("{}")}, ToolInputDelta{Index: 0, PartialJSON: ""}, BlockStop{Index: 0},
			ToolUseStart{Index: 1, ID: "b", Name: "f", Input: raw(`{"p":1}`)}, BlockStop{Index: 1},
			ToolUseStart{Index: 2, ID: "c", Name: "f", Input: raw("{}")},
			ToolInputDelta{Index: 2, PartialJSON: `{"s": "a\`}, ToolInputDelta{Index: 2, PartialJSON: `"b"}`}, BlockStop{Index: 2},
			ToolUseStart{Index: 3, ID: "d", Name: "f", Input: raw("{}")}, ToolInputDelta{Index: 3, PartialJSON: `{"s": `}, BlockStop{Index: 3},
			ToolUseStart{Index: 4, ID: "e", Name: "f"}, BlockStop{Index: 4},
		},
		completed: []Block{
			ToolUse{ID: "a", Name: "f", Input: raw("{}")},
			ToolUse{ID: "b", Name: "f", Input: raw(`{"p":1}`)},
			ToolUse{ID: "c", Name: "f", Input: raw(`{"s": "a\"b"}`)},
			ToolUse{ID: "d", Name: "f", Input: raw(`{"INVALID_JSON":"{\"s\":"}`)},
			ToolUse{ID: "e", Name: "f", Input: raw("{}")},
		},
	}, {
		name: "interleaved blocks, empty text dropped, cut tool incomplete",
		events: []Event{
			TextDelta{Index: 0}, ToolUseStart{Index: 1, ID: "t", Name: "f", Input: raw("{}")},
			ThinkingDelta{Index: 2}, TextDelta{Index: 3},
			ToolInputDelta{Index: 1, PartialJSON: `{"x":`}, ThinkingDelta{Index: 2, Thinking: "th"},
			TextDelta{Index: 3, Text: "late"}, signatureDelta{Index: 2, Signature: "sig"},
			BlockStop{Index: 3}, BlockStop{Index: 2}, BlockStop{Index: 0},
			MessageDelta{StopReason: MaxTokens, Usage: Usage{OutputTokens: 9}}, MessageStop{},
		},
		completed:  []Block{Text{Text: "late"}, Thinking{Thinking: "th", Signature: "sig"}},
		want:       []Block{Thinking{Thinking: "th", Signature: "sig"}, Text{Text: "late"}},
		incomplete: []Block{ToolUse{ID: "t", Name: "f", Input: raw(`{"INVALID_JSON":"{\"x\":"}`)}},
		stop:       MaxTokens,
	}, {
		name: "citations and raw blocks",
		events: []Event{
			rawStart{Index: 0, Block: RawBlock{Type: "server_tool_use", JSON: raw(`{"type":"server_tool_use","id":"s","name":"web_search","input":{}}`)}},
			ToolInputDelta{Index: 0, PartialJSON: `{"query":`}, ToolInputDelta{Index: 0, PartialJSON: `"go"}`}, BlockStop{Index: 0},
			rawStart{Index: 1, Block: RedactedThinking{Data: "x"}}, BlockStop{Index: 1},
			TextDelta{Index: 2}, TextDelta{Index: 2, Text: "cited"}, citationDelta{Index: 2, Citation: raw(`{"a":1}`)},
			citationDelta{Index: 2, Citation: raw(`{"b":2}`)}, BlockStop{Index: 2},
			rawStart{Index: 3, Block: RawBlock{Type: "compaction", JSON: raw(`{"type":"compaction","content":null}`)}},
			rawDelta{Index: 3, Raw: raw(`{"type":"compaction_delta","content":"sum","encrypted_content":"E1"}`)},
			rawDelta{Index: 3, Raw: raw(`{"type":"compaction_delta","content":"mary"}`)},
			BlockStop{Index: 3},
			rawStart{Index: 4, Block: RawBlock{Type: "server_tool_use", JSON: raw(`{"type":"server_tool_use","id":"c","name":"code_execution","input":{},"caller":{"type":"direct"}}`)}},
			ToolInputDelta{Index: 4, PartialJSON: `{"code":`}, ToolInputDelta{Index: 4, PartialJSON: `"x"}`}, BlockStop{Index: 4},
		},
		completed: []Block{
			RawBlock{Type: "server_tool_use", JSON: raw(`{"type":"server_tool_use","id":"s","name":"web_search","input":{"query":"go"}}`)},
			RedactedThinking{Data: "x"},
			Text{Text: "cited", Citations: []json.RawMessage{raw(`{"a":1}`), raw(`{"b":2}`)}},
			RawBlock{Type: "compaction", JSON: raw(`{"type":"compaction","content":"summary","encrypted_content":"E1"}`)},
			RawBlock{Type: "server_tool_use", JSON: raw(`{"type":"server_tool_use","caller":{"type":"direct"},"id":"c","input":{"code":"x"},"name":"code_execution"}`)},
		},
	}, {
		name: "tool_use keeps its caller and toolset",
		events: []Event{
			ToolUseStart{Index: 0, ID: "t", Name: "f", Input: raw(`{"p":1}`), Caller: raw(`{"type":"code_execution_20250825","tool_id":"s"}`), ToolsetName: "dice"},
			BlockStop{Index: 0},
		},
		completed: []Block{ToolUse{ID: "t", Name: "f", Input: raw(`{"p":1}`), Caller: raw(`{"type":"code_execution_20250825","tool_id":"s"}`), ToolsetName: "dice"}},
	}, {
		name: "second message start restarts",
		events: []Event{MessageStart{ID: "1"}, TextDelta{}, TextDelta{Text: "old"}, BlockStop{},
			MessageStart{ID: "2"}, TextDelta{}, TextDelta{Text: "new"}, BlockStop{}},
		completed: []Block{Text{Text: "old"}, Text{Text: "new"}},
		want:      []Block{Text{Text: "new"}},
	}, {
		name: "a delta opens its block; stray events ignored",
		events: []Event{TextDelta{Index: 5, Text: "x"}, BlockStop{Index: 5}, ToolInputDelta{Index: 2, PartialJSON: "{"}, TextDelta{},
			ThinkingDelta{Thinking: "no"}, TextDelta{Text: "a"}, BlockStop{}, BlockStop{}, TextDelta{Text: "after"}},
		completed: []Block{Text{Text: "x"}, Text{Text: "a"}},
		want:      []Block{Text{Text: "a"}, Text{Text: "x"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			var completed []Block
			for _, ev := range tt.events {
				if b, ok := a.Add(ev); ok {
					completed = append(completed, b)
				}
			}
			if tt.want == nil {
				tt.want = tt.completed
			}
			if diff := cmp.Diff(tt.completed, completed); diff != "" {
				t.Errorf("Add returned (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, a.Turn().Message.Content); diff != "" {
				t.Errorf("Message (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.incomplete, a.Turn().Incomplete); diff != "" {
				t.Errorf("Incomplete (-want +got):\n%s", diff)
			}
			if a.Turn().StopReason != tt.stop {
				t.Errorf("StopReason = %q, want %q", a.Turn().StopReason, tt.stop)
			}
			// Every completed block must marshal: it will be sent back.
			if _, err := json.Marshal(a.Turn().Message); err != nil {
				t.Errorf("Message does not marshal: %v", err)
			}
		})
	}
}

// TestInvalidInput checks that input that is not a JSON object is marked
// so that internal/apirules recognises it.
func TestInvalidInput(t *testing.T) {
	var a Assembler
	a.Add(ToolUseStart{ID: "t", Name: "f"})
	a.Add(ToolInputDelta{PartialJSON: `[1, "\u00e9`})
	b, _ := a.Add(BlockStop{})
	got, ok := apirules.InvalidInput(b.(ToolUse).Input)
	if !ok || got != `[1, "\u00e9` {
		t.Errorf("InvalidInput = %q, %v", got, ok)
	}
}

// TestAssemblerLinear checks that a long answer is assembled by appending,
// not by quadratic string concatenation: 1e5 deltas allocate a few parts,
// then the string, not one string each.
func TestAssemblerLinear(t *testing.T) {
	evs := make([]Event, 0, 100_002)
	evs = append(evs, TextDelta{})
	for range 100_000 {
		evs = append(evs, TextDelta{Text: "word "})
	}
	evs = append(evs, BlockStop{})
	allocs := testing.AllocsPerRun(3, func() {
		var a Assembler
		for _, ev := range evs {
			a.Add(ev)
		}
		if got := a.Turn().Message.Content[0].(Text).Text; len(got) != 500_000 || !strings.HasPrefix(got, "word word") {
			t.Fatalf("wrong text of %d bytes", len(got))
		}
	})
	if allocs > 200 {
		t.Errorf("%v allocations for 100k deltas; want amortised appends", allocs)
	}
}

// TestAssemblerContainer checks that the Assembler keeps the latest
// container id a turn reports, and that a restarted turn starts over.
func TestAssemblerContainer(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		want   string
	}{
		{"none", []Event{MessageStart{ID: "m"}, MessageDelta{StopReason: EndTurn}, MessageStop{}}, ""},
		{"from message_delta", []Event{MessageStart{ID: "m"}, MessageDelta{StopReason: ToolUseStop, Container: "container_1"}}, "container_1"},
		{"from message_start", []Event{MessageStart{ID: "m", Container: "container_1"}, MessageDelta{StopReason: ToolUseStop}}, "container_1"},
		{"latest wins", []Event{MessageStart{ID: "m", Container: "container_1"}, MessageDelta{Container: "container_2"}}, "container_2"},
		{"restart forgets", []Event{MessageStart{ID: "m"}, MessageDelta{Container: "container_1"}, MessageStart{ID: "m2"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			for _, ev := range tt.events {
				a.Add(ev)
			}
			if got := a.Turn().Container; got != tt.want {
				t.Errorf("Turn().Container = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestToolInputCap checks that a tool input that streams past maxToolInput
// is dropped as it comes, not gathered, and that the block then carries an
// invalid input saying why, which the agent answers with an is_error
// result; an input of just maxToolInput bytes is kept.
func TestToolInputCap(t *testing.T) {
	const chunk = 1 << 20
	frags := func(n int) []string { // n bytes of a JSON object, in 1 MiB fragments
		s := `{"s":"` + strings.Repeat("a", n-len(`{"s":""}`)) + `"}`
		var fs []string
		for len(s) > chunk {
			fs, s = append(fs, s[:chunk]), s[chunk:]
		}
		return append(fs, s)
	}
	tooBig := string(apirules.MarkInvalid([]byte("[dropped: this input ran past 32 MiB, the most one tool call may send; split the work into smaller calls]")))
	tests := []struct {
		name  string
		start Event
		size  int
		want  func(in string) bool
	}{
		{"tool_use at the cap", ToolUseStart{ID: "t", Name: "f"}, maxToolInput, func(in string) bool { return len(in) == maxToolInput }},
		{"tool_use past the cap", ToolUseStart{ID: "t", Name: "f"}, maxToolInput + 1, func(in string) bool { return in == tooBig }},
		{"server_tool_use past the cap", rawStart{Block: RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"s","name":"web_search","input":{}}`)}},
			maxToolInput + 1, func(in string) bool { return in == tooBig }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			a.Add(MessageStart{})
			a.Add(tt.start)
			for _, f := range frags(tt.size) {
				a.Add(ToolInputDelta{PartialJSON: f})
			}
			if p := a.byIndex[0]; tt.size > maxToolInput && (p.frags != nil || !p.tooBig) {
				t.Errorf("past the cap, %d fragments are kept", len(p.frags))
			}
			b, ok := a.Add(BlockStop{})
			var in string
			switch b := b.(type) {
			case ToolUse:
				in = string(b.Input)
			case RawBlock:
				var f struct{ Input json.RawMessage }
				json.Unmarshal(b.JSON, &f)
				in = string(f.Input)
			}
			if !ok || !tt.want(in) {
				t.Errorf("block %T with an input of %d bytes (%.120s)", b, len(in), in)
			}
		})
	}
}

// TestBlockEvents: the events of each kind of block rebuild it.
func TestBlockEvents(t *testing.T) {
	blocks := []Block{
		Text{Text: "hi", Citations: []json.RawMessage{json.RawMessage(`{"type":"char_location"}`)}},
		Thinking{Thinking: "hmm", Signature: "sig"},
		RedactedThinking{Data: "xyz"},
		ToolUse{ID: "toolu_1", Name: "echo", Input: json.RawMessage(`{"text":"a"}`)},
		RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`)},
	}
	var asm Assembler
	asm.Add(MessageStart{})
	for i, b := range blocks {
		for _, ev := range BlockEvents(i, b) {
			asm.Add(ev)
		}
	}
	if diff := cmp.Diff(blocks, asm.Turn().Message.Content); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
}
