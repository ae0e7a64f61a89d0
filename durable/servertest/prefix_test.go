package servertest

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/tool"
)

// turnInputs returns the encoded size of every model turn's input in the
// workflow runs of id, from the first run on, across continue-as-new, and
// the inputs of the runs it continued as.
func turnInputs(t *testing.T, c client.Client, dc converter.DataConverter, id, runID string) ([]int, []Input) {
	t.Helper()
	var sizes []int
	var next []Input
	for runID != "" {
		it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		runID = ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.ActivityType.GetName() == "agentloop.ModelTurn" {
				sizes = append(sizes, proto.Size(a.Input))
			}
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				runID = a.NewExecutionRunId
				var in Input
				if err := dc.FromPayloads(a.Input, &in); err != nil {
					t.Fatal(err)
				}
				next = append(next, in)
			}
		}
	}
	return sizes, next
}

// TestTurnInputsStaySmall: each model turn's input holds what is new since
// the turn before, not the conversation, which grows by an incompressible
// tool result a turn, within a workflow run and across continue-as-new;
// yet every request the model gets holds the whole conversation. A
// continue-as-new carries the conversation once, and no events.
func TestTurnInputsStaySmall(t *testing.T) {
	const turns, size = 6, 12 << 10 // 16 KiB of base64
	var replies []anthropictest.Reply
	for i := range turns {
		replies = append(replies, anthropictest.NewStream().ToolUse(fmt.Sprintf("toolu_%d", i), "blob", fmt.Sprintf(`{"n":%d}`, i)).Stop("tool_use"))
	}
	e := newEnv(t, append(replies, anthropictest.NewStream().Text("Done.").Stop("end_turn"))...)
	type nth struct {
		N int `json:"n"`
	}
	blob := tool.Must(tool.New("blob", "returns data", func(ctx context.Context, in nth) (string, error) {
		// Data unlike the other calls', which zlib would compress away.
		raw := make([]byte, size)
		rand.NewChaCha8([32]byte{byte(in.N)}).Read(raw)
		return base64.StdEncoding.EncodeToString(raw), nil
	}))
	e.worker(t, "small", Config{}, blob)
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "small", TaskQueue: "small"},
		WorkflowName, Input{Prompt: "fetch", TurnsPerRun: 3})
	if err != nil {
		t.Fatal(err)
	}
	first := wr.GetRunID() // Get follows the run to its last
	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Runs != 3 || res.Text != "Done." {
		t.Fatalf("result: %d runs, %q; want 3 runs, %q", res.Runs, res.Text, "Done.")
	}
	sizes, next := turnInputs(t, e.c, DataConverter(e.store), "small", first)
	for i, in := range next {
		// No one watched: a run's events stay in it.
		if in.Resume == nil {
			t.Fatalf("continue-as-new %d carries no Resume", i+1)
		}
		if n := len(in.Resume.Events); n > 0 || in.Resume.Before != nil {
			t.Errorf("continue-as-new %d carries %d events and Before %v, want none: the history holds it", i+1, n, in.Resume.Before)
		}
	}
	if len(sizes) != turns+1 {
		t.Fatalf("%d model turns in the history, want %d", len(sizes), turns+1)
	}
	for i, s := range sizes {
		// A turn's input holds at most one result; the last request
		// holds them all.
		if s > 3*size {
			t.Errorf("turn %d's input is %d bytes, over %d: %v", i+1, s, 3*size, sizes)
		}
	}
	reqs := e.api.Requests()
	for i := 1; i < len(reqs); i++ {
		prev, got := reqs[i-1].Messages(), reqs[i].Messages()
		if len(got) != 2*i+1 {
			t.Fatalf("request %d has %d messages, want %d", i+1, len(got), 2*i+1)
		}
		// The last message of each carries a cache breakpoint.
		if diff := cmp.Diff(prev, got[:len(prev)], cmpopts.IgnoreFields(anthropictest.Block{}, "Raw")); diff != "" {
			t.Errorf("request %d does not begin with request %d (-%d +%d):\n%s", i+1, i, i, i+1, diff)
		}
	}
	e.checkRequests(t)
}
