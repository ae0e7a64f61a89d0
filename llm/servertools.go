package llm

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The server tools the API runs itself, for [ServerTool].Type: web search,
// web fetch, code execution (its bash and file editing), and tool search by
// regular expression or by BM25 (natural language). Each is generally
// available at the API version this package sends, so none needs a beta
// header. Newer versions of a tool may be named as they are.
const (
	WebSearch       = "web_search_20250305"
	WebFetch        = "web_fetch_20250910"
	CodeExecution   = "code_execution_20250825"
	ToolSearchRegex = "tool_search_tool_regex_20251119"
	ToolSearchBM25  = "tool_search_tool_bm25_20251119"
)

// WebSearchPrice is what one web search costs, in USD, on every model: $10
// per 1,000 searches (the pricing page). A web fetch costs only the tokens
// it adds; code execution is billed by container hour, which no usage
// reports, so [Price.Cost] leaves it out.
const WebSearchPrice = 10.0 / 1000

// A ServerTool is a tool the API runs itself, declared in
// [Request].ServerTools. The turn holds its call (a server_tool_use block)
// and its result (a web_search_tool_result, a tool_search_tool_result…) as
// [RawBlock]s, sent back as they came. Fields its Type does not take must
// stay zero.
type ServerTool struct {
	Type string // one of the constants above; required
	// Name is what the model calls it. Empty means its type without the
	// date, such as "web_search", the name the API requires.
	Name string
	// MaxUses caps its uses in one request (web search, web fetch). Zero
	// means the API's default, no cap.
	MaxUses int
	// AllowedDomains, or else BlockedDomains, limit the sites web search
	// and web fetch reach. The API takes one or the other, not both.
	AllowedDomains, BlockedDomains []string
	// UserLocation, if set, localises web search's results.
	UserLocation *UserLocation
	// MaxContentTokens caps what one fetched page adds to the context
	// (web fetch). Zero means no cap.
	MaxContentTokens int
}

// UserLocation is the user's approximate location, for web search.
type UserLocation struct {
	City     string `json:"city,omitempty"`
	Region   string `json:"region,omitempty"`
	Country  string `json:"country,omitempty"`  // ISO 3166-1 alpha-2, such as "US"
	Timezone string `json:"timezone,omitempty"` // IANA, such as "America/New_York"
}

// ServerToolUse counts the uses of the server tools that usage reports.
type ServerToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests,omitempty"`
	WebFetchRequests  int64 `json:"web_fetch_requests,omitempty"`
}

// add returns the field-by-field sum of s and t.
func (s ServerToolUse) add(t ServerToolUse) ServerToolUse {
	return ServerToolUse{s.WebSearchRequests + t.WebSearchRequests, s.WebFetchRequests + t.WebFetchRequests}
}

// cost is what s costs on a model priced at p: nothing on a model without
// a price, as every other cost there.
func (s ServerToolUse) cost(p Price) float64 {
	if p == (Price{}) {
		return 0
	}
	return float64(s.WebSearchRequests) * WebSearchPrice
}

// withoutToolSearch are the models in the table that do not take the tool
// search tool: those its page (tool-search-tool, November 2026) leaves out.
var withoutToolSearch = map[string]bool{"claude-opus-4-1": true, "claude-opus-4-0": true, "claude-opus-4": true,
	"claude-sonnet-4-0": true, "claude-sonnet-4": true, "claude-3-5-haiku": true, "claude-3-haiku": true}

// IsToolSearch reports whether typ is a tool search tool's type.
func IsToolSearch(typ string) bool { return strings.HasPrefix(typ, "tool_search_tool_") }

// datedType matches the date that ends a server tool's type.
var datedType = regexp.MustCompile(`_\d{8}$`)

// wireServerTool is a server tool as the API has it.
type wireServerTool struct {
	Type             string        `json:"type"`
	Name             string        `json:"name"`
	MaxUses          int           `json:"max_uses,omitzero"`
	AllowedDomains   []string      `json:"allowed_domains,omitempty"`
	BlockedDomains   []string      `json:"blocked_domains,omitempty"`
	UserLocation     *wireLocation `json:"user_location,omitempty"`
	MaxContentTokens int           `json:"max_content_tokens,omitzero"`
}

// wireLocation is a user location as the API has it.
type wireLocation struct {
	Type string `json:"type"` // "approximate", the only kind
	UserLocation
}

// addServerTools appends r's server tools to w's tools, its client tools,
// and checks what the API would refuse: a server tool without a type, tool
// search on a model without it, a name twice, both domain lists, a deferred
// tool without a tool search.
func (w *wireRequest) addServerTools(r Request) error {
	search, names := false, map[string]bool{}
	for _, t := range r.Tools {
		names[t.Name] = true
	}
	for i, s := range r.ServerTools {
		if s.Type == "" {
			return fmt.Errorf("llm: server tool %d has no type", i)
		}
		if m, known := LookupModel(r.Model); known && IsToolSearch(s.Type) && !m.ToolSearch {
			return fmt.Errorf("llm: %s does not take the tool search tool: send its tools without DeferLoading", r.Model)
		}
		if len(s.AllowedDomains) > 0 && len(s.BlockedDomains) > 0 {
			return fmt.Errorf("llm: server tool %s: set AllowedDomains or BlockedDomains, not both", s.Type)
		}
		st := wireServerTool{Type: s.Type, Name: cmp.Or(s.Name, datedType.ReplaceAllString(s.Type, "")), MaxUses: s.MaxUses,
			AllowedDomains: s.AllowedDomains, BlockedDomains: s.BlockedDomains, MaxContentTokens: s.MaxContentTokens}
		if s.UserLocation != nil {
			st.UserLocation = &wireLocation{"approximate", *s.UserLocation}
		}
		if names[st.Name] {
			return fmt.Errorf("llm: two tools are named %q: tool names must be unique", st.Name)
		}
		names[st.Name], search = true, search || IsToolSearch(s.Type)
		w.Tools = append(w.Tools, wireTool{server: &st})
	}
	if i := slices.IndexFunc(r.Tools, func(t ToolSpec) bool { return t.DeferLoading }); i >= 0 && !search {
		return fmt.Errorf("llm: tool %q has DeferLoading, but no tool search is among Request.ServerTools: the model could never load it", r.Tools[i].Name)
	}
	return nil
}

// MarshalJSONTo writes a client tool's spec, or a server tool in its place,
// with the cache breakpoint if it has one.
func (t wireTool) MarshalJSONTo(enc *jsontext.Encoder) error {
	if t.server == nil {
		type spec wireTool // without this method
		return json2.MarshalEncode(enc, spec(t))
	}
	return json2.MarshalEncode(enc, struct {
		*wireServerTool
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}{t.server, t.CacheControl})
}
