package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/servertool"
	"github.com/agentloop/agentloop/toolsearch"
)

// serverToolOptions are the flags of the API's own tools and of tool
// search: --server-tools, --allowed-domains, --blocked-domains and
// --tool-search.
type serverToolOptions struct {
	list                           string // --server-tools, as given
	names                          []string
	decls                          []json.RawMessage // the server tools' declarations, once checked
	allowedDomains, blockedDomains listFlag
	toolSearch                     string // the mode of toolsearch.Configure
}

// serverToolTypes are the server tools --server-tools offers, by the name
// the model calls each.
var serverToolTypes = map[string]string{"web_search": servertool.WebSearch, "web_fetch": servertool.WebFetch, "code_execution": servertool.CodeExecution}

// defineServerToolFlags defines the flags of o on fs.
func defineServerToolFlags(fs *flag.FlagSet, o *serverToolOptions) {
	fs.StringVar(&o.list, "server-tools", "", "")
	fs.Var(&o.allowedDomains, "allowed-domains", "")
	fs.Var(&o.blockedDomains, "blocked-domains", "")
	fs.StringVar(&o.toolSearch, "tool-search", toolsearch.Auto, "")
}

// check checks the flags against each other and against tools, the
// built-in tools offered, one of which (web_fetch) a server tool's name
// would clash with, and declares the server tools. It warns of --tool-search on with a model that the
// table says has no tool search.
func (o *serverToolOptions) check(tools []string, model string) (warning string, err error) {
	for n := range strings.SplitSeq(o.list, ",") {
		switch n = strings.TrimSpace(n); {
		case n == "":
		case serverToolTypes[n] == "":
			return "", usageError("unknown server tool %q in --server-tools: the API's are code_execution, web_fetch and web_search", n)
		case slices.Contains(o.names, n):
			return "", usageError("--server-tools names %s twice", n)
		case slices.Contains(tools, n):
			return "", usageError("--server-tools %s and the built-in tool %s have one name: drop it from --tools, or from --server-tools", n, n)
		default:
			o.names = append(o.names, n)
		}
	}
	web := slices.Contains(o.names, "web_search") || slices.Contains(o.names, "web_fetch")
	switch domains := len(o.allowedDomains) > 0 || len(o.blockedDomains) > 0; {
	case domains && !web:
		return "", usageError("--allowed-domains and --blocked-domains limit the server tools web_search and web_fetch: add one with --server-tools")
	case len(o.allowedDomains) > 0 && len(o.blockedDomains) > 0:
		return "", usageError("--allowed-domains and --blocked-domains cannot be used together: the API takes one list or the other")
	}
	var server []servertool.Tool
	for _, n := range o.names {
		t := servertool.Tool{Type: serverToolTypes[n]}
		if n != "code_execution" {
			t.AllowedDomains, t.BlockedDomains = splitList(o.allowedDomains), splitList(o.blockedDomains)
		}
		server = append(server, t)
	}
	if o.decls, err = servertool.Declare(server...); err != nil {
		return "", err
	}
	switch o.toolSearch {
	case toolsearch.On:
		if m, known := llm.LookupModel(model); known && !m.ToolSearch {
			return fmt.Sprintf("--tool-search on: %s has no tool search, so every tool is sent whole", model), nil
		}
		return "", nil
	case toolsearch.Auto, toolsearch.Off:
		return "", nil
	}
	return "", usageError("--tool-search must be auto, on or off, not %q", o.toolSearch)
}

// splitList returns the comma-separated items of a repeated flag.
func splitList(l listFlag) []string {
	var out []string
	for _, s := range l {
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// serverToolNote says which server tools the API ran in a turn, by its
// usage, or is empty: their calls are not the agent's, and are not shown
// as tool calls.
func serverToolNote(u llm.ServerToolUse) string {
	var ran []string
	if u.WebSearchRequests > 0 {
		ran = append(ran, plural(int(u.WebSearchRequests), "web search", "web searches"))
	}
	if u.WebFetchRequests > 0 {
		ran = append(ran, plural(int(u.WebFetchRequests), "web fetch", "web fetches"))
	}
	if len(ran) == 0 {
		return ""
	}
	return "the API ran " + strings.Join(ran, " and ")
}
