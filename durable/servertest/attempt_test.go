package servertest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
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
	// Two attempts failed, so the turn ran a third time. On a loaded
	// machine an attempt may also time out, and the turn run more often,
	// as its history says: then each retry that streamed says its own
	// attempt, the last the turn's last.
	if last := int(attempts(t, e.c, "attempts")["turn/1.0"]); last > 3 {
		t.Logf("the turn ran %d times", last)
		for i, ev := range got {
			if ev.Attempt < 2 || i > 0 && ev.Attempt <= got[i-1].Attempt {
				t.Errorf("discard events %+v do not count up from 2", got)
				break
			}
		}
		if len(got) < 2 || got[len(got)-1].Attempt != last {
			t.Errorf("discard events %+v, want at least two, the last of attempt %d", got, last)
		}
	} else if diff := cmp.Diff([]Event{{Discard: true, Attempt: 2}, {Discard: true, Attempt: 3}}, got); diff != "" {
		t.Errorf("discard events (-want +got):\n%s", diff)
	}
	e.checkRequests(t)
}
