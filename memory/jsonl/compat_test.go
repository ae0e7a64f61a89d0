package jsonl_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
)

// older is the history of testdata/59c0eef.jsonl: every kind of block,
// with what encoding/json escaped or compacted (<, >, &, U+2028 and U+2029,
// whitespace in raw JSON, a streamed input with spaces and newlines, and
// escapes a model may write that an encoder would not: \u00e9 for é), each
// field of a line's meta, and non-ASCII text.
func older(t *testing.T) *memory.History {
	t.Helper()
	var a llm.Assembler
	a.Add(llm.MessageStart{})
	a.Add(llm.ToolUseStart{Index: 0, ID: "toolu_2", Name: "write", Input: json.RawMessage("{}")})
	for _, frag := range []string{"{\"path\": \"a<b>&c.txt\",\n  \"con", "tent\": \"line\\u2028 \u2029 é \\u00e9 \\/ \\\"q\\\"\\n\\t\",", " \"n\" : [1, 2.50, -3e2] }"} {
		a.Add(llm.ToolInputDelta{Index: 0, PartialJSON: frag})
	}
	streamed, ok := a.Add(llm.BlockStop{Index: 0})
	if !ok {
		t.Fatal("the Assembler made no tool call")
	}
	weird := "<b>Tom & Jerry</b>\u2028next\u2029para \x01 \"quoted\" back\\slash é 😀"
	s := memory.Snapshot{Prefix: "0123abcd", Entries: []memory.Entry{
		{Message: user(text(weird), llm.Image{MediaType: "image/png", Data: pngBase64(t, 4, 3)}), Tokens: 120},
		{Message: asst(
			llm.Thinking{Thinking: "think <&>", Signature: "c2ln"},
			llm.RedactedThinking{Data: "ZW5j"},
			llm.Text{Text: "see", Citations: []json.RawMessage{json.RawMessage(`{ "type" : "char_location", "cited_text": "a<b" }`)}},
			llm.RawBlock{Type: "server_tool_use", JSON: json.RawMessage("{\"type\": \"server_tool_use\",\n \"id\": \"srvtoolu_1\", \"name\": \"web_search\", \"input\": {\"q\": \"x & y\"}}")},
			llm.ToolUse{ID: "toolu_1", Name: "calc", Input: json.RawMessage(`{ "x" : 1 }`), Caller: json.RawMessage(`{"type": "direct"}`), ToolsetName: "maths"},
			streamed,
			llm.ToolUse{ID: "toolu_3", Name: "noop"},
		), Usage: llm.Usage{InputTokens: 900, OutputTokens: 40, CacheCreationInputTokens: 100, CacheReadInputTokens: 7,
			Compaction: &llm.Usage{InputTokens: 5, OutputTokens: 6}, ServerToolUse: llm.ServerToolUse{WebSearchRequests: 1}},
			Model: "claude-sonnet-4-5", Tokens: 1040},
		{Message: user(
			llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{text("1 < 2")}},
			llm.ToolResult{ToolUseID: "toolu_2", IsError: true, Content: []llm.Block{text("boom"), llm.Image{MediaType: "image/gif", Data: "R0lGODlhAQABAAAAACw="}}},
			llm.ToolResult{ToolUseID: "toolu_3"},
		)},
		{Message: asst(text("a summary")), Usage: llm.Usage{InputTokens: 3, OutputTokens: 2}, Model: "claude-haiku-4-5", Summary: true},
		{Message: user(text("go on"))},
		{Message: asst(text("done")), Model: "claude-sonnet-4-5"},
	}}
	return memory.Restore(s, memory.Config{Model: "claude-sonnet-4-5"})
}

// TestOlderFile checks the file format against testdata/59c0eef.jsonl,
// which the Encode of 59c0eef wrote of older's history through
// encoding/json (do not regenerate it: it stands for the files that
// version left on disk). The history encodes to the same bytes, and the
// file decodes to a history that encodes to them too (59c0eef's did not:
// it rewrote the escapes of a loaded tool input, \u00e9 as é).
func TestOlderFile(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "59c0eef.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := jsonl.Encode(&got, older(t)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("Encode differs from the file 59c0eef wrote (-file +encoded):\n%s", diff)
	}
	h, err := jsonl.Decode(bytes.NewReader(want), memory.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	got.Reset()
	if err := jsonl.Encode(&got, h); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("the file decoded and encoded again differs (-file +encoded):\n%s", diff)
	}
	if diff := cmp.Diff(older(t).Snapshot().Prefix, h.Snapshot().Prefix); diff != "" {
		t.Errorf("prefix (-want +got):\n%s", diff)
	}
}
