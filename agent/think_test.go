package agent

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/testenv"
	"github.com/agentloop/agentloop/llm"
)

// TestEagerToolStart checks that a tool call starts at its block's stop,
// while the model is still streaming: the middleware holds back the rest of
// the turn until the tool has started, which would deadlock a loop that
// waits for the whole turn.
func TestEagerToolStart(t *testing.T) {
	srv, client := fake(t,
		at.NewStream().
			ToolUse("toolu_1", "block", `{"n":1}`).
			ToolUse("toolu_2", "block", `{"n":2}`).
			Text("Both are running.").
			Stop("tool_use"),
		at.NewStream().Text("done").Stop("end_turn"),
	)
	tt := newTools(t)
	var order []string // what happened, in order
	hold := func(next llm.Model) llm.Model {
		return llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
			return func(yield func(llm.Event, error) bool) {
				for ev, err := range next.Stream(ctx, req) {
					if !yield(ev, err) {
						return
					}
					if stop, ok := ev.(llm.BlockStop); ok && stop.Index < 2 && len(req.Messages) == 1 {
						select {
						case n := <-tt.started:
							order = append(order, "started "+n)
						case <-time.After(10 * time.Second):
							t.Errorf("tool %d did not start before the turn ended", stop.Index+1)
						}
					}
				}
				order = append(order, "stream ended")
			}
		})
	}
	a := newAgent(t, client, Config{Registry: tt.reg, Middleware: hold})
	released := false
	for ev, err := range a.Stream(t.Context(), "go") {
		if _, ok := ev.(ToolDone); ok && !released {
			t.Fatal("a result arrived before the tools were released")
		}
		if _, ok := ev.(UsageUpdate); ok && !released {
			close(tt.release) // the turn is over: let the tools finish
			released = true
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"started 1", "started 2", "stream ended", "stream ended"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	res := srv.Requests()[1].ToolResults()
	if len(res) != 2 || res[0].Content[0].Text != "released 1" || res[1].Content[0].Text != "released 2" {
		t.Errorf("results = %+v", res)
	}
}

// TestBlocksVerbatim checks that thinking with its signature, redacted
// thinking, citations and server-tool blocks go back to the API as they
// came, in order.
func TestBlocksVerbatim(t *testing.T) {
	const result = `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://go.dev","title":"Go","encrypted_content":"EqAB","page_age":null}]}`
	const citation = `{"type":"char_location","cited_text":"Go","document_index":0,"document_title":null,"start_char_index":0,"end_char_index":2}`
	srv, client := fake(t,
		at.NewStream().
			Block(at.Block{Type: "thinking", Signature: "sig_abc"}, "Let me ", "think.").
			Block(at.Block{Type: "redacted_thinking", Data: "ENCRYPTED=="}).
			Block(at.Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"query":`, `"go"}`).
			Block(at.Block{Raw: []byte(result)}).
			Text("Go is ").Event("content_block_delta", `{"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":`+citation+`}}`).
			ToolUse("toolu_1", "echo", `{"text":"hi"}`).
			Stop("tool_use"),
		at.NewStream().Text("ok").Stop("end_turn"),
	)
	a := newAgent(t, client, Config{Registry: newTools(t).reg, Thinking: &llm.ThinkingConfig{Adaptive: true, Display: "summarized"}, Effort: "high"})
	evs, _, err := collect(t, a.Stream(t.Context(), "go"))
	if err != nil {
		t.Fatal(err)
	}
	var thinking strings.Builder
	for _, d := range eventsOf[ThinkingDelta](evs) {
		thinking.WriteString(d.Thinking)
	}
	if thinking.String() != "Let me think." {
		t.Errorf("thinking deltas = %q", thinking.String())
	}
	msgs := srv.Requests()[1].Messages()
	asst := msgs[1]
	var types []string
	for _, b := range asst.Content {
		types = append(types, b.Type)
	}
	want := []string{"thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result", "text", "tool_use"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Fatalf("blocks sent back (-want +got):\n%s", diff)
	}
	if b := asst.Content[0]; b.Thinking != "Let me think." || b.Signature != "sig_abc" {
		t.Errorf("thinking = %s", b.Raw)
	}
	if b := asst.Content[1]; b.Data != "ENCRYPTED==" {
		t.Errorf("redacted thinking = %s", b.Raw)
	}
	if got := compactJSON(t, asst.Content[3].Raw); got != compactJSON(t, []byte(result)) {
		t.Errorf("server tool result changed:\n got %s\nwant %s", got, result)
	}
	var text struct{ Citations []json.RawMessage }
	json.Unmarshal(asst.Content[4].Raw, &text)
	if len(text.Citations) != 1 || compactJSON(t, text.Citations[0]) != compactJSON(t, []byte(citation)) {
		t.Errorf("text block = %s", asst.Content[4].Raw)
	}
}

func compactJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestToolInputs checks the odd inputs: none at all, split inside an
// escape sequence, not JSON, a whole input in the block's start, and a
// tool nobody registered.
func TestToolInputs(t *testing.T) {
	tests := []struct {
		name      string
		stream    *at.Stream
		tools     bool
		wantInput string // the input in the history and the ToolCall event
		isError   bool
		result    string // a substring of the result text
	}{
		{"no arguments means {}", at.NewStream().ToolUse("toolu_1", "echo"), true, `{}`, true, "text"},
		{"split in an escape", at.NewStream().ToolUse("toolu_1", "echo", at.Split(`{"text":"a\"b\\c\u00e9"}`, 2)...), true,
			`{"text":"a\"b\\c\u00e9"}`, false, `a"b\cé`},
		{"whole input in the start", at.NewStream().Block(at.Block{Type: "tool_use", ID: "toolu_1", Name: "echo", Input: []byte(`{"text":"whole"}`)}), true, `{"text":"whole"}`, false, "whole"},
		{"not JSON", at.NewStream().ToolUse("toolu_1", "echo", `{"text": "unterminated`), true,
			`{"INVALID_JSON":"{\"text\": \"unterminated"}`, true, "not valid JSON"},
		{"unknown tool", at.NewStream().ToolUse("toolu_1", "nope", `{}`), true, `{}`, true, "nope"},
		{"past 32 MiB", at.NewStream().ToolUse("toolu_1", "echo", `{"text":"`, strings.Repeat("a", 16<<20), strings.Repeat("a", 16<<20), `"}`), true,
			`{"INVALID_JSON":"[dropped: this input ran past 32 MiB, the most one tool call may send; split the work into smaller calls]"}`, true, "ran past 32 MiB"},
		{"no registry", at.NewStream().ToolUse("toolu_1", "echo", `{"text":"x"}`), false, `{"text":"x"}`, true, "no tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, client := fake(t, tt.stream.Stop("tool_use"), at.NewStream().Text("ok").Stop("end_turn"))
			cfg := Config{}
			if tt.tools {
				cfg.Registry = newTools(t).reg
			}
			a := newAgent(t, client, cfg)
			evs, _, err := collect(t, a.Stream(t.Context(), "go"))
			if err != nil {
				t.Fatal(err)
			}
			if call := eventsOf[ToolCall](evs)[0]; string(call.Input) != tt.wantInput {
				t.Errorf("ToolCall input = %s, want %s", call.Input, tt.wantInput)
			}
			sent := srv.Requests()[1].Messages()[1].Content[0]
			if compactJSON(t, sent.Input) != compactJSON(t, []byte(tt.wantInput)) {
				t.Errorf("input sent back = %s, want %s", sent.Input, tt.wantInput)
			}
			res := eventsOf[ToolDone](evs)[0]
			if res.IsError != tt.isError || !strings.Contains(res.Content, tt.result) {
				t.Errorf("result = %+v, want is_error %v containing %q", res, tt.isError, tt.result)
			}
		})
	}
}

// TestRecordedStreams runs real recorded streams through the loop as its
// first turn: whatever they hold, the loop must finish and every request it
// sends must be valid.
func TestRecordedStreams(t *testing.T) {
	dir := testenv.Fixtures(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
	for _, f := range files {
		name := filepath.Base(f)
		if strings.Contains(name, "error") || strings.Contains(name, "SYNTHETIC") {
			continue // failures are covered by TestMidStreamFailure
		}
		t.Run(name, func(t *testing.T) {
			sse, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rec := at.Replay(sse)
			srv, client := fake(t, rec, at.Repeat(at.NewStream().Text("ok").Stop("end_turn")))
			a := newAgent(t, client, Config{Registry: newTools(t).reg, MaxAttempts: 1})
			_, res, err := collect(t, a.Stream(t.Context(), "go"))
			if err != nil {
				t.Fatalf("%v (after %d requests)", err, len(srv.Requests()))
			}
			switch res.State {
			case Finished, Refused, Truncated:
			default:
				t.Errorf("state %q", res.State)
			}
			validHistory(t, a.cfg.History)
		})
	}
}
