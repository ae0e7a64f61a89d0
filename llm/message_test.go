package llm

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// TestMessageRoundTrip checks that every block the API sends comes back
// out of unmarshalBlock and MarshalJSON with every field it had: a history
// is sent back to the API, saved and loaded through these.
func TestMessageRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		wire string
		want Block
		back string // the JSON sent back; "" means wire itself
	}{
		{"text", `{"type":"text","text":"hi"}`, Text{Text: "hi"}, ""},
		{"text with citations", `{"type":"text","text":"hi","citations":[{"type":"char_location","cited_text":"h"}]}`,
			Text{Text: "hi", Citations: []json.RawMessage{json.RawMessage(`{"type":"char_location","cited_text":"h"}`)}}, ""},
		{"thinking", `{"type":"thinking","thinking":"hm","signature":"sig"}`, Thinking{Thinking: "hm", Signature: "sig"}, ""},
		{"redacted thinking", `{"type":"redacted_thinking","data":"RD"}`, RedactedThinking{Data: "RD"}, ""},
		{"tool_use", `{"type":"tool_use","id":"t","name":"f","input":{"a":1}}`,
			ToolUse{ID: "t", Name: "f", Input: json.RawMessage(`{"a":1}`)}, ""},
		{"tool_use without input", `{"type":"tool_use","id":"t","name":"f"}`,
			ToolUse{ID: "t", Name: "f"}, `{"type":"tool_use","id":"t","name":"f","input":{}}`},
		{"tool_use called from code", `{"type":"tool_use","id":"t","name":"f","input":{},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"},"toolset_name":"dice"}`,
			ToolUse{ID: "t", Name: "f", Input: json.RawMessage(`{}`),
				Caller: json.RawMessage(`{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}`), ToolsetName: "dice"}, ""},
		{"tool_result string content", `{"type":"tool_result","tool_use_id":"t","content":"3"}`,
			ToolResult{ToolUseID: "t", Content: []Block{Text{Text: "3"}}},
			`{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"3"}]}`},
		{"tool_result error", `{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"no"}],"is_error":true}`,
			ToolResult{ToolUseID: "t", Content: []Block{Text{Text: "no"}}, IsError: true}, ""},
		{"image", `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}`,
			Image{MediaType: "image/png", Data: "AA=="}, ""},
		{"image by url", `{"type":"image","source":{"type":"url","url":"https://x/y.png"}}`,
			RawBlock{Type: "image", JSON: json.RawMessage(`{"type":"image","source":{"type":"url","url":"https://x/y.png"}}`)}, ""},
		{"server block", `{"type":"server_tool_use","id":"s","name":"web_search","input":{"q":1}}`,
			RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"s","name":"web_search","input":{"q":1}}`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := unmarshalBlock([]byte(tt.wire))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("unmarshalBlock (-want +got):\n%s", diff)
			}
			back, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.back
			if want == "" {
				want = tt.wire
			}
			var wantV, gotV any
			json.Unmarshal([]byte(want), &wantV)
			if err := json.Unmarshal(back, &gotV); err != nil {
				t.Fatalf("%s: %v", back, err)
			}
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("marshalled back (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := unmarshalBlock([]byte(`{"text":"no type"}`)); err == nil {
		t.Error("a block without a type decoded")
	}
}

// TestValidInput checks that a tool input is a JSON object by the
// Assembler's word while it is the input the Assembler checked, and by
// reading it otherwise: a decoded copy, or an input set in its place.
func TestValidInput(t *testing.T) {
	checked := assembled("a", json.RawMessage(`{"path": "x"}`))
	decoded, err := unmarshalBlock([]byte(`{"type":"tool_use","id":"a","name":"t","input":{"path": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	replaced, prefix := checked, checked
	replaced.Input, prefix.Input = json.RawMessage(`{"path": `), checked.Input[:len(checked.Input)-1]
	for _, tt := range []struct {
		name              string
		b                 ToolUse
		valid, wellFormed bool
	}{
		{"assembled", checked, true, true},
		{"decoded", decoded.(ToolUse), true, false},
		{"empty", ToolUse{ID: "a", Name: "t"}, true, false},
		{"not an object", ToolUse{ID: "a", Name: "t", Input: json.RawMessage(`[]`)}, false, false},
		{"invalid UTF-8", ToolUse{ID: "a", Name: "t", Input: json.RawMessage("{\"a\":\"\xff\"}")}, true, false},
		{"replaced", replaced, false, false},
		{"a prefix of the checked bytes", prefix, false, false},
	} {
		if valid, wf := tt.b.ValidInput(), tt.b.wellFormed(); valid != tt.valid || wf != tt.wellFormed {
			t.Errorf("%s: ValidInput() = %v, wellFormed() = %v; want %v, %v", tt.name, valid, wf, tt.valid, tt.wellFormed)
		}
	}
	if !checked.Equal(decoded.(ToolUse)) || checked.Equal(replaced) {
		t.Error("Equal does not compare the fields alone")
	}
}

// TestTruncateString checks Truncate, the cut memory's summary transcript,
// tool's messages and mcptool use: on a rune boundary, with the bytes cut noted.
func TestTruncateString(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 3, "hel… [2 more bytes]"},
		{"a€b", 2, "a… [4 more bytes]"}, // inside "€", 3 bytes: back to its start
		{"a€b", 4, "a€… [1 more bytes]"},
		{"€", 0, "… [3 more bytes]"},
	} {
		if got := Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// TestMarshalCheckedInput checks that a tool_use block whose input the
// Assembler checked, which MarshalJSON splices in as the model wrote it, is
// the same JSON value as the block with an unchecked copy of the input: with
// the fields after the input, and an id that holds the text of its key.
func TestMarshalCheckedInput(t *testing.T) {
	for _, tt := range []struct {
		name  string
		id    string
		input string
		edit  func(*ToolUse)
	}{
		{"plain", "a", `{"a":1}`, nil},
		{"spaces and escapes", "a", ` { "s" : "x\"y\u00e9\n" , "n": [1, 2] } `, nil},
		{"caller and toolset after the input", "a", `{"a":{}}`, func(b *ToolUse) {
			b.Caller, b.ToolsetName = json.RawMessage(`{"type":"direct"}`), "dice"
		}},
		{"the key's text in the id", `x"input":{}y`, `{"b":"\"input\":{}"}`, nil},
	} {
		checked := assembled(tt.id, json.RawMessage(tt.input))
		if tt.edit != nil {
			tt.edit(&checked)
		}
		plain := checked
		plain.Input = bytes.Clone(checked.Input)
		if !checked.wellFormed() || plain.wellFormed() {
			t.Fatalf("%s: the test's blocks are not checked and unchecked", tt.name)
		}
		got, err := json.Marshal(checked)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(plain)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil || !bytes.HasPrefix(got, []byte(`{"type":"tool_use",`)) {
			t.Fatalf("%s: %s: %v", tt.name, got, err)
		}
		json.Unmarshal(want, &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s (-unchecked +checked):\n%s", tt.name, diff)
		}
	}
}

// TestTextOf checks the text of blocks: the Text blocks' joined, and the
// string of the one Text block itself, not a copy, since a turn's answer
// (which may be megabytes) is most often one block.
func TestTextOf(t *testing.T) {
	for _, tt := range []struct {
		name   string
		blocks []Block
		want   string
	}{
		{"none", nil, ""},
		{"no text", []Block{ToolUse{ID: "toolu_1", Name: "calc"}}, ""},
		{"one", []Block{Thinking{Thinking: "hm"}, Text{Text: "42"}}, "42"},
		{"one and an empty one", []Block{Text{Text: ""}, Text{Text: "42"}}, "42"},
		{"two, joined", []Block{Text{Text: "4"}, ToolUse{ID: "toolu_1", Name: "calc"}, Text{Text: "2"}}, "42"},
	} {
		if got := TextOf(tt.blocks); got != tt.want {
			t.Errorf("%s: TextOf = %q, want %q", tt.name, got, tt.want)
		}
	}
	long := strings.Repeat("word ", 1000)
	if got := TextOf([]Block{Thinking{Thinking: "hm"}, Text{Text: long}}); unsafe.StringData(got) != unsafe.StringData(long) {
		t.Errorf("TextOf of one block is a copy of its text, want the block's string itself")
	}
}
