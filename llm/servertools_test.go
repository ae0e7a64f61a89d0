package llm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm/servertool"
)

// Server tools' declarations, as package servertool writes them.
var (
	webSearch       = json.RawMessage(`{"type":"web_search_20250305","name":"web_search"}`)
	toolSearchRegex = json.RawMessage(`{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`)
)

// TestServerToolErrors checks that a request the API would refuse for its
// server tools fails before it is sent, naming what is wrong.
func TestServerToolErrors(t *testing.T) {
	hi := []Message{{Role: User, Content: []Block{Text{Text: "hi"}}}}
	deferred := ToolSpec{Name: "mcp__s__t", DeferLoading: true}
	for _, tt := range []struct {
		name string
		req  Request
		want string
	}{
		{"no type", Request{ServerTools: []json.RawMessage{json.RawMessage(`{"name":"x"}`)}}, "server tool 0 is not a JSON object with a type and a name"},
		{"not an object", Request{ServerTools: []json.RawMessage{json.RawMessage(`"web_search"`)}}, "server tool 0 is not a JSON object"},
		{"name twice", Request{Tools: []ToolSpec{{Name: "web_search"}}, ServerTools: []json.RawMessage{webSearch}}, `two tools are named "web_search"`},
		{"tool search on an older model", Request{Model: "claude-opus-4-1", ServerTools: []json.RawMessage{toolSearchRegex}},
			"claude-opus-4-1 does not take the tool search tool"},
		{"deferred without search", Request{Tools: []ToolSpec{deferred}, ServerTools: []json.RawMessage{webSearch}},
			`tool "mcp__s__t" has DeferLoading, but no tool search`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.Model == "" {
				tt.req.Model = "claude-opus-5-5"
			}
			tt.req.Messages = hi
			_, err := requestBody(tt.req, false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// The same tools with a tool search are a request the API takes.
	req := Request{Model: "claude-opus-5-5", Messages: hi, Tools: []ToolSpec{deferred}, ServerTools: []json.RawMessage{json.RawMessage(`{"type":"` + servertool.ToolSearchBM25 + `","name":"tool_search_tool_bm25"}`)}}
	body, err := requestBody(req, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := anthropictest.CheckRequest(body); err != nil {
		t.Error(err)
	}
}

// TestServerToolTurn streams a turn that searched the web, as the fake API
// sends one: the call and its result come back as raw blocks, byte for
// byte, and the searches are counted and priced.
func TestServerToolTurn(t *testing.T) {
	srv := anthropictest.NewServer(anthropictest.NewStream().
		ServerToolUse("srvtoolu_01", "web_search", `{"query":`, `"go iterators"}`).
		WebSearchResult("srvtoolu_01", anthropictest.SearchResult{URL: "https://go.dev/blog/range-functions", Title: "Range Over Function Types"}).
		Text("Go 1.23 added them.").ServerToolUsage(3, 1).Stop("end_turn"))
	c, _ := fakeClient(t, srv, Config{MaxAttempts: 1})
	req := Request{Model: "claude-sonnet-5-5", Messages: []Message{{Role: User, Content: []Block{Text{Text: "iterators?"}}}},
		ServerTools: []json.RawMessage{webSearch}}
	var a Assembler
	var usage Usage
	for ev, err := range c.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.(MessageDelta); ok {
			usage = d.Usage
		}
		a.Add(ev)
	}
	got := a.Turn().Message.Content
	if len(got) != 3 {
		t.Fatalf("got %d blocks, want 3: %v", len(got), got)
	}
	use, ok := got[0].(RawBlock)
	if !ok || use.Type != "server_tool_use" || !strings.Contains(string(use.JSON), `"input":{"query":"go iterators"}`) {
		t.Errorf("block 0 = %#v, want the server_tool_use with its streamed input", got[0])
	}
	res, ok := got[1].(RawBlock)
	if !ok || res.Type != "web_search_tool_result" || !json.Valid(res.JSON) || !strings.Contains(string(res.JSON), `"encrypted_content"`) {
		t.Errorf("block 1 = %#v, want the web_search_tool_result as sent", got[1])
	}
	if diff := cmp.Diff(ServerToolUse{WebSearchRequests: 3, WebFetchRequests: 1}, usage.ServerToolUse); diff != "" {
		t.Errorf("server tool use (-want +got):\n%s", diff)
	}
	var sent struct{ Tools []map[string]any }
	json.Unmarshal(srv.Requests()[0].Body, &sent)
	if diff := cmp.Diff([]map[string]any{{"type": "web_search_20250305", "name": "web_search"}}, sent.Tools); diff != "" {
		t.Errorf("tools sent (-want +got):\n%s", diff)
	}
}

// TestServerToolCost checks that web searches are priced per use on a
// priced model, summed by Add, and free where the model has no price.
func TestServerToolCost(t *testing.T) {
	u := Usage{InputTokens: 1_000_000, ServerToolUse: ServerToolUse{WebSearchRequests: 2, WebFetchRequests: 5}}
	sum := u.Add(Usage{ServerToolUse: ServerToolUse{WebSearchRequests: 1}})
	if diff := cmp.Diff(ServerToolUse{WebSearchRequests: 3, WebFetchRequests: 5}, sum.ServerToolUse); diff != "" {
		t.Errorf("Add (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		model string
		want  float64
	}{
		{"claude-sonnet-5-5", 2 + 3*WebSearchPrice}, // $2 of input, three searches; fetches are free
		{"claude-unknown", 0},
	} {
		m, _ := LookupModel(tt.model)
		if got := m.Price.Cost(sum); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%s: Cost = %v, want %v", tt.model, got, tt.want)
		}
	}
}

// TestToolSearchModels checks the table's tool search support: the models
// its page lists, not the older ones, nor a model the table lacks.
func TestToolSearchModels(t *testing.T) {
	for model, want := range map[string]bool{"claude-opus-5-5": true, "claude-haiku-4-5-20251001": true, "claude-sonnet-4-5": true,
		"claude-opus-4-1": false, "claude-3-haiku": false, "claude-someday-9": false} {
		if m, _ := LookupModel(model); m.ToolSearch != want {
			t.Errorf("%s: ToolSearch = %v, want %v", model, m.ToolSearch, want)
		}
	}
}

// TestIsToolSearch checks that a declaration is known for a tool search by
// its type alone, and that what is not a declaration is not one.
func TestIsToolSearch(t *testing.T) {
	for decl, want := range map[string]bool{
		string(toolSearchRegex): true, `{"name":"x","type":"tool_search_tool_bm25_20251119"}`: true,
		string(webSearch): false, `{"name":"tool_search_tool_regex"}`: false, `"tool_search_tool_regex_20251119"`: false, ``: false,
	} {
		if got := IsToolSearch(json.RawMessage(decl)); got != want {
			t.Errorf("IsToolSearch(%s) = %v, want %v", decl, got, want)
		}
	}
}
