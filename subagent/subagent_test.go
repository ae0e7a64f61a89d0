package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/agent"
	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake starts a fake API answering with replies and returns it with a
// client; every request it got must pass the API's checks.
func fake(t *testing.T, replies ...at.Reply) (*at.Server, *llm.Client) {
	t.Helper()
	srv := at.NewServer(replies...)
	tr := &http.Transport{}
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
		for _, r := range srv.Requests() {
			if err := at.CheckRequest(r.Body); err != nil {
				t.Errorf("request %d would be rejected by the API: %v", r.N, err)
			}
		}
	})
	return srv, llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test", HTTPClient: &http.Client{Transport: tr}})
}

// run runs a parent agent with the task tool of subs on prompt, answered
// by parent, and returns its events and Result.
func run(t *testing.T, ctx context.Context, parent *llm.Client, cfg agent.Config, subs ...subagent.Agent) ([]agent.Event, agent.Result, error) {
	t.Helper()
	task, err := subagent.Tool(subs...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.Tools = parent, append(cfg.Tools, task)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	var res agent.Result
	for ev, e := range a.Stream(ctx, "delegate") {
		evs = append(evs, ev)
		if r, ok := ev.(agent.Result); ok {
			res, err = r, e
		}
	}
	return evs, res, err
}

func echo(t *testing.T) *tool.Tool {
	return tool.Must(tool.New("echo", "Echo text.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}))
}

// text is the text of a tool_result block.
func text(b at.Block) string {
	var s strings.Builder
	for _, c := range b.Content {
		s.WriteString(c.Text)
	}
	return s.String()
}

// taskCall is the input of a task call that gives prompt to kind.
func taskCall(kind, prompt string) string {
	b, _ := json.Marshal(map[string]string{"description": "a task", "prompt": prompt, "subagent_type": kind})
	return string(b)
}

// TestSubRun checks a delegation end to end: the sub-run's request (its
// system prompt, tools, model, and the prompt as its only message), the
// parent's tool result, the sub-run's events in the parent's stream, and
// its usage in the parent's Result.
func TestSubRun(t *testing.T) {
	childSrv, child := fake(t,
		at.NewStream().Usage(100, 0, 0, 0).ToolUse("toolu_c1", "echo", `{"text":"looked"}`).Stop("tool_use", 5),
		at.NewStream().Usage(200, 0, 0, 0).Text("LGTM: no bugs.").Stop("end_turn", 7))
	srv, parent := fake(t,
		at.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_p1", "task", taskCall("reviewer", "Review main.go.")).Stop("tool_use", 1),
		at.NewStream().Usage(20, 0, 0, 0).Text("The reviewer approves.").Stop("end_turn", 2))
	var transcripts []string
	reviewer := subagent.Agent{Name: "reviewer", Description: "Reviews code.", Config: agent.Config{
		Model: child, System: "You review code.", Tools: []*tool.Tool{echo(t)},
		History: memory.New(memory.Config{Model: "claude-haiku-5-5"})},
		Done: func(id string, h *memory.History, res agent.Result) {
			transcripts = append(transcripts, fmt.Sprintf("%s: %d messages, %s", id, len(h.Messages()), res.State))
		}}
	evs, res, err := run(t, t.Context(), parent, agent.Config{}, reviewer)
	if err != nil || res.State != agent.Finished {
		t.Fatalf("run = %v, %v", res.State, err)
	}
	if diff := cmp.Diff([]string{"toolu_p1: 4 messages, finished"}, transcripts); diff != "" {
		t.Errorf("Done calls (-want +got):\n%s", diff)
	}

	// The sub-run's first request.
	p, err := childSrv.Requests()[0].Params()
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, raw := range p.Tools {
		var spec struct{ Name string }
		json.Unmarshal(raw, &spec)
		tools = append(tools, spec.Name)
	}
	var system []struct{ Text string }
	json.Unmarshal(p.System, &system)
	got := map[string]any{"model": p.Model, "tools": tools, "messages": len(p.Messages), "prompt": p.Messages[0].Text, "system": system[0].Text}
	want := map[string]any{"model": "claude-haiku-5-5", "tools": []string{"echo"}, "messages": 1, "prompt": "Review main.go.", "system": "You review code."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the sub-run's request (-want +got):\n%s", diff)
	}

	// The parent's tool result is the sub-run's final text.
	results := srv.Requests()[1].ToolResults()
	if len(results) != 1 || results[0].IsError || !strings.Contains(text(results[0]), "LGTM: no bugs.") {
		t.Errorf("the parent's tool result = %+v, want the reviewer's answer", results)
	}

	// The sub-run's events, in the parent's stream, before the call's end.
	var nested []string
	done := -1
	for i, ev := range evs {
		switch ev := ev.(type) {
		case agent.Nested:
			if ev.ParentID != "toolu_p1" || ev.Agent != "reviewer" {
				t.Errorf("nested event marked %q, %q; want toolu_p1, reviewer", ev.ParentID, ev.Agent)
			}
			if done >= 0 {
				t.Errorf("nested %T after the task call's ToolDone", ev.Event)
			}
			switch e := ev.Event.(type) {
			case agent.ToolDone:
				nested = append(nested, "done "+e.Name+" "+e.Content)
			case agent.Result:
				nested = append(nested, "result "+string(e.State)+" "+e.Text)
			}
		case agent.ToolDone:
			done = i
		}
	}
	if diff := cmp.Diff([]string{"done echo looked", "result finished LGTM: no bugs."}, nested); diff != "" {
		t.Errorf("the nested events (-want +got):\n%s", diff)
	}

	// The parent's usage and cost include the sub-run's.
	if got, want := res.Usage, (llm.Usage{InputTokens: 330, OutputTokens: 15}); got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
	haiku, _ := llm.LookupModel("claude-haiku-5-5")
	sonnet, _ := llm.LookupModel(llm.DefaultModel)
	wantCost := sonnet.Price.Cost(llm.Usage{InputTokens: 30, OutputTokens: 3}) + haiku.Price.Cost(llm.Usage{InputTokens: 300, OutputTokens: 12})
	if d := res.CostUSD - wantCost; d > 1e-12 || d < -1e-12 {
		t.Errorf("cost = %v, want %v", res.CostUSD, wantCost)
	}
}

// TestResults checks what the parent's model reads for each way a call
// can go: unknown agents, failed and limited sub-runs are errors that say so.
func TestResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		call    string
		child   []at.Reply
		cfg     agent.Config // the subagent's limits
		isError bool
		content string // a substring
	}{
		{"answer", taskCall("reviewer", "go"), []at.Reply{at.NewStream().Text("done").Stop("end_turn")}, agent.Config{}, false, "done"},
		{"unknown type", taskCall("writer", "go"), nil, agent.Config{}, true, `writer does not equal any of: [reviewer]`},
		{"failed", taskCall("reviewer", "go"), []at.Reply{at.HTTPError{Status: 400, Type: "invalid_request_error", Message: "bad"}}, agent.Config{}, true, `agent "reviewer" failed`},
		{"iteration limit", taskCall("reviewer", "go"), []at.Reply{at.NewStream().ToolUse("toolu_c1", "echo", `{"text":"a"}`).Stop("tool_use")},
			agent.Config{MaxIterations: 1}, true, `agent "reviewer" stopped without a final answer: iteration_limit`},
		{"refused", taskCall("reviewer", "go"), []at.Reply{at.NewStream().Stop("refusal")}, agent.Config{}, true, "refused"},
		{"missing prompt", `{"description":"x","subagent_type":"reviewer"}`, nil, agent.Config{}, true, `"prompt"`},
		{"blank prompt", taskCall("reviewer", " \n"), nil, agent.Config{}, true, "the prompt is blank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			childSrv, child := fake(t, tc.child...)
			srv, parent := fake(t,
				at.NewStream().ToolUse("toolu_p1", "task", tc.call).Stop("tool_use"),
				at.NewStream().Text("ok").Stop("end_turn"))
			cfg := tc.cfg
			cfg.Model, cfg.Tools = child, []*tool.Tool{echo(t)}
			_, res, err := run(t, t.Context(), parent, agent.Config{}, subagent.Agent{Name: "reviewer", Description: "Reviews.", Config: cfg})
			if err != nil || res.State != agent.Finished {
				t.Fatalf("run = %v, %v", res.State, err)
			}
			results := srv.Requests()[1].ToolResults()
			if len(results) != 1 || results[0].IsError != tc.isError || !strings.Contains(text(results[0]), tc.content) {
				t.Errorf("tool result = %+v, want is_error %v containing %q", results, tc.isError, tc.content)
			}
			if len(tc.child) == 0 && len(childSrv.Requests()) > 0 {
				t.Errorf("the subagent was run")
			}
		})
	}
}

