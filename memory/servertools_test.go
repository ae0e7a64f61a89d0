package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// serverTurn is an assistant turn that used server tools, as the API
// returns one: a web search and a tool search, each a server_tool_use and
// its result, then a call of the tool the search found.
func serverTurn(id string) llm.Message {
	raw := func(typ, js string) llm.RawBlock { return llm.RawBlock{Type: typ, JSON: json.RawMessage(js)} }
	return asst(
		raw("server_tool_use", `{"type":"server_tool_use","id":"srvtoolu_`+id+`a","name":"web_search","input":{"query":"go 1.26"}}`),
		raw("web_search_tool_result", `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_`+id+`a","content":[{"type":"web_search_result","url":"https://go.dev/doc/go1.26","title":"Go 1.26 Release Notes","encrypted_content":"EqgfCioIARgBIiQ3YTAw","page_age":null}]}`),
		text("Found the notes; now the tool."),
		raw("server_tool_use", `{"type":"server_tool_use","id":"srvtoolu_`+id+`b","name":"tool_search_tool_bm25","input":{"query":"release"}}`),
		raw("tool_search_tool_result", `{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_`+id+`b","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"mcp__gh__release"}]}}`),
		use("toolu_"+id),
	)
}

// TestServerToolBlocksKept checks that server tools' blocks survive what
// the history does to turns: compaction keeps a recent turn's byte for
// byte and shows an old turn's to the summariser, and a session saved and
// loaded gives them back as they were, with the turn's server tool use.
func TestServerToolBlocksKept(t *testing.T) {
	h := New(Config{Model: "claude-sonnet-4-5", ContextLimit: 1500, KeepRecent: 2})
	h.AppendUser(text(task))
	h.AppendAssistant(serverTurn("old"), llm.Usage{})
	h.AppendUser(result("toolu_old", "v1.0.0"))
	for _, id := range []string{"01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15"} {
		h.AppendAssistant(asst(text("Reading."), use("toolu_"+id)), llm.Usage{})
		h.AppendUser(result("toolu_"+id, strings.Repeat("z", 200)))
	}
	usage := llm.Usage{InputTokens: 900, OutputTokens: 40, ServerToolUse: llm.ServerToolUse{WebSearchRequests: 1}}
	h.AppendAssistant(serverTurn("new"), usage)
	h.AppendUser(result("toolu_new", "v2.0.0"))
	h.AppendAssistant(asst(text("The latest release is v2.0.0.")), llm.Usage{})
	h.AppendUser(text("thanks"))
	before := h.Messages()

	m := &fakeModel{summary: "## Original task\n" + task}
	c, err := h.Compact(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.requests()) != 1 {
		t.Fatalf("compaction steps %q: want a summary", c.Steps)
	}
	if tr := llm.TextOf(m.requests()[0].Messages[0].Content); !strings.Contains(tr, "[web_search_tool_result block:") || !strings.Contains(tr, "mcp__gh__release") {
		t.Errorf("the summariser did not see the old turn's server tool blocks:\n%.2000s", tr)
	}
	after := h.Messages()
	if diff := cmp.Diff(before[len(before)-4:], after[len(after)-4:]); diff != "" {
		t.Errorf("the recent server tool turn changed (-before +after):\n%s", diff)
	}
	if err := h.validate(); err != nil {
		t.Fatalf("invalid after Compact: %v", err)
	}

	got := Restore(h.Snapshot(), h.Config())
	if diff := cmp.Diff(after, got.Messages()); diff != "" {
		t.Errorf("messages after a snapshot and a restore (-before +after):\n%s", diff)
	}
	i := len(got.entries) - 4
	if diff := cmp.Diff(usage.ServerToolUse, got.entries[i].Usage.ServerToolUse); diff != "" {
		t.Errorf("the turn's server tool use after a restore (-want +got):\n%s", diff)
	}
	for j, b := range got.entries[i].Message.Content {
		if r, ok := b.(llm.RawBlock); ok && !bytes.Equal(r.JSON, serverTurn("new").Content[j].(llm.RawBlock).JSON) {
			t.Errorf("block %d after a restore: %s", j, r.JSON)
		}
	}
}
