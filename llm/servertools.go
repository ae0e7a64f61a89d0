package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	json2 "github.com/go-json-experiment/json"
)

// WebSearchPrice is what one web search costs, in USD, on every model: $10
// per 1,000 searches (the pricing page). A web fetch costs only the tokens
// it adds; code execution is billed by container hour, which no usage
// reports, so [Price.Cost] leaves it out.
const WebSearchPrice = 10.0 / 1000

// ServerToolUse counts the uses of the server tools that usage reports.
type ServerToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests,omitempty"`
	WebFetchRequests  int64 `json:"web_fetch_requests,omitempty"`
}

// IsToolSearch reports whether decl, a server tool's declaration, is a tool
// search tool's (package llm/servertool names their types): a request that
// sends a [ToolSpec] with DeferLoading must hold one among its
// [Request].ServerTools.
func IsToolSearch(decl json.RawMessage) bool {
	var d declaration
	return json2.Unmarshal(decl, &d, lenient) == nil && isToolSearch(d.Type)
}

// declaration is what llm reads of a server tool's declaration, which it
// sends as it came.
type declaration struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func isToolSearch(typ string) bool { return strings.HasPrefix(typ, "tool_search_tool_") }

// addServerTools appends r's server tools to w's tools, its client tools,
// and checks what the API would refuse: a declaration that is not an
// object with a type and a name, tool search on a model without it, a name
// twice, a deferred tool without a tool search.
func (w *wireRequest) addServerTools(r Request) error {
	search, names := false, map[string]bool{}
	for _, t := range r.Tools {
		names[t.Name] = true
	}
	for i, decl := range r.ServerTools {
		var d declaration
		if json2.Unmarshal(decl, &d, lenient) != nil || d.Type == "" || d.Name == "" {
			return fmt.Errorf("llm: server tool %d is not a JSON object with a type and a name: %.100s", i, decl)
		}
		if m, known := LookupModel(r.Model); known && isToolSearch(d.Type) && !m.ToolSearch {
			return fmt.Errorf("llm: %s does not take the tool search tool: send its tools without DeferLoading", r.Model)
		}
		if names[d.Name] {
			return fmt.Errorf("llm: two tools are named %q: tool names must be unique", d.Name)
		}
		names[d.Name], search = true, search || isToolSearch(d.Type)
		w.Tools = append(w.Tools, bytes.TrimSpace(decl))
	}
	if i := slices.IndexFunc(r.Tools, func(t ToolSpec) bool { return t.DeferLoading }); i >= 0 && !search {
		return fmt.Errorf("llm: tool %q has DeferLoading, but no tool search is among Request.ServerTools: the model could never load it", r.Tools[i].Name)
	}
	return nil
}
