package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.temporal.io/server/temporaltest"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestWorkerAndPrompt runs a worker and two prompts of one session against
// a real Temporal server and the fake API: the answer streams to stdout,
// the calculator runs on the worker, a failed prompt exits 1 and changes
// nothing, and the next prompt continues the conversation.
func TestWorkerAndPrompt(t *testing.T) {
	api := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"expression":"6*7"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It is ", "42.").Stop("end_turn"),
		anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "no"},
		anthropictest.NewStream().Text("Still 42.").Stop("end_turn"),
	)
	defer api.Close()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL}
	getenv := func(k string) string { return env[k] }
	common := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "cli"}

	ctx, cancel := context.WithCancel(context.Background())
	workerDone := make(chan error, 1)
	go func() {
		var stderr bytes.Buffer
		workerDone <- run(ctx, append(append([]string{"worker"}, common...), "--tools", "calculator"), getenv, &stderr, &stderr)
	}()
	defer func() {
		cancel()
		if err := <-workerDone; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()

	// The failed prompt changes nothing: the third continues the first.
	for _, tt := range []struct {
		prompt, want string
		code         int
	}{{"what is 6*7?", "It is 42.", exitOK}, {"fail", "", exitFailure}, {"and now?", "Still 42.", exitOK}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append(common, "--session", "s1", tt.prompt), getenv, &stdout, &stderr)
		if code := exitCode(err); code != tt.code {
			t.Fatalf("%q: exit %d (%v), want %d; stderr:\n%s", tt.prompt, code, err, tt.code, stderr.String())
		}
		if got := strings.TrimSpace(stdout.String()); got != tt.want {
			t.Errorf("%q: stdout %q, want %q", tt.prompt, got, tt.want)
		}
	}
	reqs := api.Requests()
	if n := len(reqs[3].Messages()); n != 5 {
		t.Errorf("the third prompt sent %d messages, want 5: the session's conversation and the prompt", n)
	}
	for _, r := range reqs {
		if err := anthropictest.CheckRequest(r.Body); err != nil {
			t.Errorf("request %d: %v", r.N, err)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"hi"}, {"--temporal", "localhost:1"}, {"worker"}, {"worker", "--temporal", "x:1", "--tools", "nope"},
		{"approve", "--temporal", "x:1", "toolu_1"}, {"approve", "--temporal", "x:1", "--session", "s"}} {
		var out bytes.Buffer
		if code := exitCode(run(context.Background(), args, func(string) string { return "" }, &out, &out)); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}
