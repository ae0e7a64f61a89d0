package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/servertool"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/toolsearch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake starts a fake Anthropic server answering with replies and returns
// it with a client of it; every request sent must be one the API takes.
func fake(t *testing.T, replies ...anthropictest.Reply) (*anthropictest.Server, *llm.Client) {
	t.Helper()
	srv := anthropictest.NewServer(replies...)
	t.Cleanup(func() {
		srv.Close()
		for _, r := range srv.Requests() {
			if err := anthropictest.CheckRequest(r.Body); err != nil {
				t.Errorf("request %d would be rejected by the API: %v\nbody: %s", r.N, err, r.Body)
			}
		}
	})
	return srv, llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test"})
}

// run runs an agent of cfg, set up for tool search in mode, on prompt.
func run(t *testing.T, cfg agent.Config, mode, prompt string) agent.Result {
	t.Helper()
	cfg, err := toolsearch.Configure(cfg, mode)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rateTool is a deferrable tool, as an MCP server's is.
func rateTool(t *testing.T) *tool.Tool {
	type in struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	rate := tool.Must(tool.New("mcp__fx__get_exchange_rate", "Returns the exchange rate between two currencies.",
		func(_ context.Context, in in) (string, error) { return in.From + "/" + in.To + " = 1.08", nil }))
	rate.Deferrable = true
	return rate
}

// TestToolSearchRun is the whole path of a deferred tool: sent with
// defer_loading beside the tool search tool, found by a search, called in
// the same turn and run by the agent, the search's blocks kept for the
// next request as they came.
func TestToolSearchRun(t *testing.T) {
	srv, client := fake(t,
		anthropictest.NewStream().
			ServerToolUse("srvtoolu_01", "tool_search_tool_bm25", `{"query":"exchange rate"}`).
			ToolSearchResult("srvtoolu_01", "mcp__fx__get_exchange_rate").
			ToolUse("toolu_01", "mcp__fx__get_exchange_rate", `{"from":"EUR","to":"USD"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("1.08 dollars a euro.").Stop("end_turn"))
	res := run(t, agent.Config{Model: client, Tools: []*tool.Tool{rateTool(t)},
		ServerTools: []json.RawMessage{json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":2}`)}}, toolsearch.On, "EUR to USD?")
	if res.Text != "1.08 dollars a euro." {
		t.Fatalf("run: %q", res.Text)
	}
	reqs := srv.Requests()
	var first struct{ Tools []map[string]any }
	json.Unmarshal(reqs[0].Body, &first)
	for _, tl := range first.Tools {
		delete(tl, "input_schema")
		delete(tl, "description")
		delete(tl, "cache_control")
	}
	want := []map[string]any{{"name": "mcp__fx__get_exchange_rate", "defer_loading": true},
		{"type": "web_search_20250305", "name": "web_search", "max_uses": 2.0},
		{"type": servertool.ToolSearchBM25, "name": "tool_search_tool_bm25"}}
	if diff := cmp.Diff(want, first.Tools); diff != "" {
		t.Errorf("first request's tools (-want +got):\n%s", diff)
	}
	msgs := reqs[1].Messages()
	var types []string
	for _, b := range msgs[1].Content {
		types = append(types, b.Type)
	}
	if diff := cmp.Diff([]string{"server_tool_use", "tool_search_tool_result", "tool_use"}, types); diff != "" {
		t.Errorf("second request's assistant turn (-want +got):\n%s", diff)
	}
	var found struct {
		Content struct {
			ToolReferences []map[string]string `json:"tool_references"`
		}
	}
	json.Unmarshal(msgs[1].Content[1].Raw, &found)
	if diff := cmp.Diff([]map[string]string{{"type": "tool_reference", "tool_name": "mcp__fx__get_exchange_rate"}}, found.Content.ToolReferences); diff != "" {
		t.Errorf("tool search result sent back (-want +got):\n%s", diff)
	}
	results := reqs[1].ToolResults()
	if len(results) != 1 || results[0].ToolUseID != "toolu_01" || resultText(results[0]) != "EUR/USD = 1.08" || results[0].IsError {
		t.Errorf("tool results = %+v, want the deferred tool's output", results)
	}
}

func resultText(b anthropictest.Block) string {
	var s strings.Builder
	for _, c := range b.Content {
		s.WriteString(c.Text)
	}
	return s.String()
}

// TestToolSearchChoice checks when a run defers its deferrable tools: by
// the mode, the model's support, and in "auto" the share of the
// context window the definitions would take.
func TestToolSearchChoice(t *testing.T) {
	many := func(n int) []*tool.Tool { // n deferrable tools of about 500 tokens each
		var ts []*tool.Tool
		for i := range n {
			tl := tool.Must(tool.New(fmt.Sprintf("mcp__big__t%d", i), strings.Repeat("Does a thing well. ", 100),
				func(context.Context, struct{}) (string, error) { return "", nil }))
			tl.Deferrable = true
			ts = append(ts, tl)
		}
		return ts
	}
	for _, tt := range []struct {
		name, mode, model string
		window, tools     int
		want              bool
	}{
		{"on", toolsearch.On, "claude-opus-5-5", 0, 1, true},
		{"off", toolsearch.Off, "claude-opus-5-5", 300_000, 100, false},
		{"auto, small", "", "claude-opus-5-5", 0, 1, false},
		{"auto, over a tenth", toolsearch.Auto, "claude-opus-5-5", 300_000, 100, true},
		{"auto, under a tenth", toolsearch.Auto, "claude-opus-5-5", 200_000, 10, false},
		{"on, model without tool search", toolsearch.On, "claude-opus-4-1", 0, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, client := fake(t, anthropictest.NewStream().Text("ok").Stop("end_turn"))
			h := memory.New(memory.Config{Model: tt.model, ContextWindow: tt.window})
			run(t, agent.Config{Model: client, Tools: many(tt.tools), History: h}, tt.mode, "hi")
			body := string(srv.Requests()[0].Body)
			deferred, search := strings.Contains(body, `"defer_loading":true`), strings.Contains(body, servertool.ToolSearchBM25)
			if deferred != tt.want || search != tt.want {
				t.Errorf("deferred %v, tool search tool %v; want both %v", deferred, search, tt.want)
			}
		})
	}
	if _, err := toolsearch.Configure(agent.Config{}, "sometimes"); err == nil || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Errorf("Configure with mode \"sometimes\": %v, want an error naming it", err)
	}
}