// TestConcurrent makes two delegations in one turn: neither sub-run's
// model answers until both have asked, so the test ends only if they run
// at once. Each result goes to its own call.
func TestConcurrent(t *testing.T) {
	var mu sync.Mutex
	arrived, both := 0, make(chan struct{})
	_, child := fake(t, at.Repeat(at.ReplyFunc(func(r *at.Request) at.Reply {
		mu.Lock()
		if arrived++; arrived == 2 {
			close(both)
		}
		mu.Unlock()
		<-both
		return at.NewStream().Text("did " + r.Messages()[0].Text).Stop("end_turn")
	})))
	srv, parent := fake(t,
		at.NewStream().ToolUse("toolu_1", "task", taskCall("worker", "one")).ToolUse("toolu_2", "task", taskCall("worker", "two")).Stop("tool_use"),
		at.NewStream().Text("both done").Stop("end_turn"))
	evs, res, err := run(t, t.Context(), parent, agent.Config{}, subagent.Agent{Name: "worker", Description: "Works.", Config: agent.Config{Model: child}})
	if err != nil || res.State != agent.Finished {
		t.Fatalf("run = %v, %v", res.State, err)
	}
	var got []string
	for _, r := range srv.Requests()[1].ToolResults() {
		got = append(got, r.ToolUseID+": "+text(r))
	}
	if diff := cmp.Diff([]string{"toolu_1: did one", "toolu_2: did two"}, got); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	answers := map[string]string{}
	for _, ev := range evs {
		if n, ok := ev.(agent.Nested); ok {
			if r, ok := n.Event.(agent.Result); ok {
				answers[n.ParentID] = r.Text
			}
		}
	}
	if diff := cmp.Diff(map[string]string{"toolu_1": "did one", "toolu_2": "did two"}, answers); diff != "" {
		t.Errorf("nested results by parent id (-want +got):\n%s", diff)
	}
}

