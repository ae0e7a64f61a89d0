package durable_test

import (
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
)

// A worker registers the workflow and its activities; a caller starts a run
// and reads its result. Here both are the Temporal SDK's test environment
// and the model is a fake on loopback; in production the worker and the
// caller are processes that share a Temporal server (see the servertest
// module's tests), and the caller starts the run with
// client.Client.ExecuteWorkflow(ctx, options, durable.WorkflowName, input).
func Example() {
	api := anthropictest.NewServer(anthropictest.NewStream().Text("Hello from a workflow.").Stop("end_turn"))
	defer api.Close()

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler))) // its log is on stdout
	env := suite.NewTestWorkflowEnvironment()
	if err := durable.Register(env, durable.Config{Model: llm.New(llm.Config{BaseURL: api.URL, MaxAttempts: 1})}); err != nil {
		panic(err)
	}
	env.ExecuteWorkflow(durable.WorkflowName, durable.Input{Prompt: "Say hello."})
	var res durable.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		panic(err)
	}
	fmt.Println(res.State, res.Text)
	// Output: finished Hello from a workflow.
}
