package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

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
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	ts, common := startWorker(t, env, "retry")

	var stdout, stderr bytes.Buffer
	if code := command(context.Background(), env, &stdout, &stderr, append(common, "--json", "--session", "retry", "hi")...); code != exitOK {
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
	// Two attempts failed, so the turn ran a third time. On a loaded
	// machine an attempt may also time out, and the turn run more often,
	// as its history says: then each retry that streamed shows its own
	// attempt, the last the turn's last.
	if last := lastAttempt(t, ts.GetDefaultClient(), "retry", "model/1"); last > 3 {
		t.Logf("the turn ran %d times", last)
		for i, l := range got {
			if !l.Discard || l.Attempt < 2 || i > 0 && l.Attempt <= got[i-1].Attempt {
				t.Errorf("retry lines %+v do not count up from 2, each discarding:\n%s", got, stdout.String())
				break
			}
		}
		if len(got) < 2 || got[len(got)-1].Attempt != last {
			t.Errorf("retry lines %+v, want at least two, the last of attempt %d", got, last)
		}
	} else if diff := cmp.Diff([]line{{"retry", 2, true}, {"retry", 3, true}}, got); diff != "" {
		t.Errorf("retry lines (-want +got):\n%s\nstdout:\n%s", diff, stdout.String())
	}
}

// lastAttempt returns the attempt of the activity activityID of workflow
// id that ran last: more than 1 when Temporal retried it.
func lastAttempt(t *testing.T, c client.Client, id, activityID string) int {
	t.Helper()
	var scheduled int64
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.ActivityId == activityID {
			scheduled = ev.EventId
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.ScheduledEventId == scheduled {
			return int(a.Attempt)
		}
	}
	t.Fatalf("workflow %s ran no activity %s", id, activityID)
	return 0
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
