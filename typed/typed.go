// Package typed runs an agent for a Go value instead of prose: the final
// answer is JSON valid against the schema of a Go type, decoded into it.
//
// [Run] generates the schema from T with the generator tools use
// (jsonschema.For), and package agent does the rest (see
// agent.Config.Schema): on models that take structured outputs the API
// constrains the answer to it; on all, the answer is validated, an invalid
// one is sent back with each violation by its path, and a run that ends
// without a valid one fails with an [*agent.OutputError] holding the last
// raw answer and its violations, the history left as it was.
package typed

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
)

// Run runs an agent of cfg on input and returns its answer as a T, with
// the run's Result. cfg.Schema, when nil, is jsonschema.For[T]'s; set it to
// refine that schema (an enum, a minimum), which must still describe T.
// Pass cfg.History to keep the conversation for later runs. A run that
// ends without a valid answer returns an [*agent.OutputError], unless it
// failed or was cancelled first (the Result's error).
func Run[T any](ctx context.Context, cfg agent.Config, input string) (T, agent.Result, error) {
	var out T
	if cfg.Schema == nil {
		s, err := jsonschema.For[T](nil)
		if err != nil {
			return out, agent.Result{State: agent.Failed}, fmt.Errorf("typed: generating the schema of %T: %w", out, err)
		}
		cfg.Schema = s
	}
	a, err := agent.New(cfg)
	if err != nil {
		return out, agent.Result{State: agent.Failed}, err
	}
	res, err := a.Run(ctx, input)
	switch {
	case err != nil:
		return out, res, err
	case res.Output == nil: // a run paused, or out of time
		return out, res, &agent.OutputError{State: res.State, Answer: res.Text}
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		return out, res, fmt.Errorf("typed: the answer, valid against the schema, does not decode into %T: %w", out, err)
	}
	return out, res, nil
}
