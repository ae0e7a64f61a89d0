package cli

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/servertool"
)

// sentTools returns the tools of request i, with the fields a test
// compares: a client tool's name and defer_loading, a server tool's type,
// name and options.
func sentTools(t *testing.T, h *harness, i int) []map[string]any {
	t.Helper()
	var body struct{ Tools []map[string]any }
	if err := json.Unmarshal(h.srv.Requests()[i].Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, tl := range body.Tools {
		delete(tl, "description")
		delete(tl, "input_schema")
		delete(tl, "cache_control")
	}
	return body.Tools
}

// TestServerToolsFlag runs a prompt with --server-tools and
// --allowed-domains: the request declares the server tools with their
// options, the turn's web search passes through, and its searches are in
// the cost the JSON result reports.
func TestServerToolsFlag(t *testing.T) {
	h := newHarness(t, anthropictest.NewStream().Usage(10, 0, 0, 0).
		ServerToolUse("srvtoolu_01", "web_search", `{"query":"go release"}`).
		WebSearchResult("srvtoolu_01", anthropictest.SearchResult{URL: "https://go.dev/doc/devel/release", Title: "Release History"}).
		Text("Go 1.26.").ServerToolUsage(2, 0).Stop("end_turn", 5))
	r := h.run(strings.NewReader(""), "--tools", "none", "--server-tools", "web_search, code_execution",
		"--allowed-domains", "go.dev", "--allowed-domains", "pkg.go.dev", "--output-format", "json", "latest go?")
	r.check(t, 0)
	want := []map[string]any{
		{"type": servertool.WebSearch, "name": "web_search", "allowed_domains": []any{"go.dev", "pkg.go.dev"}},
		{"type": servertool.CodeExecution, "name": "code_execution"},
	}
	if diff := cmp.Diff(want, sentTools(t, h, 0)); diff != "" {
		t.Errorf("tools sent (-want +got):\n%s", diff)
	}
	var out struct {
		Result string  `json:"result"`
		Cost   float64 `json:"total_cost_usd"`
		Usage  struct {
			ServerToolUse llm.ServerToolUse `json:"server_tool_use"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	// Sonnet 5.5: 10 input tokens at $2/M, 5 output at $10/M, 2 searches.
	if wantCost := (10*2.0+5*10.0)/1e6 + 2*llm.WebSearchPrice; out.Result != "Go 1.26." || math.Abs(out.Cost-wantCost) > 1e-9 {
		t.Errorf("result %q at $%v, want %q at $%v", out.Result, out.Cost, "Go 1.26.", wantCost)
	}
	if out.Usage.ServerToolUse.WebSearchRequests != 2 { // as Claude Code's usage has them
		t.Errorf("usage.server_tool_use = %+v, want 2 web searches", out.Usage.ServerToolUse)
	}

	// In text, stderr says what the API ran.
	h = newHarness(t, anthropictest.NewStream().ServerToolUse("srvtoolu_01", "web_fetch", `{"url":"https://go.dev"}`).
		WebFetchResult("srvtoolu_01", "https://go.dev", "Go").Text("Fetched.").ServerToolUsage(0, 1).Stop("end_turn"))
	r = h.run(strings.NewReader(""), "--server-tools", "web_fetch", "read go.dev")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "the API ran 1 web fetch") || r.stdout != "Fetched.\n" {
		t.Errorf("stdout %q, stderr:\n%s\nwant the answer, and stderr naming the fetch", r.stdout, r.stderr)
	}
}

// TestToolSearchFlag checks --tool-search with an MCP server's tools: on,
// they go deferred beside the tool search tool, the built-in ones whole;
// off, every tool goes whole.
func TestToolSearchFlag(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, text("ok"))
			h.run(strings.NewReader(""), "--tools", "calculator", "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1",
				"--tool-search", mode, "hi").check(t, 0)
			var deferred, whole []string
			search := false
			for _, tl := range sentTools(t, h, 0) {
				switch name, _ := tl["name"].(string); {
				case tl["type"] == servertool.ToolSearchBM25:
					search = true
				case tl["defer_loading"] == true:
					deferred = append(deferred, name)
				default:
					whole = append(whole, name)
				}
			}
			mcp := []string{"mcp__crashy__ask", "mcp__crashy__ask_model", "mcp__crashy__crash", "mcp__crashy__env", "mcp__crashy__greet"}
			want := map[string][]string{"on": {"calculator"}, "off": append([]string{"calculator"}, mcp...)}[mode]
			wantDeferred := map[string][]string{"on": mcp}[mode]
			sorted := cmpopts.SortSlices(func(a, b string) bool { return a < b })
			if diff := cmp.Diff(want, whole, sorted); diff != "" {
				t.Errorf("tools sent whole (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantDeferred, deferred, sorted); diff != "" {
				t.Errorf("tools deferred (-want +got):\n%s", diff)
			}
			if search != (mode == "on") {
				t.Errorf("tool search tool sent: %v", search)
			}
		})
	}
}

// TestServerToolFlagErrors checks that bad server tool flags are usage
// errors naming what is wrong.
func TestServerToolFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server-tools", "web_search,browser"}, `unknown server tool "browser"`},
		{[]string{"--server-tools", "web_search,web_search"}, "names web_search twice"},
		{[]string{"--server-tools", "web_fetch", "--tools", "web"}, "have one name"},
		{[]string{"--allowed-domains", "go.dev"}, "add one with --server-tools"},
		{[]string{"--server-tools", "web_fetch", "--allowed-domains", "a.com", "--blocked-domains", "b.com"}, "cannot be used together"},
		{[]string{"--tool-search", "always"}, `--tool-search must be auto, on or off, not "always"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			h := newHarness(t)
			r := h.run(strings.NewReader(""), append(tc.args, "hi")...)
			r.check(t, exitUsage)
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, r.stderr)
			}
		})
	}
}

