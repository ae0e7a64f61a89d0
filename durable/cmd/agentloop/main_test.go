package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/server/temporaltest"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/internal/cli"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// Exit statuses of the command (see agentloop --help).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitLimit   = 3
)

// command runs the durable build in process with env as its environment.
func command(ctx context.Context, env map[string]string, stdout, stderr io.Writer, args ...string) int {
	return cli.RunWith(ctx, mode{}, args, func(k string) string { return env[k] }, strings.NewReader(""), stdout, stderr, make(chan os.Signal))
}

// startWorker starts a Temporal server and the CLI's worker on task queue
// queue, with env and the worker's further args, and returns the server
// and the flags that reach the worker. When t ends, the worker stops
// before the server, and an exit other than 0 fails t.
func startWorker(t *testing.T, env map[string]string, queue string, args ...string) (*temporaltest.TestServer, []string) {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	common := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", queue}
	start(t, env, io.Discard, append(append([]string{"worker"}, common...), args...)...)
	return ts, common
}

// start runs the command in the background, as a worker or a server
// runs, with env and stdout. stop, also called when t ends, interrupts
// it, and fails t unless it exits 0; exited is closed when it exits.
func start(t *testing.T, env map[string]string, stdout io.Writer, args ...string) (stop func(), exited <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var code int
	var stderr bytes.Buffer
	go func() {
		defer close(done)
		code = command(ctx, env, stdout, &stderr, args...)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			if code != exitOK {
				t.Errorf("%s: exit %d:\n%s", args[0], code, stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	return stop, done
}

// TestWorkerAndPrompt runs a worker and the prompts of one session against
// a real Temporal server and the fake API: the answer streams to stdout
// through the plain CLI's renderer, the calculator runs on the worker, a
// failed prompt exits 1 and changes nothing, the next prompt continues the
// conversation, and --json prints the in-process CLI's events.
func TestWorkerAndPrompt(t *testing.T) {
	api := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"expression":"6*7"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It is ", "42.").Stop("end_turn"),
		anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "no"},
		anthropictest.NewStream().Text("Still 42.").Stop("end_turn"),
		anthropictest.NewStream().Text("Yes.").Stop("end_turn"),
	)
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	_, common := startWorker(t, env, "cli", "--tools", "calculator", "--append-system", "Be brief.")

	for _, tt := range []struct {
		prompt, want string
		code         int
	}{{"what is 6*7?", "It is 42.", exitOK}, {"fail", "", exitFailure}, {"and now?", "Still 42.", exitOK}} {
		var stdout, stderr bytes.Buffer
		code := command(context.Background(), env, &stdout, &stderr, append(common, "--session", "s1", tt.prompt)...)
		if code != tt.code {
			t.Fatalf("%q: exit %d, want %d; stderr:\n%s", tt.prompt, code, tt.code, stderr.String())
		}
		if got := strings.TrimSpace(stdout.String()); got != tt.want {
			t.Errorf("%q: stdout %q, want %q", tt.prompt, got, tt.want)
		}
		if tt.prompt == "what is 6*7?" && !strings.Contains(stderr.String(), "calculator") {
			t.Errorf("stderr does not show the tool call:\n%s", stderr.String())
		}
		if tt.code == exitFailure && !strings.Contains(stderr.String(), "no") {
			t.Errorf("stderr does not give the API's message:\n%s", stderr.String())
		}
	}
	reqs := api.Requests()
	// The worker's system prompt, since the prompts bring none.
	if p, err := reqs[0].Params(); err != nil {
		t.Error(err)
	} else if !strings.Contains(string(p.System), "Be brief.") {
		t.Errorf("system prompt %s, want the worker's", p.System)
	}
	if n := len(reqs[3].Messages()); n != 5 {
		t.Errorf("the third prompt sent %d messages, want 5: the session's conversation and the prompt", n)
	}

	// --json: the in-process CLI's event lines, ending with done; and the
	// prompt's --append-system adds to the worker's system prompt.
	var stdout, stderr bytes.Buffer
	args := append(common, "--json", "--append-system", "Use digits.", "--session", "s1", "sure?")
	if code := command(context.Background(), env, &stdout, &stderr, args...); code != exitOK {
		t.Fatalf("--json: exit %d; stderr:\n%s", code, stderr.String())
	}
	if p, err := api.Requests()[4].Params(); err != nil {
		t.Error(err)
	} else if s := string(p.System); !strings.Contains(s, "Be brief.") || !strings.Contains(s, "Use digits.") {
		t.Errorf("system prompt %s, want the worker's with the prompt's --append-system", p.System)
	}
	var types []string
	for line := range strings.Lines(stdout.String()) {
		var ev struct{ Type string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, " "); got != "turn_start text_delta usage_update done" {
		t.Errorf("--json event types = %q, want %q", got, "turn_start text_delta usage_update done")
	}
	for _, r := range api.Requests() {
		if err := anthropictest.CheckRequest(r.Body); err != nil {
			t.Errorf("request %d: %v", r.N, err)
		}
	}
}

// TestBudgetLimit: --max-budget-usd reaches the workflow, whose run stops
// before the request that would spend past it, and the command exits 3
// with "budget limit", as in process.
func TestBudgetLimit(t *testing.T) {
	// $1.0001 a turn at the default model's price.
	api := anthropictest.NewServer(anthropictest.Repeat(anthropictest.NewStream().Usage(500_000, 0, 0, 0).
		ToolUse("toolu_1", "calculator", `{"expression":"6*7"}`).Stop("tool_use", 5)))
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	_, common := startWorker(t, env, "budget", "--tools", "calculator")

	var stdout, stderr bytes.Buffer
	if code := command(context.Background(), env, &stdout, &stderr, append(common, "--max-budget-usd", "0.5", "what is 6*7?")...); code != exitLimit {
		t.Fatalf("exit %d, want 3; stderr:\n%s", code, stderr.String())
	}
	if want := "budget limit reached: $1.0001 spent of --max-budget-usd 0.5"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if n := len(api.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestWorkerSettings: a worker takes --settings, whose deny rules and
// PreToolUse hooks hold for the calls of the runs it serves.
func TestWorkerSettings(t *testing.T) {
	api := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"expression":"6*7"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("No maths today.").Stop("end_turn"))
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	settings := `{"hooks": {"PreToolUse": [{"matcher": "calculator", "hooks": [{"type": "command", "command": "echo no maths >&2; exit 2"}]}]}}`
	_, common := startWorker(t, env, "settings", "--tools", "calculator", "--settings", settings)

	var stdout, stderr bytes.Buffer
	if code := command(context.Background(), env, &stdout, &stderr, append(common, "what is 6*7?")...); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	res := api.Requests()[1].ToolResults()
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content[0].Text, "no maths") {
		t.Errorf("tool_result %+v, want the hook's denial", res)
	}
}

// TestUsage checks the durable mode's usage errors: each exits 2 before
// anything connects.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"worker"},
		{"worker", "--temporal", "localhost:1"}, // no API key
		{"worker", "--temporal", "localhost:1", "--tools", "nope"},
		{"approve", "--temporal", "localhost:1", "toolu_1"},
		{"approve", "--temporal", "localhost:1", "--session", "s"},
		{"--temporal", "localhost:1"}, // no prompt
	} {
		var out bytes.Buffer
		if code := command(context.Background(), map[string]string{}, &out, &out, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d:\n%s", args, code, exitUsage, out.String())
		}
	}
}

