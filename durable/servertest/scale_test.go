package servertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
)

// conversational answers any number of runs at once: a prompt "run N"
// gets a call of add with N, and the call's result gets "done N".
func conversational() anthropictest.Reply {
	return anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
		msgs := r.Messages()
		last := msgs[len(msgs)-1]
		if res := r.ToolResults(); len(res) > 0 && len(last.Content) > 0 && last.Content[0].Type == "tool_result" {
			return anthropictest.NewStream().Text("done " + res[len(res)-1].Content[0].Text).Stop("end_turn")
		}
		var n int
		fmt.Sscanf(last.Text, "run %d", &n)
		in, _ := json.Marshal(addIn{A: n, B: 0})
		return anthropictest.NewStream().ToolUse(fmt.Sprintf("toolu_%d", n), "add", string(in)).Stop("tool_use")
	}))
}

// TestTwoWorkersManyRuns: two workers on one task queue serve 50 runs at
// once; every run completes with its own answer.
func TestTwoWorkersManyRuns(t *testing.T) {
	const runs = 50
	e := newEnv(t, conversational())
	add1, calls1 := adder()
	add2, calls2 := adder()
	e.worker(t, "many", Config{}, add1)
	e.worker(t, "many", Config{}, add2)

	var wg sync.WaitGroup
	errs := make([]error, runs)
	results := make([]Result, runs)
	for i := range runs {
		wg.Go(func() {
			var wr client.WorkflowRun
			err := patiently(func() (err error) {
				// Again after a deadline: the run the first call started, if it did.
				wr, err = e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("many-%d", i), TaskQueue: "many"},
					WorkflowName, Input{Prompt: fmt.Sprintf("run %d", i)})
				return err
			})
			if err == nil {
				err = patiently(func() error { return wr.Get(context.Background(), &results[i]) })
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range runs {
		if errs[i] != nil {
			t.Errorf("run %d: %v", i, errs[i])
			continue
		}
		if want := fmt.Sprintf("done %d", i); results[i].State != agent.Finished || results[i].Text != want {
			t.Errorf("run %d: %s %q, want finished %q", i, results[i].State, results[i].Text, want)
		}
	}
	// Each run makes two model requests and one call, unless Temporal
	// retried an activity of it that timed out on a loaded machine: the
	// retry asks again, and a retried turn starts its call again.
	retried := 0
	for i := range runs {
		for id, a := range attempts(t, e.c, fmt.Sprintf("many-%d", i)) {
			if a > 1 {
				t.Logf("run %d: %s ran %d times", i, id, a)
				retried++
			}
		}
	}
	calls, requests := int(calls1.Load()+calls2.Load()), len(e.api.Requests())
	if calls < runs || requests < 2*runs || retried == 0 && (calls != runs || requests != 2*runs) {
		t.Errorf("%d tool calls and %d model requests with %d activities retried, want %d and %d", calls, requests, retried, runs, 2*runs)
	}
	t.Logf("tool calls per worker: %d and %d", calls1.Load(), calls2.Load())
	e.checkRequests(t)
}

// patiently calls f again, up to five times in all, while it fails by the
// client's own deadline for a call to the server: 10 s to start a run, 65 s
// for each poll of its result. Fifty runs at once on a loaded machine,
// under the race detector, can take longer, and the runs go on on the
// server all the same; a run that never ends still fails the test.
func patiently(f func() error) error {
	var err error
	for range 5 {
		if err = f(); !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, new(*serviceerror.DeadlineExceeded)) {
			return err
		}
	}
	return err
}
