// Package servertool declares the tools the Anthropic API runs itself, for
// [llm.Request].ServerTools and agent.Config.ServerTools: web search, web
// fetch, code execution (its bash and file editing) and tool search. A
// declaration is plain JSON that llm sends as it is; this package writes it
// from a [Tool], so that a typo in a field is a compile error, and checks
// what the API would refuse.
//
// The turn holds a server tool's call (a server_tool_use block) and its
// result (a web_search_tool_result, a tool_search_tool_result…) as
// [llm.RawBlock]s, sent back as they came, and its usage counts the web
// searches ([llm.ServerToolUse]), which [llm.Price.Cost] prices.
package servertool

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
)

// The server tools, for [Tool].Type. Each is generally available at the
// API version llm sends, so none needs a beta header. Newer versions of a
// tool may be named as they are. The tool searches, by regular expression
// or by BM25 (natural language), find the tools a request sends with
// [llm.ToolSpec].DeferLoading, which it must hold one of.
const (
	WebSearch       = "web_search_20250305"
	WebFetch        = "web_fetch_20250910"
	CodeExecution   = "code_execution_20250825"
	ToolSearchRegex = "tool_search_tool_regex_20251119"
	ToolSearchBM25  = "tool_search_tool_bm25_20251119"
)

// A Tool is a server tool. Fields its Type does not take must stay zero.
type Tool struct {
	Type string `json:"type"` // one of the constants above, or a tool search's; required
	// Name is what the model calls it. Empty means its type without the
	// date, such as "web_search", the name the API requires.
	Name string `json:"name"`
	// MaxUses caps its uses in one request (web search, web fetch). Zero
	// means the API's default, no cap.
	MaxUses int `json:"max_uses,omitzero"`
	// AllowedDomains, or else BlockedDomains, limit the sites web search
	// and web fetch reach. The API takes one or the other, not both.
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	BlockedDomains []string `json:"blocked_domains,omitempty"`
	// UserLocation, if set, localises web search's results.
	UserLocation *UserLocation `json:"user_location,omitempty"`
	// MaxContentTokens caps what one fetched page adds to the context
	// (web fetch). Zero means no cap.
	MaxContentTokens int `json:"max_content_tokens,omitzero"`
}

// UserLocation is the user's approximate location, for web search.
type UserLocation struct {
	City     string `json:"city,omitempty"`
	Region   string `json:"region,omitempty"`
	Country  string `json:"country,omitempty"`  // ISO 3166-1 alpha-2, such as "US"
	Timezone string `json:"timezone,omitempty"` // IANA, such as "America/New_York"
}

// MarshalJSON writes l with the type the API requires, "approximate", the
// only kind.
func (l UserLocation) MarshalJSON() ([]byte, error) {
	type location UserLocation // without this method
	return json.Marshal(struct {
		Type string `json:"type"`
		location
	}{"approximate", location(l)})
}

// datedType matches the date that ends a server tool's type.
var datedType = regexp.MustCompile(`_\d{8}$`)

// Declare returns the declarations of tools, as [llm.Request].ServerTools
// takes them, or an error naming the first that the API would refuse: one
// without a type, or with both domain lists.
func Declare(tools ...Tool) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, t := range tools {
		if t.Type == "" {
			return nil, fmt.Errorf("servertool: tool %d has no type", i)
		}
		if len(t.AllowedDomains) > 0 && len(t.BlockedDomains) > 0 {
			return nil, fmt.Errorf("servertool: %s: set AllowedDomains or BlockedDomains, not both", t.Type)
		}
		t.Name = cmp.Or(t.Name, datedType.ReplaceAllString(t.Type, ""))
		decl, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		out = append(out, decl)
	}
	return out, nil
}