// TestCancel cancels the parent while its subagent's model streams: the
// sub-run ends cancelled, and so does the parent, with no goroutine left.
func TestCancel(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the fakes' cleanups
	_, child := fake(t, at.NewStream().Text("thinking about it").Stall())
	_, parent := fake(t, at.NewStream().ToolUse("toolu_p1", "task", taskCall("worker", "go")).Stop("tool_use"))
	task, err := subagent.Tool(subagent.Agent{Name: "worker", Description: "Works.", Config: agent.Config{Model: child}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: parent, Tools: []*tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var childStates []agent.State
	var res agent.Result
	for ev, err := range a.Stream(ctx, "delegate") {
		switch ev := ev.(type) {
		case agent.Nested:
			if d, ok := ev.Event.(agent.TextDelta); ok && d.Text != "" {
				cancel() // the subagent is streaming
			}
			if r, ok := ev.Event.(agent.Result); ok {
				childStates = append(childStates, r.State)
			}
		case agent.Result:
			res = ev
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		}
	}
	if res.State != agent.Cancelled {
		t.Errorf("parent state = %s, want cancelled", res.State)
	}
	if diff := cmp.Diff([]agent.State{agent.Cancelled}, childStates); diff != "" {
		t.Errorf("the subagent's states (-want +got):\n%s", diff)
	}
}

// TestLimits: a subagent's tokens and cost count against the parent's
// limits. The sub-run's first turn spends past the parent's limit: it
// stops there, and so does the parent, before its next turn.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent agent.Config
		want   agent.State
	}{
		{"tokens", agent.Config{MaxTotalTokens: 5_000}, agent.TokenLimit},
		{"budget", agent.Config{MaxCostUSD: 0.005}, agent.BudgetLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 10,000 input tokens at $2 a million: $0.02.
			childSrv, child := fake(t, at.Repeat(at.NewStream().Usage(10_000, 1, 0, 0).ToolUse("toolu_c", "echo", `{"text":"x"}`).Stop("tool_use")))
			srv, parent := fake(t, at.Repeat(at.NewStream().ToolUse("toolu_p", "task", taskCall("worker", "go")).Stop("tool_use")))
			evs, res, err := run(t, t.Context(), parent, tc.parent, subagent.Agent{Name: "worker", Description: "Works.",
				Config: agent.Config{Model: child, Tools: []*tool.Tool{echo(t)}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.State != tc.want || len(srv.Requests()) != 1 || len(childSrv.Requests()) != 1 {
				t.Errorf("parent %s after %d requests, subagent %d; want %s after 1 and 1", res.State, len(srv.Requests()), len(childSrv.Requests()), tc.want)
			}
			for _, ev := range evs {
				if d, ok := ev.(agent.ToolDone); ok && (!d.IsError || !strings.Contains(d.Content, string(tc.want))) {
					t.Errorf("task result = %q, want an error naming %s", d.Content, tc.want)
				}
			}
			if res.Usage.InputTokens < 10_000 {
				t.Errorf("parent usage %+v leaves out the subagent's", res.Usage)
			}
		})
	}
}

// TestHooks: the hooks given to a subagent see its calls, as the
// parent's see the parent's.
func TestHooks(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	deny := agent.ToolGate(func(ctx context.Context, call llm.ToolUse) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, call.Name)
		if call.Name == "echo" {
			return errors.New("no echoing")
		}
		return nil
	})
	childSrv, child := fake(t,
		at.NewStream().ToolUse("toolu_c1", "echo", `{"text":"x"}`).Stop("tool_use"),
		at.NewStream().Text("could not").Stop("end_turn"))
	_, parent := fake(t,
		at.NewStream().ToolUse("toolu_p1", "task", taskCall("worker", "go")).Stop("tool_use"),
		at.NewStream().Text("ok").Stop("end_turn"))
	hooks := []agent.Hook{deny}
	_, _, err := run(t, t.Context(), parent, agent.Config{Hooks: hooks}, subagent.Agent{Name: "worker", Description: "Works.",
		Config: agent.Config{Model: child, Tools: []*tool.Tool{echo(t)}, Hooks: hooks}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"task", "echo"}, seen); diff != "" {
		t.Errorf("calls the hook saw (-want +got):\n%s", diff)
	}
	if r := childSrv.Requests()[1].ToolResults(); len(r) != 1 || !r[0].IsError || !strings.Contains(text(r[0]), "no echoing") {
		t.Errorf("the subagent's tool result = %+v, want the denial", r)
	}
}

