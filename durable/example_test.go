package durable_test

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
)

// A worker serves durable runs; a caller starts one and waits for its
// result. Here the Temporal server runs in process and the model is a fake
// on loopback; in production both are real, and the worker and the caller
// are different processes.
func Example() {
	api := anthropictest.NewServer(anthropictest.NewStream().Text("Hello from a workflow.").Stop("end_turn"))
	defer api.Close()
	ts := temporaltest.NewServer(temporaltest.WithBaseClientOptions(client.Options{DataConverter: durable.DataConverter(nil)}))
	defer ts.Stop()

	w := ts.NewWorker("agents", func(r worker.Registry) {
		if err := durable.Register(r, durable.Config{Model: llm.New(llm.Config{BaseURL: api.URL})}); err != nil {
			panic(err)
		}
	})
	defer w.Stop()

	ctx := context.Background()
	run, err := ts.GetDefaultClient().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "hello", TaskQueue: "agents"},
		durable.WorkflowName, durable.Input{Prompt: "Say hello."})
	if err != nil {
		panic(err)
	}
	var res durable.Result
	if err := run.Get(ctx, &res); err != nil {
		panic(err)
	}
	fmt.Println(res.State, res.Text)
	// Output: finished Hello from a workflow.
}