// TestWorkerBudget: --max-budget-usd is the prompt's, carried by the run's
// input; on a worker, where it would hold for some replays and not others,
// it is a usage error that says where it goes.
func TestWorkerBudget(t *testing.T) {
	var out bytes.Buffer
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-test"}
	if code := command(context.Background(), env, &out, &out, "worker", "--temporal", "localhost:1", "--max-budget-usd", "1"); code != exitUsage ||
		!strings.Contains(out.String(), "--max-budget-usd goes with the prompt") {
		t.Errorf("exit %d, want %d, saying where the budget goes:\n%s", code, exitUsage, out.String())
	}
}

// TestProgress: a durable run shows what the in-process CLI shows between
// tool calls: the model's thinking and a compaction on stderr, never in
// the answer on stdout.
func TestProgress(t *testing.T) {
	api := anthropictest.NewServer(
		anthropictest.NewStream().Compaction("Earlier: nothing much.").
			Block(anthropictest.Block{Type: "thinking", Signature: "sig"}, "Checking the ", "sum first.").
			Text("It is ", "42.").Stop("end_turn"),
	)
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	_, common := startWorker(t, env, "progress")

	var stdout, stderr bytes.Buffer
	if code := command(context.Background(), env, &stdout, &stderr, append(common, "what is 6*7?")...); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "It is 42." {
		t.Errorf("stdout %q, want only the answer", got)
	}
	for _, want := range []string{"Checking the sum first.", "compacted the history", "on the server"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not show %q:\n%s", want, stderr.String())
		}
	}
}

// TestAgentEvent: the durable events that have a counterpart in package
// agent become it, with the fields the CLI renders.
func TestAgentEvent(t *testing.T) {
	c := memory.Compaction{Before: 900, After: 40, Steps: []string{"on the server"}}
	names := map[string]string{"toolu_1": "add"}
	sub := agent.Result{Text: "It is 3.", State: agent.Finished, Iterations: 2, Usage: llm.Usage{InputTokens: 20, OutputTokens: 4}, CostUSD: 0.0001}
	tests := []struct {
		in   durable.Event
		want agent.Event
	}{
		{durable.Event{Thinking: "hmm"}, agent.ThinkingDelta{Thinking: "hmm"}},
		{durable.Event{Text: "Hi."}, agent.TextDelta{Text: "Hi."}},
		{durable.Event{Compacted: &c}, agent.Compacted{Compaction: c}},
		{durable.Event{ToolDone: &llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: "3"}}}, Duration: 1500 * time.Millisecond},
			agent.ToolDone{ID: "toolu_1", Name: "add", Content: "3", Duration: 1500 * time.Millisecond}},
		// A sub-run's events, relayed under the task call toolu_9.
		{durable.Event{ParentID: "toolu_9", Agent: "reviewer", ToolCall: &llm.ToolUse{ID: "toolu_2", Name: "add", Input: []byte(`{}`)}},
			agent.Nested{ParentID: "toolu_9", Agent: "reviewer", Event: agent.ToolCall{ID: "toolu_2", Name: "add", Input: []byte(`{}`)}}},
		{durable.Event{ParentID: "toolu_9", Agent: "reviewer", Done: agent.Finished, Result: &sub},
			agent.Nested{ParentID: "toolu_9", Agent: "reviewer", Event: sub}},
		// From a worker that predates Result: the state alone.
		{durable.Event{ParentID: "toolu_9", Agent: "reviewer", Done: agent.Finished},
			agent.Nested{ParentID: "toolu_9", Agent: "reviewer", Event: agent.Result{State: agent.Finished}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, agentEvent(tt.in, names, "s", nil)); diff != "" {
			t.Errorf("agentEvent(%+v) (-want +got):\n%s", tt.in, diff)
		}
	}
}