// TestOffKeepsCallersSearch checks that mode off sends every tool whole
// even beside a tool search of the caller's, which stays as declared.
func TestOffKeepsCallersSearch(t *testing.T) {
	srv, client := fake(t, anthropictest.NewStream().Text("ok").Stop("end_turn"))
	regex := json.RawMessage(`{"type":"` + servertool.ToolSearchRegex + `","name":"tool_search_tool_regex"}`)
	run(t, agent.Config{Model: client, Tools: []*tool.Tool{rateTool(t)}, ServerTools: []json.RawMessage{regex},
		History: memory.New(memory.Config{Model: "claude-opus-5-5"})}, toolsearch.Off, "hi")
	body := string(srv.Requests()[0].Body)
	if strings.Contains(body, `"defer_loading":true`) || !strings.Contains(body, servertool.ToolSearchRegex) || strings.Contains(body, servertool.ToolSearchBM25) {
		t.Errorf("request: %s\nwant the tool whole, the caller's regex search kept and no BM25", body)
	}
}

// observer counts the runs and runtimes it wraps.
type observer struct{ runs, runtimes int }

func (o *observer) Run(ctx context.Context, _ *agent.Agent, _ string, run func(context.Context) iter.Seq2[agent.Event, error]) iter.Seq2[agent.Event, error] {
	o.runs++
	return run(ctx)
}

func (o *observer) Runtime(rt agent.Runtime) agent.Runtime { o.runtimes++; return rt }

func (o *observer) Compact(ctx context.Context, compact func(context.Context) (memory.Compaction, error)) (memory.Compaction, error) {
	return compact(ctx)
}

// TestConfigureKeepsConfig checks that Configure adds to the Config's own
// Middleware and Observer, which still see every model call and run.
func TestConfigureKeepsConfig(t *testing.T) {
	_, client := fake(t, anthropictest.NewStream().Text("ok").Stop("end_turn"))
	o, calls := &observer{}, 0
	middleware := func(m llm.Model) llm.Model {
		return llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
			calls++
			return m.Stream(ctx, req)
		})
	}
	run(t, agent.Config{Model: client, Tools: []*tool.Tool{rateTool(t)}, Middleware: middleware, Observer: o,
		History: memory.New(memory.Config{Model: "claude-opus-5-5"})}, toolsearch.Auto, "hi")
	if calls != 1 || o.runs != 1 || o.runtimes != 1 {
		t.Errorf("the Config's middleware saw %d calls, its Observer %d runs and %d runtimes; want 1 each", calls, o.runs, o.runtimes)
	}
}

// TestServerSummaryKeepsSearch is a run whose history outgrows its limit
// while its tools are deferred: memory's compaction asks the server for a
// summary (a Summarize request, through the agent's Model and so its
// middleware), which must declare the tool search beside the deferred
// tools, or llm refuses it and the run falls back to the client's summary.
func TestServerSummaryKeepsSearch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		search json.RawMessage // the Config's own tool search, if any
	}{
		{"configured search", nil},
		{"caller's search", json.RawMessage(`{"type":"` + servertool.ToolSearchRegex + `","name":"tool_search_tool_regex"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client := fake(t,
				anthropictest.NewStream().Usage(30_000, 1, 0, 0).ToolUse("toolu_01", "today", `{}`).Stop("tool_use"),
				anthropictest.NewStream().Usage(30_000, 1, 0, 0).Compaction("They asked for the date: 1 May.").Stop("compaction"),
				anthropictest.NewStream().Text("It is 1 May.").Stop("end_turn"))
			today := tool.Must(tool.New("today", "Returns the date.", func(context.Context, struct{}) (string, error) { return "1 May", nil }))
			cfg := agent.Config{Model: client, Tools: []*tool.Tool{rateTool(t), today},
				History: memory.New(memory.Config{Model: "claude-opus-5-5", ContextLimit: 20_000})}
			if tc.search != nil {
				cfg.ServerTools = []json.RawMessage{tc.search}
			}
			cfg, err := toolsearch.Configure(cfg, toolsearch.On)
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			for ev, err := range a.Stream(t.Context(), "What is the date?") {
				if err != nil {
					t.Fatal(err)
				}
				if c, ok := ev.(agent.Compacted); ok {
					steps = append(steps, c.Steps...)
				}
			}
			if diff := cmp.Diff([]string{"summarised 3 messages on the server"}, steps); diff != "" {
				t.Errorf("compaction steps (-want +got):\n%s", diff)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want the turn, the summary and the answer", len(reqs))
			}
			var summary struct{ Tools []map[string]any }
			json.Unmarshal(reqs[1].Body, &summary)
			var names []any
			for _, tl := range summary.Tools {
				names = append(names, tl["name"])
			}
			want := []any{"mcp__fx__get_exchange_rate", "today", "tool_search_tool_bm25"}
			if tc.search != nil {
				want[2] = "tool_search_tool_regex"
			}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("the summary request's tools (-want +got):\n%s", diff)
			}
		})
	}
}
