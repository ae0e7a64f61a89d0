package durable

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
)

// TestDiscardAttempt: each retry of a model turn that failed mid-stream
// tells the caller to discard the turn's text, and which attempt starts:
// 2, then 3, as agent.Retry counts them.
func TestDiscardAttempt(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().Text("par").ErrorEvent("overloaded_error", "Overloaded"),
		anthropictest.NewStream().Text("part").ErrorEvent("overloaded_error", "Overloaded"),
		anthropictest.NewStream().Text("Whole.").Stop("end_turn"),
	)
	e.worker(t, "attempts", Config{})
	evs, res := e.streamRun(t, "attempts", "attempts", Input{Prompt: "hi"})
	if res.State != agent.Finished || res.Text != "Whole." {
		t.Errorf("result = %+v, want finished %q", res.Result, "Whole.")
	}
	var got []Event
	for _, ev := range evs {
		if ev.Discard {
			got = append(got, Event{Discard: true, Attempt: ev.Attempt})
		}
	}
	want := []Event{{Discard: true, Attempt: 2}, {Discard: true, Attempt: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("discard events (-want +got):\n%s", diff)
	}
	e.checkRequests(t)
}
