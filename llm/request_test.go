package llm

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// requestBody is the body encodeRequest writes, in one piece, as a server
// reads it.
func requestBody(r Request, count bool) ([]byte, error) {
	b, err := encodeRequest(r, count)
	return slices.Concat(b...), err
}

// TestRequestGolden checks the request body built for each Request against
// testdata/request_*.json. Run with -update to rewrite them.
func TestRequestGolden(t *testing.T) {
	conv := []Message{
		{Role: User, Content: []Block{Text{Text: "What is 1+2?"}}},
		{Role: Assistant, Content: []Block{
			Thinking{Thinking: "add", Signature: "sig"},
			RawBlock{Type: "redacted_thinking", JSON: json.RawMessage(`{"type":"redacted_thinking","data":"RD"}`)},
			ToolUse{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a":1,"b":2}`)},
		}},
		{Role: User, Content: []Block{ToolResult{ToolUseID: "toolu_1", Content: []Block{Text{Text: "3"}}}}},
	}
	tools := []ToolSpec{
		{Name: "add", Description: "Adds.", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"}}}`)},
		{Name: "now"},
	}
	tests := []struct {
		name string
		req  Request
	}{
		{"minimal", Request{Model: "claude-x", Messages: conv[:1]}},
		{"blank_system", Request{Model: "claude-x", System: " \n\t", Messages: conv[:1]}}, // sent as none: the API rejects a blank text block
		{"full", Request{
			Model: "claude-sonnet-4-6", MaxTokens: 1000, System: "Be brief.", Messages: conv, Tools: tools,
			ToolChoice: &ToolChoice{Type: "any"}, Thinking: &ThinkingConfig{BudgetTokens: 500},
			Extra: map[string]any{"service_tier": "auto", "context_management": map[string]any{"edits": []any{}},
				"stop_sequences": []string{"END"}, "metadata": map[string]string{"user_id": "u1"},
				"tool_choice": map[string]any{"type": "any", "disable_parallel_tool_use": true}},
		}},
		{"cache", Request{Model: "claude-x", System: "sys", Messages: conv, Tools: tools, Cache: true}},
		// conv[:2] ends with an assistant turn: a model that takes a prefill, thinking off.
		{"cache_last_block_thinking", Request{Model: "claude-3-5-haiku", Messages: conv[:2], Cache: true,
			ToolChoice: &ToolChoice{Type: "tool", Name: "add"}}},
		{"adaptive_effort", Request{Model: "claude-opus-5-5", Messages: conv[:1],
			Thinking: &ThinkingConfig{Adaptive: true, Display: "summarized"}, Effort: "xhigh"}},
		{"tool_choice_none", Request{Model: "claude-x", Messages: conv[:1], ToolChoice: &ToolChoice{Type: "none"}}},
		{"container", Request{Model: "claude-x", Messages: conv[:1], Container: "container_011CWHPPTDTn1XufeRB9uHeH"}},
		{"output_format", Request{Model: "claude-opus-5-5", Messages: conv[:1], Effort: "low",
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)}},
		// Server tools after the client tools, the cache breakpoint on the last one.
		{"server_tools", Request{Model: "claude-opus-5-5", Messages: conv[:1], Cache: true,
			Tools: []ToolSpec{tools[0], {Name: "mcp__files__grep", Description: "Greps.", DeferLoading: true}},
			ServerTools: []json.RawMessage{toolSearchRegex,
				json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":5,"allowed_domains":["go.dev"],"user_location":{"type":"approximate","city":"Paris","country":"FR"}}`),
				json.RawMessage(`{"type":"web_fetch_20250910","name":"web_fetch","blocked_domains":["example.com"],"max_content_tokens":10000}`),
				json.RawMessage(`{"type":"code_execution_20250825","name":"code_execution"}`)}}},
		// A Request decoded from JSON (a durable turn's) holds null: sent as none.
		{"output_format_null", Request{Model: "claude-x", Messages: conv[:1], OutputSchema: json.RawMessage("null")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := requestBody(tt.req, false)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, raw, "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			golden := filepath.Join("testdata", "request_"+tt.name+".json")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			// Compared as values: the order of fields is not the API's concern.
			var wantV, gotV any
			if err := json.Unmarshal(want, &wantV); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(got.Bytes(), &gotV)
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("%s (-want +got):\n%s", golden, diff)
			}
			for _, banned := range []string{"top_p", "top_k"} {
				if strings.Contains(got.String(), banned) {
					t.Errorf("%s sent though never set", banned)
				}
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	for name, req := range map[string]Request{
		"no model":  {Messages: []Message{{Role: User, Content: []Block{Text{Text: "x"}}}}},
		"nil block": {Model: "m", Messages: []Message{{Role: User, Content: []Block{nil}}}},
		"bad raw":   {Model: "m", Messages: []Message{{Role: User, Content: []Block{RawBlock{Type: "x", JSON: json.RawMessage("{")}}}}},
		"bad raw, cached": {Model: "m", Cache: true,
			Messages: []Message{{Role: User, Content: []Block{RawBlock{Type: "x", JSON: json.RawMessage("{")}}}}},
		"bad schema": {Model: "m", Tools: []ToolSpec{{Name: "t", InputSchema: json.RawMessage("{")}}},
		"no name":    {Model: "m", Tools: []ToolSpec{{}}},
	} {
		if _, err := requestBody(req, false); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCacheBreakpoint checks that Cache puts one breakpoint on the last
// block, whatever its type, and keeps a raw block's own instead of adding
// a second.
func TestCacheBreakpoint(t *testing.T) {
	for _, tt := range []struct {
		last Block
		want string
	}{
		{Text{Text: "hi"}, `{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}`},
		{ToolResult{ToolUseID: "t", Content: []Block{Text{Text: "ok"}}},
			`{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}],"cache_control":{"type":"ephemeral"}}`},
		{RawBlock{Type: "document", JSON: json.RawMessage(`{"type":"document","source":{"type":"text","data":"d"}}`)},
			`{"type":"document","source":{"type":"text","data":"d"},"cache_control":{"type":"ephemeral"}}`},
		{RawBlock{Type: "document", JSON: json.RawMessage(`{"type":"document","cache_control":{"type":"ephemeral","ttl":"1h"}}`)},
			`{"type":"document","cache_control":{"type":"ephemeral","ttl":"1h"}}`},
	} {
		body, err := requestBody(Request{Model: "claude-x", Cache: true, Messages: []Message{{Role: User, Content: []Block{tt.last}}}}, false)
		if err != nil {
			t.Fatal(err)
		}
		var w struct {
			Messages []struct{ Content []json.RawMessage }
		}
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatal(err)
		}
		if got := string(w.Messages[0].Content[0]); got != tt.want {
			t.Errorf("last block sent as %s, want %s", got, tt.want)
		}
	}
}

// TestSplicedInputs checks the body around big tool inputs, which are put
// in as they are rather than through the encoder: the same JSON values as
// the encoder would write, each input's bytes verbatim, except one the
// encoder must mend (invalid UTF-8) or reject, and one under a cache
// breakpoint, which the encoder writes.
func TestSplicedInputs(t *testing.T) {
	big := func(ws, s string) json.RawMessage {
		return json.RawMessage(`{` + ws + `"content":` + ws + `"` + strings.Repeat(s, 70_000/len(s)) + `"}`)
	}
	compact, spaced, mangled := big("", `a \"b\"\n é`), big("\n ", "x"), big("", "y\xff")
	// The last is compact again, but not as an Assembler made it: the
	// encoder writes it.
	conv := []Message{
		{Role: User, Content: []Block{Text{Text: "go"}}},
		{Role: Assistant, Content: []Block{assembled("a", compact), assembled("b", spaced),
			assembled("c", mangled), assembled("d", json.RawMessage(`{"n": 1}`)),
			ToolUse{ID: "e", Name: "t", Input: bytes.Clone(compact)}}},
		{Role: User, Content: []Block{ToolResult{ToolUseID: "a"}, ToolResult{ToolUseID: "b"}, ToolResult{ToolUseID: "c"},
			ToolResult{ToolUseID: "d"}, ToolResult{ToolUseID: "e"}}},
	}
	for _, tt := range []struct {
		name     string
		req      Request
		verbatim []json.RawMessage
	}{
		{"body", Request{Model: "claude-x", Messages: conv}, []json.RawMessage{compact, spaced}},
		{"extra", Request{Model: "claude-x", Messages: conv, Extra: map[string]any{"metadata": map[string]string{"user_id": "u"}}}, []json.RawMessage{compact}},
		{"cached last", Request{Model: "claude-3-5-haiku", Messages: conv[:2:2], Cache: true}, []json.RawMessage{spaced}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body, err := requestBody(tt.req, false)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("the body is not JSON: %v", err)
			}
			wantBody, err := marshal(wireRequest{Model: tt.req.Model, MaxTokens: DefaultMaxTokens, Messages: tt.req.Messages, Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(wantBody, &want)
			if m, ok := got.(map[string]any); ok && (tt.req.Extra != nil || tt.req.Cache) {
				delete(m, "metadata") // what Extra and Cache add is TestRequestGolden's
				msgs := m["messages"].([]any)
				content := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
				delete(content[len(content)-1].(map[string]any), "cache_control")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-as encoded +spliced):\n%s", diff)
			}
			for _, in := range tt.verbatim {
				if !bytes.Contains(body, in) {
					t.Errorf("input %.20s… is not in the body verbatim", in)
				}
			}
			if bytes.Contains(body, []byte("\xff")) {
				t.Error("invalid UTF-8 sent as it is")
			}
		})
	}
	bad := append(bytes.Clone(compact[:len(compact)-1]), ']')
	// An input set in place of the one the Assembler checked is not taken
	// for checked, be it other bytes or a prefix of the same.
	prefix, other := assembled("a", compact), assembled("a", compact)
	prefix.Input, other.Input = prefix.Input[:len(prefix.Input)-1], bad
	for _, b := range []ToolUse{{ID: "a", Name: "t", Input: bad}, prefix, other} {
		if _, err := requestBody(Request{Model: "claude-x", Messages: []Message{conv[0],
			{Role: Assistant, Content: []Block{b}}, conv[2]}}, false); err == nil {
			t.Errorf("a big invalid input is sent: %.20s…", b.Input[len(b.Input)-20:])
		}
	}
}

// assembled returns the tool_use block an Assembler makes of input as it
// streams: the block whose input it checked, which is not read again.
func assembled(id string, input json.RawMessage) ToolUse {
	var a Assembler
	a.Add(MessageStart{})
	a.Add(ToolUseStart{ID: id, Name: "t", Input: json.RawMessage("{}")})
	a.Add(ToolInputDelta{PartialJSON: string(input)})
	b, _ := a.Add(BlockStop{})
	return b.(ToolUse)
}

// TestSendInParts checks that a body sent in parts, a big tool input as
// the history holds it, arrives whole with its length, not chunked, on
// every attempt.
func TestSendInParts(t *testing.T) {
	input := json.RawMessage(`{"content":"` + strings.Repeat(`a \"b\" é\n`, 10_000) + `"}`)
	req := Request{Model: "claude-x", Messages: []Message{{Role: User, Content: []Block{Text{Text: "go"}}},
		{Role: Assistant, Content: []Block{assembled("a", input)}},
		{Role: User, Content: []Block{ToolResult{ToolUseID: "a"}}}}}
	input = req.Messages[1].Content[0].(ToolUse).Input
	want, err := requestBody(req, false)
	if err != nil {
		t.Fatal(err)
	}
	if parts, _ := encodeRequest(req, false); len(parts) != 3 || &parts[1][0] != &input[0] {
		t.Fatalf("the input is not sent from its own bytes: %d parts", len(parts))
	}
	type got struct {
		length   int64
		chunked  bool
		matching bool
	}
	var gots []got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gots = append(gots, got{r.ContentLength, slices.Contains(r.TransferEncoding, "chunked"), bytes.Equal(b, want)})
		if len(gots) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(anthropictest.NewStream().Text("ok").Stop("end_turn").Bytes())
	}))
	defer srv.Close()
	c, _ := testClient(srv.URL, Config{})
	for _, err := range c.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	w := got{int64(len(want)), false, true}
	if diff := cmp.Diff([]got{w, w}, gots, cmp.AllowUnexported(got{})); diff != "" {
		t.Errorf("attempts as the server read them (-want +got):\n%s", diff)
	}
}

// FuzzSplice checks a body with a big tool input in it against the
// encoder's own: an error where the encoder errs, else the same JSON
// values, and no invalid UTF-8.
func FuzzSplice(f *testing.F) {
	for _, s := range [][2]string{{`"a \" é\n"`, ""}, {"1", " \n"}, {"\"\xff\"", ""}, {"{", ""}, {`"\ud800"`, "\t"}, {"[]", ""}, {"0", "\v"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, value, ws string) {
		in := json.RawMessage(ws + `{"c":[` + strings.Repeat(value+",", (64<<10)/(len(value)+1)+1) + `0]}` + ws)
		req := Request{Model: "claude-x", Messages: []Message{{Role: User, Content: []Block{Text{Text: "go"}}},
			{Role: Assistant, Content: []Block{assembled("a", in)}},
			{Role: User, Content: []Block{ToolResult{ToolUseID: "a"}}}}}
		got, err := requestBody(req, false)
		want, wantErr := marshal(wireRequest{Model: req.Model, MaxTokens: DefaultMaxTokens, Messages: req.Messages, Stream: true})
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("error %v, the encoder's %v", err, wantErr)
		}
		var gotV, wantV any
		if err == nil && (json.Unmarshal(got, &gotV) != nil || json.Unmarshal(want, &wantV) != nil) {
			t.Fatalf("a body is not JSON:\n%.200s\n%.200s", got, want)
		}
		// The encoder mends invalid UTF-8, raw or escaped (a lone surrogate).
		strict := jsontext.AllowDuplicateNames(true)
		if diff := cmp.Diff(wantV, gotV); diff != "" || err == nil && !jsontext.Value(got).IsValid(strict) {
			t.Errorf("the body differs from the encoder's (strictly valid: %v):\n%.300s", jsontext.Value(got).IsValid(strict), diff)
		}
	})
}
