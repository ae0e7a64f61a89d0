package servertool_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/servertool"
)

// Offer web search limited to one site, and price the turn: its blocks
// come back raw, to be sent back as they came, and its searches are billed
// per use on top of the tokens.
func Example() {
	srv := anthropictest.NewServer(anthropictest.NewStream().Usage(1000, 0, 0, 0).
		ServerToolUse("srvtoolu_1", "web_search", `{"query":"range over func"}`).
		WebSearchResult("srvtoolu_1", anthropictest.SearchResult{URL: "https://go.dev/blog/range-functions", Title: "Range Over Function Types"}).
		Text("Since Go 1.23.").ServerToolUsage(1, 0).Stop("end_turn", 100))
	defer srv.Close()

	tools, err := servertool.Declare(servertool.Tool{Type: servertool.WebSearch, MaxUses: 3, AllowedDomains: []string{"go.dev"}})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	c := llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test"})
	req := llm.Request{
		Model:       "claude-sonnet-5-5",
		Messages:    []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "Since when can Go range over functions?"}}}},
		ServerTools: tools,
	}
	var a llm.Assembler
	for ev, err := range c.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		a.Add(ev)
	}
	turn := a.Turn()
	for _, b := range turn.Message.Content {
		if raw, ok := b.(llm.RawBlock); ok {
			fmt.Println(raw.Type)
		}
	}
	fmt.Println(llm.TextOf(turn.Message.Content))
	m, _ := llm.LookupModel(req.Model)
	fmt.Printf("%d search, $%.4f\n", turn.Usage.ServerToolUse.WebSearchRequests, m.Price.Cost(turn.Usage))
	// Output:
	// server_tool_use
	// web_search_tool_result
	// Since Go 1.23.
	// 1 search, $0.0130
}
