package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// marshaler is a value whose MarshalJSON returns its JSON as it is, for
// encoding/json to compact as it compacts a block's.
type marshaler []byte

func (m marshaler) MarshalJSON() ([]byte, error) { return m, nil }

// FuzzWriteCompact checks that writeCompact writes a valid JSON value as
// encoding/json writes the same value returned by a MarshalJSON method:
// the file format Encode kept when it stopped writing through
// encoding/json.
func FuzzWriteCompact(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `"plain"`, ` { "a" : [ 1 , 2.50 , -3e2 ] , "b" : { } } `,
		"{\"s\": \"<b>Tom & Jerry</b>\u2028next\u2029\", \"t\" :\n\t\"\\\"x\\\\\" }",
		`"a \" < \\" `, `["\u003c", "\\u2028", "é 😀"]`, "\"\xe2\x80\"", "\"\xe2\x80\xa8\xe2\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !json.Valid(src) {
			return
		}
		want, err := json.Marshal(marshaler(src))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		if err := writeCompact(w, src, false); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("writeCompact(%q) = %q, want %q as encoding/json writes it", src, got.Bytes(), want)
		}
	})
}

// TestWriteBlockToolInput checks how a tool call's input is written, from
// the history as it is but for a few that go through MarshalJSON: an
// empty one is {}, one of invalid UTF-8 is mended as MarshalJSON mends it,
// one that is not a JSON object is written as MarshalJSON writes it, and
// one that is not JSON fails the save.
func TestWriteBlockToolInput(t *testing.T) {
	const head = `{"type":"tool_use","id":"toolu_1","name":"calc","input":`
	for _, tt := range []struct {
		name, input, want string
		fails             bool
	}{
		{"compacted, escapes kept", "{ \"a\" : \"\\u00e9 \\/ <\" ,\n \"b\": [1, 2.50] }", `{"a":"\u00e9 \/ \u003c","b":[1,2.50]}`, false},
		{"empty", "", `{}`, false},
		{"blank", " \n", `{}`, false},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", `{"a":"` + "\ufffd" + `"}`, false},
		{"not an object", `[ 1 ]`, `[1]`, false}, // as MarshalJSON writes it
		{"not JSON", `{"a":`, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			b := llm.ToolUse{ID: "toolu_1", Name: "calc", Input: json.RawMessage(tt.input), ToolsetName: "maths"}
			err := writeBlock(w, b)
			w.Flush()
			if tt.fails {
				if err == nil {
					t.Errorf("writeBlock wrote %s, want an error", out.Bytes())
				}
				return
			}
			if want := head + tt.want + `,"toolset_name":"maths"}`; err != nil || out.String() != want {
				t.Errorf("writeBlock = %s, %v; want %s", out.Bytes(), err, want)
			}
		})
	}
}

// FuzzWriteLongText checks that a long text or thinking, quoted a piece at
// a time, is written byte for byte as writeCompact writes the block's
// MarshalJSON: invalid UTF-8, escapes and characters cut across pieces
// included.
func FuzzWriteLongText(f *testing.F) {
	for _, s := range []string{"word ", "<b>&</b>\u2028\u2029", "é😀\"\\\n\t", "\xe2\x80", "a\xffb\xc3", "\x00\x1f"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, thinking bool) {
		if s == "" {
			return
		}
		long := strings.Repeat(s, quotePiece/len(s)+3) // longer than a piece, cut anywhere
		var b llm.Block = llm.Text{Text: long, Citations: []json.RawMessage{json.RawMessage(`{"cited_text":"","text":""}`)}}
		if thinking {
			b = llm.Thinking{Thinking: long, Signature: "sig"}
		}
		raw, err := marshalBlock(b)
		if err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		ww, gw := bufio.NewWriter(&want), bufio.NewWriter(&got)
		if err := writeCompact(ww, raw, false); err != nil {
			t.Fatal(err)
		}
		if err := writeBlock(gw, b); err != nil {
			t.Fatal(err)
		}
		ww.Flush()
		gw.Flush()
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			i := 0
			for i < min(got.Len(), want.Len()) && got.Bytes()[i] == want.Bytes()[i] {
				i++
			}
			t.Errorf("writeBlock of %d bytes differs from MarshalJSON's at byte %d: %q, want %q", len(long), i,
				got.Bytes()[i:min(got.Len(), i+40)], want.Bytes()[i:min(want.Len(), i+40)])
		}
	})
}
