package typed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/typed"
)

// A run for a Go value. The fake API plays the model: its first answer
// gives the temperature as a string, so the agent sends it back naming the
// violation, and the second answer is valid.
func ExampleRun() {
	srv := anthropictest.NewServer(
		anthropictest.NewStream().Text(`{"city": "Oslo", "celsius": "4"}`).Stop("end_turn"),
		anthropictest.NewStream().Text(`{"city": "Oslo", "celsius": 4}`).Stop("end_turn"),
	)
	defer srv.Close()

	type weather struct {
		City    string `json:"city"`
		Celsius int    `json:"celsius" jsonschema:"the temperature in °C"`
	}
	cfg := agent.Config{Model: llm.New(llm.Config{BaseURL: srv.URL})}
	w, res, err := typed.Run[weather](context.Background(), cfg, "How warm is it in Oslo?")
	if oe, ok := errors.AsType[*typed.OutputError](err); ok {
		fmt.Println("no valid answer:", oe.Violations)
		return
	}
	fmt.Printf("%+v after %d model calls, err %v\n", w, res.Iterations, err)
	fmt.Println(srv.Requests()[1].Messages()[2].Text)
	// Output:
	// {City:Oslo Celsius:4} after 2 model calls, err <nil>
	// Your answer is not valid against the required JSON schema:
	// - field "celsius": got string, want integer
	// Answer again with only the corrected JSON value, no other text.
}

// An agent whose every run must answer with JSON valid against a schema
// of one's own, here one no Go type gives: the temperature's bounds. The
// fake API plays the model, whose first answer is out of bounds.
func ExampleConfigure() {
	srv := anthropictest.NewServer(
		anthropictest.NewStream().Text(`{"celsius": 400}`).Stop("end_turn"),
		anthropictest.NewStream().Text(`{"celsius": 4}`).Stop("end_turn"),
	)
	defer srv.Close()

	var schema jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type": "object", "required": ["celsius"],
		"properties": {"celsius": {"type": "number", "minimum": -90, "maximum": 60}}}`), &schema); err != nil {
		panic(err)
	}
	cfg, err := typed.Configure(agent.Config{Model: llm.New(llm.Config{BaseURL: srv.URL})}, &schema, &typed.Options{Reasks: 1})
	if err != nil {
		panic(err)
	}
	a, err := agent.New(cfg)
	if err != nil {
		panic(err)
	}
	res, err := a.Run(context.Background(), "How warm is it in Oslo?")
	fmt.Printf("%s after %d model calls, err %v\n", typed.Output(res), res.Iterations, err)
	// Output:
	// {"celsius": 4} after 2 model calls, err <nil>
}
