package servertest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
)

// TestModelErrors: a 4xx fails the run at once, without a retry, leaving
// the conversation as it was; a transient error after output is retried by
// Temporal's retry policy, and the run completes.
func TestModelErrors(t *testing.T) {
	e := newEnv(t)
	e.worker(t, "errors", Config{Model: llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1})})
	history := []llm.Message{
		{Role: llm.User, Content: []llm.Block{llm.Text{Text: "hi"}}},
		{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "hello"}}},
	}

	t.Run("4xx", func(t *testing.T) {
		before := len(e.api.Requests())
		e.api.Enqueue(anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "bad request"})
		wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "4xx", TaskQueue: "errors"},
			WorkflowName, Input{Prompt: "again", History: history})
		if err != nil {
			t.Fatal(err)
		}
		err = wr.Get(context.Background(), nil)
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "bad request") {
			t.Fatalf("err = %v, want the run failed with the API's message", err)
		}
		if n := len(e.api.Requests()) - before; n != 1 {
			t.Errorf("%d requests, want 1: a 4xx is not retried", n)
		}
	})
	t.Run("transient after output", func(t *testing.T) {
		before := len(e.api.Requests())
		e.api.Enqueue(
			anthropictest.NewStream().Text("par").ErrorEvent("overloaded_error", "Overloaded"),
			anthropictest.NewStream().Text("Hello again.").Stop("end_turn"),
		)
		res := e.run(t, "transient", "errors", Input{Prompt: "again", History: history})
		if res.State != agent.Finished || res.Text != "Hello again." {
			t.Errorf("result = %+v, want finished %q", res.Result, "Hello again.")
		}
		if n := len(e.api.Requests()) - before; n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
		if len(res.History) != 4 {
			t.Errorf("history has %d messages, want 4", len(res.History))
		}
	})
	e.checkRequests(t)
}
