package durable

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// TestCallToolHeartbeats: a long tool call heartbeats while it runs, and
// the heartbeat goroutine ends with the activity. It is the first test of
// the package, in its first file, so that no in-process Temporal server of
// another test has goroutines still winding down when goleak looks.
func TestCallToolHeartbeats(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	beat := make(chan struct{})
	var once sync.Once
	type none struct{}
	slow := tool.Must(tool.New("slow", "runs until it has heartbeated", func(ctx context.Context, _ none) (string, error) {
		select {
		case <-beat:
			return "heartbeated", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(slow); err != nil {
		t.Fatal(err)
	}
	api := anthropictest.NewServer()
	defer api.Close()

	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// On a loaded machine the deadlock detector's 1 s can pass while the
	// workflow merely waits for a core.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	if err := Register(env, Config{Model: llm.New(llm.Config{BaseURL: api.URL}), Registry: reg}); err != nil {
		t.Fatal(err)
	}
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { once.Do(func() { close(beat) }) })
	env.ExecuteWorkflow(func(ctx workflow.Context) (llm.ToolResult, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 300 * time.Millisecond})
		var res llm.ToolResult
		err := workflow.ExecuteActivity(ctx, activityCallTool, llm.ToolUse{ID: "toolu_1", Name: "slow", Input: []byte(`{}`)}, false).Get(ctx, &res)
		return res, err
	})
	var res llm.ToolResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if got := llm.TextOf(res.Content); got != "heartbeated" || res.IsError {
		t.Errorf("result = %q (is_error %v), want heartbeated", got, res.IsError)
	}
}
