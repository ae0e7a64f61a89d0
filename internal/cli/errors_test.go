package cli

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
)

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		stdin  string
		stderr []string
	}{
		{"no key", []string{"hi"}, map[string]string{"ANTHROPIC_API_KEY": ""}, "",
			[]string{"ANTHROPIC_API_KEY", "export ANTHROPIC_API_KEY="}},
		// Flags are named as --help names them, with two dashes.
		{"unknown flag", []string{"--bogus", "hi"}, nil, "", []string{"agentloop: unknown flag --bogus (see agentloop --help)\n"}},
		{"unknown flag with a value", []string{"-v", "--bogus=1", "hi"}, nil, "", []string{"unknown flag --bogus ("}},
		{"unknown flag, one dash", []string{"-bogus", "hi"}, nil, "", []string{"unknown flag --bogus ("}},
		{"unknown demo flag", []string{"demo", "--bogus"}, nil, "", []string{"unknown flag --bogus ("}},
		{"bad number", []string{"--max-tokens", "lots", "hi"}, nil, "", []string{`invalid value "lots" for --max-tokens: `}},
		{"bad number, one dash", []string{"-max-tokens=lots", "hi"}, nil, "", []string{`invalid value "lots" for --max-tokens: `}},
		{"a flag without its value", []string{"--model"}, nil, "", []string{"--model needs a value ("}},
		{"a flag for a value", []string{"--model", "--json", "hi"}, nil, "", []string{"--model needs a value, but --json follows it"}},
		{"bad permission mode", []string{"--permission-mode", "auto", "hi"}, nil, "", []string{`--permission-mode "auto": want default, acceptEdits, plan or bypassPermissions`}},
		{"plan with --yes", []string{"--permission-mode", "plan", "--yes", "hi"}, nil, "", []string{"--permission-mode plan changes nothing, and --yes"}},
		{"bad output format", []string{"--output-format", "xml", "hi"}, nil, "", []string{`--output-format "xml": want text, json or stream-json`}},
		{"--json against --output-format", []string{"--json", "--output-format", "json", "hi"}, nil, "", []string{"--json is --output-format stream-json, not json"}},
		// A blank value is not the default.
		{"blank model", []string{"--model=", "hi"}, nil, "", []string{"--model needs a value, not a blank one"}},
		{"blank secret-env", []string{"--secret-env", "", "hi"}, nil, "", []string{"--secret-env needs a value, not a blank one"}},
		{"blank session", []string{"--session", " ", "hi"}, nil, "", []string{"--session needs a value, not a blank one"}},
		{"secret-env with a value", []string{"--secret-env", "TOKEN=abc", "hi"}, nil, "", []string{`--secret-env "TOKEN=abc" is not a variable name or a pattern`}},
		{"secret-env bad pattern", []string{"--secret-env", "AWS_[", "hi"}, nil, "", []string{`--secret-env "AWS_["`}},
		{"context limit below the system prompt", []string{"--context-limit", "5", "hi"}, nil, "",
			[]string{"--context-limit 5 leaves no room for the conversation: the system prompt and the tool definitions take about"}},
		{"context limit over the window", []string{"--model", "claude-opus-4-6", "--context-limit", "300000", "hi"}, nil, "",
			[]string{"--context-limit 300000 is over the 200000-token context window of claude-opus-4-6"}},
		{"zero max tokens", []string{"--max-tokens", "0", "hi"}, nil, "", []string{"--max-tokens must be at least 1"}},
		{"max tokens over the model's output", []string{"--model", "claude-sonnet-5-5", "--max-tokens", "9999999", "hi"}, nil, "",
			[]string{"--max-tokens 9999999 is over the", "claude-sonnet-5-5 can write in one turn"}},
		{"unknown tool", []string{"--tools", "calculator,abacus", "hi"}, nil, "", []string{`"abacus"`, "calculator"}},
		{"no prompt", nil, nil, " \n", []string{"no prompt"}},
		{"zero iterations", []string{"--max-iterations", "0", "hi"}, nil, "", []string{"--max-iterations"}},
		{"negative duration", []string{"--max-duration", "-1s", "hi"}, nil, "", []string{"--max-duration"}},
		{"duration without unit", []string{"--max-duration", "90", "hi"}, nil, "", []string{"max-duration"}},
		{"negative token limit", []string{"--max-total-tokens", "-5", "hi"}, nil, "", []string{"--max-total-tokens"}},
		{"negative budget", []string{"--max-budget-usd", "-1", "hi"}, nil, "", []string{"--max-budget-usd must be 0 (no limit) or a positive amount, not -1"}},
		{"NaN budget", []string{"--max-budget-usd", "NaN", "hi"}, nil, "", []string{"--max-budget-usd must be 0 (no limit) or a positive amount, not NaN"}},
		{"infinite budget", []string{"--max-budget-usd", "Inf", "hi"}, nil, "", []string{"--max-budget-usd must be 0 (no limit) or a positive amount, not +Inf"}},
		{"budget on an unpriced model", []string{"--model", "claude-unpriced-1", "--max-budget-usd", "1", "hi"}, nil, "",
			[]string{"--max-budget-usd needs the price of the model, and agentloop does not know that of claude-unpriced-1"}},
		{"thinking above max tokens", []string{"--model", "claude-sonnet-4-6", "--thinking", "9000", "--max-tokens", "4096", "hi"}, nil, "",
			[]string{"--thinking 9000 must be below --max-tokens 4096"}},
		{"thinking at the default max tokens", []string{"--model", "claude-sonnet-4-6", "--thinking", "8192", "hi"}, nil, "",
			[]string{"--thinking 8192 must be below --max-tokens 8192"}},
		{"thinking below the API's minimum", []string{"--model", "claude-opus-4-6", "--thinking", "500", "hi"}, nil, "", []string{"--thinking 500", "1024"}},
		{"a thinking budget on an adaptive-only model", []string{"--model", "claude-opus-5-5", "--thinking", "2048", "hi"}, nil, "",
			[]string{"--thinking 2048: claude-opus-5-5 takes no thinking budget", "--effort (low, medium, high, xhigh, max)"}},
		{"a thinking budget on the default model", []string{"--thinking", "2048", "hi"}, nil, "", []string{"claude-sonnet-5-5 takes no thinking budget"}},
		{"a thinking budget on an unknown model", []string{"--model", "claude-next", "--thinking", "2048", "hi"}, nil, "", []string{"claude-next takes no thinking budget"}},
		{"an effort the model does not take", []string{"--model", "claude-opus-4-6", "--effort", "xhigh", "hi"}, nil, "",
			[]string{"--effort xhigh: claude-opus-4-6 takes low, medium, high, max"}},
		{"a misspelt effort", []string{"--effort", "hihg", "hi"}, nil, "", []string{"--effort hihg"}},
		{"an effort on a model that takes none", []string{"--model", "claude-haiku-4-5", "--effort", "low", "hi"}, nil, "", []string{"claude-haiku-4-5 takes no effort level"}},
		{"a tool twice", []string{"--tools", "calculator,calculator", "hi"}, nil, "", []string{"--tools", "calculator twice"}},
		{"a tool twice over two flags", []string{"--tools", "calculator", "--tools", " calculator", "hi"}, nil, "",
			[]string{"--tools", "calculator twice"}},
		{"base URL without a scheme", []string{"hi"}, map[string]string{"ANTHROPIC_BASE_URL": "localhost:8080"}, "",
			[]string{"ANTHROPIC_BASE_URL", `"localhost:8080"`, "https://"}},
		{"blank prompt argument", []string{" ", "\t"}, nil, "", []string{"prompt is blank"}},
		{"empty prompt argument", []string{""}, nil, "piped input", []string{"prompt is blank"}},
		{"demo with a prompt", []string{"demo", "--fast", "please"}, nil, "", []string{"demo takes no prompt"}},
		{"demo with a session", []string{"--session", "x.jsonl", "demo"}, nil, "", []string{"--session"}},
		{"demo with an MCP server", []string{"--mcp-url", "http://example.com/mcp", "demo"}, nil, "", []string{"--mcp-url"}},
		{"demo with agents", []string{"--agents", `{}`, "demo"}, nil, "", []string{"--agents"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for k, v := range tc.env {
				h.env[k] = v
			}
			r := h.run(strings.NewReader(tc.stdin), tc.args...)
			r.check(t, exitUsage)
			for _, want := range tc.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if n := len(h.srv.Requests()); n != 0 {
				t.Errorf("%d requests sent for a usage error", n)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	loop := anthropictest.Repeat(anthropictest.NewStream().
		ToolUse("toolu_x", "calculator", `{"a":1,"b":1,"operation":"add"}`).Stop("tool_use"))
	for _, tc := range []struct {
		name   string
		args   []string
		reply  anthropictest.Reply
		code   int
		stdout string
		stderr []string
	}{
		{"api error", []string{"hi"},
			anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "max_tokens: too large", RequestID: "req_0123abc"},
			exitFailure, "", []string{"max_tokens: too large", "req_0123abc", "400", "invalid_request_error"}},
		{"overloaded after retries", []string{"hi"},
			anthropictest.Repeat(anthropictest.HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RequestID: "req_529", RetryAfter: time.Millisecond}),
			exitFailure, "", []string{"Overloaded", "req_529"}},
		{"refusal", []string{"hi"},
			anthropictest.NewStream().Text("I can't").Stop("refusal"),
			exitOK, "", []string{"declined"}},
		{"cut off", []string{"--max-tokens", "100", "hi"},
			anthropictest.NewStream().Text("A long ans").Stop("max_tokens"),
			exitOK, "A long ans\n", []string{"cut off at --max-tokens 100"}},
		{"iteration limit", []string{"--tools", "calculator", "--max-iterations", "2", "hi"},
			loop, exitLimit, "", []string{"iteration limit", "2 model turns"}},
		{"iteration limit of one", []string{"--tools", "calculator", "--max-iterations", "1", "hi"},
			loop, exitLimit, "", []string{"iteration limit reached: 1 model turn without"}},
		// The fake API never answers, so only the deadline can end the run.
		{"time limit", []string{"--max-duration", "1ms", "hi"},
			anthropictest.Replay(nil).Stall(), exitLimit, "", []string{"time limit", "--max-duration 1ms"}},
		// 15 tokens a turn: the second turn reaches 30 of 20, and the
		// check before the third stops the run.
		{"token limit", []string{"--tools", "calculator", "--max-total-tokens", "20", "hi"},
			anthropictest.Repeat(anthropictest.NewStream().Usage(10, 0, 0, 0).
				ToolUse("toolu_x", "calculator", `{"a":1,"b":1,"operation":"add"}`).Stop("tool_use", 5)),
			exitLimit, "", []string{"token limit", "30 tokens used of --max-total-tokens 20"}},
		// $1.0001 a turn at the default model's price: the check before the
		// second turn stops the run.
		{"budget limit", []string{"--tools", "calculator", "--max-budget-usd", "0.5", "hi"},
			anthropictest.Repeat(anthropictest.NewStream().Usage(500_000, 0, 0, 0).
				ToolUse("toolu_x", "calculator", `{"a":1,"b":1,"operation":"add"}`).Stop("tool_use", 5)),
			exitLimit, "", []string{"budget limit reached: $1.0001 spent of --max-budget-usd 0.5, without a final answer"}},
		{"retried turn", []string{"hi"},
			anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
				if r.N == 1 {
					return anthropictest.NewStream().Text("Parti").ErrorEvent("overloaded_error", "Overloaded")
				}
				return text("Whole.")
			})),
			exitOK, "Whole.\n", []string{"retrying the turn (attempt 2): overloaded_error: Overloaded (request req_anthropictest0000000001); its partial output is discarded\n"}},
		// The llm client retries before any output; each retry is one
		// line on stderr, without -v.
		{"retried request", []string{"hi"},
			anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
				if r.N < 3 {
					return anthropictest.HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RequestID: "req_529", RetryAfter: time.Millisecond}
				}
				return text("Whole.")
			})),
			exitOK, "Whole.\n", []string{
				"retrying in 1ms (attempt 2 of 3): API error 529 overloaded_error: Overloaded (request req_529)\n",
				"retrying in 1ms (attempt 3 of 3): API error 529"}},
		// An error event inside a 200 stream is named for what it was.
		{"error event", []string{"hi"},
			anthropictest.Repeat(anthropictest.NewStream().Text("Parti").ErrorEvent("overloaded_error", "Overloaded")),
			exitFailure, "", []string{"agentloop: API error overloaded_error: Overloaded (request req_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.reply)
			r := h.run(strings.NewReader(""), tc.args...)
			r.check(t, tc.code)
			if tc.stdout != "" && r.stdout != tc.stdout {
				t.Errorf("stdout = %q, want %q", r.stdout, tc.stdout)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if strings.Contains(r.stderr, " 200") {
				t.Errorf("stderr reports a status 200 for an error:\n%s", r.stderr)
			}
		})
	}
}

