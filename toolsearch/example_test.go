package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/toolsearch"
)

// An agent whose deferrable tool (an MCP server's, say) waits for the
// API's tool search. The fake API plays the model; the request shows what
// the model read first: the tool's name, beside the search tool.
func ExampleConfigure() {
	srv := anthropictest.NewServer(anthropictest.NewStream().Text("Nothing to look up.").Stop("end_turn"))
	defer srv.Close()

	rate := tool.Must(tool.New("mcp__fx__get_exchange_rate", "Returns an exchange rate.",
		func(_ context.Context, in struct{ From, To string }) (string, error) { return "1.08", nil }))
	rate.Deferrable = true
	cfg := agent.Config{Model: llm.New(llm.Config{BaseURL: srv.URL}), Tools: []*tool.Tool{rate},
		History: memory.New(memory.Config{Model: "claude-opus-5-5"})}
	cfg, err := toolsearch.Configure(cfg, toolsearch.On)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := agent.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := a.Run(context.Background(), "Hi"); err != nil {
		fmt.Println(err)
		return
	}
	var sent struct {
		Tools []struct {
			Name         string `json:"name"`
			DeferLoading bool   `json:"defer_loading"`
		}
	}
	json.Unmarshal(srv.Requests()[0].Body, &sent)
	for _, t := range sent.Tools {
		fmt.Println(t.Name, t.DeferLoading)
	}
	// Output:
	// mcp__fx__get_exchange_rate true
	// tool_search_tool_bm25 false
}