// TestServerToolFlagsDurable checks that the durable mode, which does not
// take them yet, refuses the server tool flags rather than ignore them.
func TestServerToolFlagsDurable(t *testing.T) {
	for _, args := range [][]string{{"--server-tools", "web_search"}, {"--tool-search", "off"}} {
		f := &fakeDurable{}
		h := newHarness(t)
		r := h.runDurable(f, strings.NewReader(""), append(append([]string{"--temporal", "localhost:7233"}, args...), "hi")...)
		r.check(t, exitUsage)
		if !strings.Contains(r.stderr, "not in the durable mode") || f.prompt.Prompt != "" {
			t.Errorf("%q: stderr %q, run %+v; want a usage error and no run", args, r.stderr, f.prompt)
		}
	}
}

// TestToolSearchOnOlderModel checks that --tool-search on with a model
// without tool search is said on stderr, and the run sends every tool,
// the MCP server's whole.
func TestToolSearchOnOlderModel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, text("ok"))
	r := h.run(strings.NewReader(""), "--model", "claude-opus-4-1", "--tool-search", "on",
		"--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "--tool-search on: claude-opus-4-1 has no tool search") {
		t.Errorf("stderr lacks the warning:\n%s", r.stderr)
	}
	if body := string(h.srv.Requests()[0].Body); !strings.Contains(body, "mcp__crashy__greet") || strings.Contains(body, "defer_loading") || strings.Contains(body, "tool_search") {
		t.Errorf("request deferred tools on a model without tool search: %.300s", body)
	}
}

// TestToolSearchAfterResume checks that the agent /resume makes searches
// the MCP tools as the first one did: --tool-search is the session's.
func TestToolSearchAfterResume(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := sessionHarness(t, text("one"), text("two"), text("three"))
	h.terminals["stdin"] = true
	r := h.run(strings.NewReader("hi\n/clear\nagain\n/resume 2\nthird\n"), "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "--tool-search", "on")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "(resumed ") {
		t.Fatalf("/resume did not resume:\n%s", r.stderr)
	}
	for i := range 3 {
		deferred, search := 0, false
		for _, tl := range sentTools(t, h, i) {
			search = search || tl["type"] == servertool.ToolSearchBM25
			if tl["defer_loading"] == true {
				deferred++
			}
		}
		if deferred == 0 || !search {
			t.Errorf("request %d: %d tools deferred, tool search tool sent %v; want the MCP tools deferred beside it", i, deferred, search)
		}
	}
}