// TestPromptTooLong: a prompt too long for the window, with nothing to
// compact, reports no compaction (none happened), and with --json its
// error is the last line, with no "done" before it.
func TestPromptTooLong(t *testing.T) {
	tooLong := anthropictest.Repeat(anthropictest.HTTPError{Status: 400, Type: "invalid_request_error",
		Message: "prompt is too long: 1000000 tokens > 200000 maximum", RequestID: "req_400"})
	h := newHarness(t, tooLong)
	r := h.run(strings.NewReader(""), "hi")
	r.check(t, exitFailure)
	if want := "agentloop: API error 400 invalid_request_error: prompt is too long: 1000000 tokens > 200000 maximum (request req_400)\n"; r.stderr != want {
		t.Errorf("stderr = %q, want only the error: %q", r.stderr, want)
	}
	h = newHarness(t, tooLong)
	r = h.run(strings.NewReader(""), "--json", "hi")
	r.check(t, exitFailure)
	if diff := cmp.Diff([]string{"turn_start", "error"}, jsonTypes(t, r.stdout)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestInterrupt(t *testing.T) {
	arrived := make(chan struct{})
	h := newHarness(t, anthropictest.ReplyFunc(func(*anthropictest.Request) anthropictest.Reply {
		close(arrived)
		return anthropictest.Replay(nil).Stall()
	}))
	go func() {
		<-arrived
		h.interrupts <- os.Interrupt
	}()
	r := h.run(strings.NewReader(""), "hi")
	r.check(t, exitInterrupted)
}

// TestInterruptSetup checks that Ctrl-C works before the first turn, here
// while the prompt is being read from a stdin that never ends.
func TestInterruptSetup(t *testing.T) {
	h := newHarness(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	h.interrupts <- os.Interrupt
	h.run(pr).check(t, exitInterrupted)
	if n := len(h.srv.Requests()); n != 0 {
		t.Errorf("%d requests sent after an interrupt", n)
	}
}

// TestOutcome checks the exit status of every state a run can end in,
// with the error the agent returns alongside it.
func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		state agent.State
		err   error
		want  int
	}{
		{agent.Finished, nil, exitOK},
		{agent.Refused, nil, exitOK},
		{agent.Truncated, nil, exitOK},
		{agent.IterationLimit, nil, exitLimit},
		{agent.TimeLimit, nil, exitLimit},
		{agent.TokenLimit, nil, exitLimit},
		{agent.BudgetLimit, nil, exitLimit},
		{agent.Blocked, nil, exitFailure},
		{agent.Cancelled, context.Canceled, exitInterrupted},
		{agent.Failed, io.ErrUnexpectedEOF, exitFailure},
		{"a_state_from_the_future", nil, exitFailure},
	} {
		s := &session{o: &options{}, render: newTextRenderer(io.Discard, io.Discard, style{}, false, false, false, nil)}
		if got := exitCode(s.outcome(agent.Result{State: tc.state}, tc.err)); got != tc.want {
			t.Errorf("state %q, error %v: exit status %d, want %d", tc.state, tc.err, got, tc.want)
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{io.EOF, 1},
		{usageError("x"), 2},
		{&exitError{code: 3}, 3},
		{context.Canceled, 130},
		{errInterrupted, 130},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