func TestToolErrors(t *testing.T) {
	model := llm.New(llm.Config{})
	ok := subagent.Agent{Name: "ok", Description: "Fine.", Config: agent.Config{Model: model}}
	task := tool.Must(tool.New("task", "Recurse.", func(context.Context, struct{}) (string, error) { return "", nil }))
	for _, tc := range []struct {
		name   string
		agents []subagent.Agent
		err    string
	}{
		{"none", nil, "subagent: no agents"},
		{"bad name", []subagent.Agent{{Name: "Code Reviewer", Description: "x", Config: ok.Config}}, `agent name "Code Reviewer"`},
		{"no description", []subagent.Agent{{Name: "r", Config: ok.Config}}, `agent "r" has no description`},
		{"duplicate", []subagent.Agent{ok, ok}, `two agents are named "ok"`},
		{"no model", []subagent.Agent{{Name: "r", Description: "x"}}, `agent "r": agent: Config.Model is required`},
		{"recursion", []subagent.Agent{{Name: "r", Description: "x", Config: agent.Config{Model: model, Tools: []*tool.Tool{task}}}}, `agent "r" has a task tool`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := subagent.Tool(tc.agents...)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestSpans: the sub-run is an invoke_agent span under the task call's
// execute_tool span, in the parent's trace.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel := telemetry.New(telemetry.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	_, child := fake(t, at.NewStream().Text("done").Stop("end_turn"))
	_, parent := fake(t,
		at.NewStream().ToolUse("toolu_p1", "task", taskCall("reviewer", "go")).Stop("tool_use"),
		at.NewStream().Text("ok").Stop("end_turn"))
	if _, res, err := run(t, t.Context(), parent, agent.Config{Name: "main", Observer: tel},
		subagent.Agent{Name: "reviewer", Description: "Reviews.", Config: agent.Config{Model: child, Observer: tel}}); err != nil || res.State != agent.Finished {
		t.Fatalf("run = %v, %v", res.State, err)
	}
	byID := map[oteltrace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
	}
	var chain []string
	for _, s := range rec.Ended() {
		if s.Name() != "invoke_agent reviewer" {
			continue
		}
		for p := s; p != nil; p = byID[p.Parent().SpanID()] {
			chain = append(chain, p.Name())
		}
	}
	if diff := cmp.Diff([]string{"invoke_agent reviewer", "execute_tool task", "invoke_agent main"}, chain); diff != "" {
		t.Errorf("the sub-run's span and its parents (-want +got):\n%s", diff)
	}
}

// TestStopReading stops reading the parent's stream at the subagent's
// first event: both runs end, and no goroutine is left.
func TestStopReading(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the fakes' cleanups
	_, child := fake(t, at.NewStream().Text("working").Stall())
	_, parent := fake(t, at.NewStream().ToolUse("toolu_p1", "task", taskCall("worker", "go")).Stop("tool_use"))
	task, err := subagent.Tool(subagent.Agent{Name: "worker", Description: "Works.", Config: agent.Config{Model: child}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: parent, Tools: []*tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	var got agent.Event
	for ev := range a.Stream(t.Context(), "delegate") {
		if n, ok := ev.(agent.Nested); ok {
			got = n.Event
			break
		}
	}
	if _, ok := got.(agent.TurnStart); !ok {
		t.Errorf("the subagent's first event = %#v, want its TurnStart", got)
	}
}

// TestToolNames checks the names of an agent's tools, from its Tools and
// its Registry, sorted and each once, as the task tool's description lists
// them and package durable offers them to a child workflow.
func TestToolNames(t *testing.T) {
	reg := tool.NewRegistry(tool.Config{})
	shout := tool.Must(tool.New("shout", "Shout.", func(context.Context, struct{}) (string, error) { return "!", nil }))
	if err := reg.Register(shout); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  agent.Config
		want []string
	}{
		{"none", agent.Config{}, nil},
		{"tools", agent.Config{Tools: []*tool.Tool{shout, nil, echo(t)}}, []string{"echo", "shout"}},
		{"tools and registry", agent.Config{Tools: []*tool.Tool{echo(t), shout}, Registry: reg}, []string{"echo", "shout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := subagent.Agent{Name: "helper", Description: "helps", Config: tc.cfg}
			if diff := cmp.Diff(tc.want, a.ToolNames()); diff != "" {
				t.Errorf("ToolNames (-want +got):\n%s", diff)
			}
		})
	}
}
