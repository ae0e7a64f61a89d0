package servertest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/typed"
)

// TestTypedOutput: Input.Schema gives a durable run agent's typed result:
// an invalid answer is sent back and the valid one is Result.Output; when
// the re-asks run out, the run fails with the *typed.OutputError in the
// error's details, the conversation as it was.
func TestTypedOutput(t *testing.T) {
	type point struct {
		X int `json:"x"`
		Y int `json:"y"`
	}
	schema, err := jsonschema.For[point](nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.worker(t, "typed", Config{})
	bad := anthropictest.NewStream().Text(`{"x":1,"y":"2"}`).Stop("end_turn")

	e.api.Enqueue(bad, anthropictest.NewStream().Text(`{"x":1,"y":2}`).Stop("end_turn"))
	res := e.run(t, "typed-ok", "typed", Input{Prompt: "a point", Schema: schema})
	if res.State != agent.Finished || string(res.Output) != `{"x":1,"y":2}` {
		t.Errorf("result = %+v, want finished with the valid answer", res.Result)
	}

	history := []llm.Message{
		{Role: llm.User, Content: []llm.Block{llm.Text{Text: "hi"}}},
		{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "hello"}}},
	}
	e.api.Enqueue(bad, bad)
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "typed-exhausted", TaskQueue: "typed"},
		WorkflowName, Input{Prompt: "a point", History: history, Schema: schema, Reasks: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = wr.Get(context.Background(), nil)
	ae, ok := errors.AsType[*temporal.ApplicationError](err)
	if !ok || ae.Type() != "OutputError" {
		t.Fatalf("err = %v, want an OutputError application error", err)
	}
	var oe typed.OutputError
	if err := ae.Details(&oe); err != nil {
		t.Fatal(err)
	}
	want := typed.OutputError{State: agent.Failed, Answer: `{"x":1,"y":"2"}`, Violations: []string{`field "y": got string, want integer`}}
	if diff := cmp.Diff(want, oe); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	conv, err := Conversation(context.Background(), e.c, DataConverter(e.store), "typed-exhausted")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(history, conv); diff != "" {
		t.Errorf("a failed typed run changed the conversation (-before +after):\n%s", diff)
	}
	e.checkRequests(t)
}
