package agent

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentloop/agentloop/llm"
)

// The modes of [Config].ToolSearch.
const (
	ToolSearchAuto = "auto" // on when the tool definitions would take over a tenth of the context window
	ToolSearchOn   = "on"   // on whenever a tool is deferrable, on a model that takes tool search
	ToolSearchOff  = "off"  // every tool's definition in every request
)

// checkToolSearch checks Config.ToolSearch.
func checkToolSearch(mode string) error {
	switch mode {
	case "", ToolSearchAuto, ToolSearchOn, ToolSearchOff:
		return nil
	}
	return fmt.Errorf("agent: Config.ToolSearch is %q: want %q, %q or %q", mode, ToolSearchAuto, ToolSearchOn, ToolSearchOff)
}

// tools returns the client tools and the server tools of a run's requests.
// With tool search on, deferrable specs keep DeferLoading and the API's
// tool search tool joins Config.ServerTools (BM25, unless they hold one);
// otherwise every spec is sent whole, as on a model without tool search.
func (a *Agent) tools(specs []llm.ToolSpec) ([]llm.ToolSpec, []json.RawMessage) {
	server := a.cfg.ServerTools
	if a.searching(specs) {
		if !slices.ContainsFunc(server, llm.IsToolSearch) {
			server = append(slices.Clip(server), json.RawMessage(`{"type":"`+llm.ToolSearchBM25+`","name":"tool_search_tool_bm25"}`))
		}
		return specs, server
	}
	specs = slices.Clone(specs)
	for i := range specs {
		specs[i].DeferLoading = false
	}
	return specs, server
}

// searching reports whether a run with these specs searches its deferrable
// tools: some are, Config.ToolSearch allows it, the model takes tool search,
// and, in "auto", the definitions would take over a tenth of the context
// window (Claude Code's threshold), as the history estimates tokens.
func (a *Agent) searching(specs []llm.ToolSpec) bool {
	mode, hc := a.cfg.ToolSearch, a.cfg.History.Config()
	if mode == ToolSearchOff || !slices.ContainsFunc(specs, func(s llm.ToolSpec) bool { return s.DeferLoading }) {
		return false
	}
	if m, _ := llm.LookupModel(hc.Model); !m.ToolSearch {
		if mode == ToolSearchOn {
			a.cfg.Logger.Info("agent: tool search is on, but the model does not take it: every tool is sent", "model", hc.Model)
		}
		return false
	}
	return mode == ToolSearchOn || a.cfg.History.ToolTokens(specs)*10 > hc.ContextWindow
}
