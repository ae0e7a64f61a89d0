package anthropictest

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
)

// TestServerToolBuilders streams every server tool builder through the
// official SDK, the judge of the wire format: each block decodes into the
// SDK's own type for it, with the fields the script gave, and so does the
// server tool use of the usage.
func TestServerToolBuilders(t *testing.T) {
	srv := NewServer(NewStream().
		ServerToolUse("srvtoolu_1", "tool_search_tool_regex", `{"query":"weather"}`).
		ToolSearchResult("srvtoolu_1", "get_weather", "get_forecast").
		ServerToolUse("srvtoolu_2", "web_search", `{"query":"go"}`).
		WebSearchResult("srvtoolu_2", SearchResult{URL: "https://go.dev", Title: "Go", PageAge: "1 day"}).
		ServerToolUse("srvtoolu_3", "web_fetch", `{"url":"https://go.dev"}`).
		WebFetchResult("srvtoolu_3", "https://go.dev", "Build simple, secure, scalable systems with Go.").
		ServerToolUse("srvtoolu_4", "bash_code_execution", `{"command":"echo hi"}`).
		CodeExecutionResult("srvtoolu_4", "hi\n", "", 0).
		ServerToolUsage(1, 1).Stop("end_turn"))
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-5-5", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	defer stream.Close()
	var m anthropic.Message
	for stream.Next() {
		if err := m.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 8 {
		t.Fatalf("%d blocks, want 8", len(m.Content))
	}
	var got []string
	for _, b := range m.Content {
		switch b.Type {
		case "server_tool_use":
			got = append(got, string(b.AsServerToolUse().Name)+" "+compact(t, b.Input))
		case "tool_search_tool_result":
			for _, r := range b.AsToolSearchToolResult().Content.ToolReferences {
				got = append(got, "found "+r.ToolName)
			}
		case "web_search_tool_result":
			for _, r := range b.AsWebSearchToolResult().Content.OfWebSearchResultBlockArray {
				got = append(got, "result "+r.URL+" "+r.Title+" "+r.PageAge+" "+b.AsWebSearchToolResult().ToolUseID)
			}
		case "web_fetch_tool_result":
			c := b.AsWebFetchToolResult().Content
			got = append(got, "fetched "+c.URL+" "+c.Content.Source.Data)
		case "bash_code_execution_tool_result":
			c := b.AsBashCodeExecutionToolResult().Content
			got = append(got, "ran "+strings.TrimSpace(c.Stdout))
		}
	}
	want := []string{`tool_search_tool_regex {"query":"weather"}`, "found get_weather", "found get_forecast",
		`web_search {"query":"go"}`, "result https://go.dev Go 1 day srvtoolu_2",
		`web_fetch {"url":"https://go.dev"}`, "fetched https://go.dev Build simple, secure, scalable systems with Go.",
		`bash_code_execution {"command":"echo hi"}`, "ran hi"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks as the SDK reads them (-want +got):\n%s", diff)
	}
	if u := m.Usage.ServerToolUse; u.WebSearchRequests != 1 || u.WebFetchRequests != 1 {
		t.Errorf("usage.server_tool_use = %+v, want 1 and 1", u)
	}
}

// TestDeferredToolsChecked checks that the fake refuses, as the API does, a
// tool sent with defer_loading and no tool search tool, or every tool
// deferred, and takes deferred tools beside a tool search tool.
func TestDeferredToolsChecked(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		tools, want string
	}{
		{`[{"name":"a","input_schema":{"type":"object"},"defer_loading":true}]`, "requires a tool search tool"},
		{`[{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25","defer_loading":true},{"name":"a","input_schema":{"type":"object"},"defer_loading":true}]`,
			"at least one tool must not be deferred"},
		{`[{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"},{"name":"a","input_schema":{"type":"object"},"defer_loading":true}]`, ""},
	} {
		err := CheckRequest([]byte(`{"model":"claude-opus-5-5","max_tokens":10,` + msgs + `,"tools":` + tt.tools + `}`))
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("tools %s: %v, want %q", tt.tools, err, tt.want)
		}
	}
}
