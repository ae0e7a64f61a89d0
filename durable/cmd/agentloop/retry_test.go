package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/server/temporaltest"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/durable"
)

// TestRetryAttempt: a model turn that Temporal retries is shown as the
// in-process CLI shows agent.Retry, with the attempt that starts: 2, then
// 3. In --json each is a retry line that says to discard the turn's text.
func TestRetryAttempt(t *testing.T) {
	api := anthropictest.NewServer(
		anthropictest.NewStream().Text("par").ErrorEvent("overloaded_error", "Overloaded"),
		anthropictest.NewStream().Text("part").ErrorEvent("overloaded_error", "Overloaded"),
		anthropictest.NewStream().Text("Whole.").Stop("end_turn"),
	)
	defer api.Close()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	common := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "retry"}

	ctx, cancel := context.WithCancel(context.Background())
	workerDone := make(chan int, 1)
	var workerOut bytes.Buffer
	go func() {
		var stdout bytes.Buffer
		workerDone <- command(ctx, env, &stdout, &workerOut, append([]string{"worker"}, common...)...)
	}()
	defer func() {
		cancel()
		if code := <-workerDone; code != exitOK {
			t.Errorf("worker: exit %d:\n%s", code, workerOut.String())
		}
	}()

	var stdout, stderr bytes.Buffer
	if code := command(context.Background(), env, &stdout, &stderr, append(common, "--json", "hi")...); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	type line struct {
		Type    string `json:"type"`
		Attempt int    `json:"attempt"`
		Discard bool   `json:"discard"`
	}
	var got []line
	for l := range strings.Lines(stdout.String()) {
		var ev line
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		if ev.Type == "retry" {
			got = append(got, ev)
		}
	}
	want := []line{{"retry", 2, true}, {"retry", 3, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retry lines (-want +got):\n%s\nstdout:\n%s", diff, stdout.String())
	}
}

// TestAgentEventRetry: a discard event becomes agent.Retry with its
// attempt, and one a worker recorded before events had an attempt is a
// retry all the same, attempt 2.
func TestAgentEventRetry(t *testing.T) {
	tests := []struct {
		in   durable.Event
		want int
	}{
		{durable.Event{Discard: true, Attempt: 2}, 2},
		{durable.Event{Discard: true, Attempt: 5}, 5},
		{durable.Event{Discard: true}, 2},
	}
	for _, tt := range tests {
		want := agent.Retry{Attempt: tt.want, Error: "the previous attempt failed", Discard: true}
		if diff := cmp.Diff(agent.Event(want), agentEvent(tt.in, nil, "s", nil)); diff != "" {
			t.Errorf("agentEvent(%+v) (-want +got):\n%s", tt.in, diff)
		}
	}
}
