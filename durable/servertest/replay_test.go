package servertest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/tool"
)

var update = flag.Bool("update", false, "record the workflow histories in testdata/histories again")

// A scenario is a run whose workflow history is recorded as a golden file,
// one per workflow run.
type scenario struct {
	name    string
	replies []anthropictest.Reply
	in      Input
	approve *Decision
}

type noteIn struct {
	Text string `json:"text"`
}

func scenarios() []scenario {
	return []scenario{
		{
			name: "tools", // parallel calls, a sequential tool, a repeat, invalid input
			replies: []anthropictest.Reply{
				anthropictest.NewStream().Text("Working.").
					ToolUse("toolu_1", "add", `{"a":1,"b":2}`).
					ToolUse("toolu_2", "note", `{"text":"a"}`).
					ToolUse("toolu_3", "note", `{"text":"b"}`).
					ToolUse("toolu_4", "add", `{"a":`).Stop("tool_use"),
				anthropictest.NewStream().ToolUse("toolu_5", "add", `{"a":1,"b":2}`).ToolUse("toolu_6", "add", `{"a":1, "b":2}`).Stop("tool_use"),
				anthropictest.NewStream().Text("3, noted.").Stop("end_turn"),
			},
			in: Input{Prompt: "add and note", RepeatLimit: 2},
		},
		{
			name: "approval",
			replies: []anthropictest.Reply{
				anthropictest.NewStream().ToolUse("toolu_1", "deploy", `{"env":"prod"}`).Stop("tool_use"),
				anthropictest.NewStream().Text("Deployed.").Stop("end_turn"),
			},
			in:      Input{Prompt: "deploy", Approve: []string{"deploy"}},
			approve: &Decision{CallID: "toolu_1", Allow: true},
		},
		{
			name: "eager-retry", // a call started while the turn streamed, then the turn fails and is tried again
			replies: []anthropictest.Reply{
				anthropictest.NewStream().ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Text("and").Reset(),
				anthropictest.NewStream().ToolUse("toolu_2", "add", `{"a":2,"b":2}`).Stop("tool_use"),
				anthropictest.NewStream().Text("4.").Stop("end_turn"),
			},
			in: Input{Prompt: "add"},
		},
		{
			name: "continue", // continue-as-new after each turn
			replies: []anthropictest.Reply{
				anthropictest.NewStream().ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Stop("tool_use"),
				anthropictest.NewStream().ToolUse("toolu_2", "add", `{"a":3,"b":3}`).Stop("tool_use"),
				anthropictest.NewStream().Text("6.").Stop("end_turn"),
			},
			in: Input{Prompt: "add twice", TurnsPerRun: 1},
		},
	}
}

// record runs the scenarios on a real server and writes each workflow
// run's history to testdata/histories.
func record(t *testing.T) {
	e := newEnv(t)
	add, _ := adder()
	deploy, _ := deployer()
	note := tool.Must(tool.New("note", "notes a line", func(ctx context.Context, in noteIn) (string, error) { return "ok", nil }))
	note.Queue = "note" // alone in its queue
	e.worker(t, "replay", Config{}, add, deploy, note)
	dir := filepath.Join("testdata", "histories")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range scenarios() {
		e.api.Enqueue(s.replies...)
		wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: s.name, TaskQueue: "replay"}, WorkflowName, s.in)
		if err != nil {
			t.Fatal(err)
		}
		first := wr.GetRunID() // Get follows a continue-as-new, and the run ID with it
		if s.approve != nil {
			waitEvent(t, e.c, s.name, waiting())
			if err := Approve(context.Background(), e.c, s.name, *s.approve); err != nil {
				t.Fatal(err)
			}
		}
		if err := wr.Get(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		// Each run of a chain of continue-as-new, from the first.
		var runs []*historypb.History
		for runID := first; runID != ""; {
			h := history(t, e.c, s.name, runID)
			runs = append(runs, h)
			runID = ""
			if a := h.Events[len(h.Events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				runID = a.NewExecutionRunId
			}
		}
		for i, h := range runs {
			b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			name := s.name + ".json"
			if len(runs) > 1 {
				name = fmt.Sprintf("%s-%d.json", s.name, i+1)
			}
			if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func history(t *testing.T, c client.Client, id, runID string) *historypb.History {
	t.Helper()
	h := &historypb.History{}
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return h
}

// TestReplay replays the recorded histories with today's workflow code, so
// that a change that breaks determinism, and with it every run in flight,
// fails here. After a deliberate change, record them again with -update
// (and version the change with workflow.GetVersion).
func TestReplay(t *testing.T) {
	if *update {
		record(t)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d recorded histories, want 4 or more: run go test -run TestReplay -update", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err := replay(t, f, Workflow); err != nil {
				t.Error(err)
			}
		})
	}
}

// replay replays the recorded history in file f with wf as the workflow;
// the error is the replay's.
func replay(t *testing.T, f string, wf func(workflow.Context, Input) (Result, error)) error {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	h, err := client.HistoryFromJSON(bytes.NewReader(b), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: DataConverter(nil)})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: WorkflowName})
	return r.ReplayWorkflowHistory(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), h)
}

// TestReplayAcrossChange: a change that issues a new command replays the
// recorded runs only behind a workflow.GetVersion gate, which is how a
// change to the loop (agent, memory, llm: the workflow runs their code)
// must ship while runs are in flight. Here the change is a timer before
// the run; ungated, replay fails on every recorded history.
func TestReplayAcrossChange(t *testing.T) {
	changed := func(gated bool) func(workflow.Context, Input) (Result, error) {
		return func(ctx workflow.Context, in Input) (Result, error) {
			if !gated || workflow.GetVersion(ctx, "test-timer", workflow.DefaultVersion, 1) == 1 {
				if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
					return Result{}, err
				}
			}
			return Workflow(ctx, in)
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories (%v)", err)
	}
	for _, gated := range []bool{true, false} {
		for _, f := range files {
			err := replay(t, f, changed(gated))
			if gated && err != nil {
				t.Errorf("%s: the gated change does not replay: %v", f, err)
			}
			if !gated && err == nil {
				t.Errorf("%s: the ungated change replays; the test would not catch a breaking one", f)
			}
		}
	}
}
