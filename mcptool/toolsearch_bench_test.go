package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/toolsearch"
)

// syntheticServer is an MCP server of n tools shaped as a typical server's
// are: a one-sentence description and four described parameters.
func syntheticServer(n int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "synthetic", Version: "1"}, nil)
	for i := range n {
		schema := json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
			"repository":{"type":"string","description":"The repository, as owner/name, for example octocat/hello-world."},
			"resource_id":{"type":"integer","description":"The number of the %[1]s to act on."},
			"state":{"type":"string","enum":["open","closed","all"],"description":"Which %[1]ss to include; open by default."},
			"per_page":{"type":"integer","minimum":1,"maximum":100,"description":"Results per page, at most 100."}},
			"required":["repository"]}`, fmt.Sprintf("item%03d", i)))
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("operation_%03d", i), InputSchema: schema,
			Description: fmt.Sprintf("Performs operation %d on the repository's item%03ds: lists, reads or updates them, with pagination and state filters.", i, i)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	return s
}

// BenchmarkToolSearch measures what tool search saves on a synthetic MCP
// server of 200 tools: the first request of a run, with --tool-search off
// and on, as sent to the (fake) API. tool-bytes are the JSON of the tool
// definitions the model reads (a deferred one it reads only once found);
// tool-tokens estimate them at memory's default 3.5 characters a token.
func BenchmarkToolSearch(b *testing.B) {
	srv := connectInMemory(b, syntheticServer(200), nil)
	reg := tool.NewRegistry(tool.Config{})
	if err := srv.Register(b.Context(), reg); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{toolsearch.Off, toolsearch.On} {
		b.Run(mode, func(b *testing.B) {
			api := anthropictest.NewServer(anthropictest.Repeat(anthropictest.NewStream().Text("ok")))
			defer api.Close()
			client := llm.New(llm.Config{BaseURL: api.URL, HTTPClient: &http.Client{}})
			for b.Loop() {
				cfg, err := toolsearch.Configure(agent.Config{Model: client, Registry: reg,
					History: memory.New(memory.Config{Model: "claude-opus-5-5"})}, mode)
				if err != nil {
					b.Fatal(err)
				}
				a, err := agent.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := a.Run(b.Context(), "list the open issues"); err != nil {
					b.Fatal(err)
				}
			}
			var body struct{ Tools []json.RawMessage }
			json.Unmarshal(api.Requests()[0].Body, &body)
			read := 0
			for _, t := range body.Tools {
				var d struct {
					DeferLoading bool `json:"defer_loading"`
				}
				if json.Unmarshal(t, &d); !d.DeferLoading {
					read += len(t)
				}
			}
			b.ReportMetric(float64(len(body.Tools)), "tools/req")
			b.ReportMetric(float64(read), "tool-bytes/req")
			b.ReportMetric(float64(read)/3.5, "tool-tokens/req")
		})
	}
}
