package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

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
		{"unknown flag", []string{"--bogus", "hi"}, nil, "", []string{"bogus", "--help"}},
		{"bad number", []string{"--max-tokens", "lots", "hi"}, nil, "", []string{"max-tokens"}},
		{"unknown tool", []string{"--tools", "calculator,abacus", "hi"}, nil, "", []string{`"abacus"`, "calculator"}},
		{"no prompt", nil, nil, " \n", []string{"no prompt"}},
		{"zero iterations", []string{"--max-iterations", "0", "hi"}, nil, "", []string{"--max-iterations"}},
		{"thinking above max tokens", []string{"--thinking", "9000", "--max-tokens", "4096", "hi"}, nil, "", []string{"BudgetTokens"}},
		{"demo with a prompt", []string{"demo", "please"}, nil, "", []string{"demo takes no prompt"}},
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
			anthropictest.HTTPError(400, "invalid_request_error", "max_tokens: too large").RequestID("req_0123abc"),
			exitFailure, "", []string{"max_tokens: too large", "req_0123abc", "400", "invalid_request_error"}},
		{"overloaded after retries", []string{"hi"},
			anthropictest.Repeat(anthropictest.HTTPError(529, "overloaded_error", "Overloaded").RequestID("req_529").RetryAfterMs(1)),
			exitFailure, "", []string{"Overloaded", "req_529"}},
		{"refusal", []string{"hi"},
			anthropictest.NewStream().Text("I can't").Stop("refusal"),
			exitOK, "", []string{"declined"}},
		{"cut off", []string{"--max-tokens", "100", "hi"},
			anthropictest.NewStream().Text("A long ans").Stop("max_tokens"),
			exitOK, "A long ans\n", []string{"cut off at --max-tokens 100"}},
		{"iteration limit", []string{"--tools", "calculator", "--max-iterations", "2", "hi"},
			loop, exitIterations, "", []string{"iteration limit"}},
		{"retried turn", []string{"hi"},
			anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
				if r.N == 1 {
					return anthropictest.NewStream().Text("Parti").ErrorEvent("overloaded_error", "Overloaded")
				}
				return text("Whole.")
			})),
			exitOK, "Parti\nWhole.\n", []string{"retrying, attempt 2", "discarded the partial output"}},
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
		})
	}
}

func TestInterrupt(t *testing.T) {
	arrived := make(chan struct{})
	h := newHarness(t, anthropictest.ReplyFunc(func(*anthropictest.Request) anthropictest.Reply {
		close(arrived)
		return anthropictest.Hang()
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
