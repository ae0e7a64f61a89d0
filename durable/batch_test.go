package durable

import (
	"context"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// batchReleased runs Workflow's loop and returns how it ended and whether
// the context of its latest batch, the calls of its last model turn, was
// released by then. A batch's context is a child of the run's: one left
// unreleased stays among the run's children until the run ends.
func batchReleased(ctx workflow.Context, in Input) (released, error) {
	r, err := start(ctx, in)
	if err != nil {
		return released{}, err
	}
	state, err := r.loop()
	return released{Released: r.batch.ctx.Err() != nil, State: state}, err
}

// released is what batchReleased returns.
type released struct {
	Released bool
	State    agent.State
}

// TestBatchReleased: the context of a model turn's batch is released when
// the turn is over, whichever way it ended well: with calls that ran, with
// an answer, cut off, or refused.
func TestBatchReleased(t *testing.T) {
	tests := []struct {
		name  string
		reply anthropictest.Reply
		in    Input
		want  agent.State
	}{
		{"calls", anthropictest.NewStream().ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Stop("tool_use"),
			Input{MaxIterations: 1}, agent.IterationLimit},
		{"answer", anthropictest.NewStream().Text("Hi.").Stop("end_turn"), Input{}, agent.Finished},
		{"cut-off", anthropictest.NewStream().Text("Hi, th").Stop("max_tokens"), Input{}, agent.Truncated},
		{"refused", anthropictest.NewStream().Text("I").Stop("refusal"), Input{}, agent.Refused},
	}
	e := newEnv(t)
	add, _ := adder()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(add); err != nil {
		t.Fatal(err)
	}
	var regErr error
	e.ts.NewWorkerWithOptions("batch", func(r worker.Registry) {
		regErr = Register(r, Config{Model: llm.New(llm.Config{BaseURL: e.api.URL}), Registry: reg})
		r.RegisterWorkflowWithOptions(batchReleased, workflow.RegisterOptions{Name: "test.batchReleased"})
	}, e.opts)
	if regErr != nil {
		t.Fatal(regErr)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.api.Enqueue(tt.reply)
			tt.in.Prompt = "hi"
			wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "batch-" + tt.name, TaskQueue: "batch"},
				"test.batchReleased", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			var got released
			if err := wr.Get(context.Background(), &got); err != nil {
				t.Fatal(err)
			}
			if got.State != tt.want {
				t.Errorf("the run ended %s, want %s", got.State, tt.want)
			}
			if !got.Released {
				t.Error("the last turn's batch context is still live after the turn")
			}
		})
	}
	e.checkRequests(t)
}
