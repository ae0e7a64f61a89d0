// Package typed runs an agent for a Go value instead of prose: the final
// answer is JSON valid against a schema, such as that of a Go type,
// decoded into it.
//
// [Configure] sets an agent.Config up for it on the agent's own seams: a
// Model middleware sends the schema as output_config.format on models that
// take structured outputs (others are asked in the system prompt), a
// BeforeStop hook validates the answer and sends an invalid one back with
// each violation by its path, and the run's Observer ends a run without a
// valid answer with an [*OutputError] holding the last raw answer and its
// violations, the history left as it was. [Output] returns the valid
// answer's JSON; [Run] does it all for a Go type T.
package typed

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
)

// An OutputError says a run that [Configure] set up ended without an
// answer valid against its schema: the re-asks ran out (agent.Failed), the
// model refused (agent.Refused), max_tokens cut the answer
// (agent.Truncated), or a limit ended the run (agent.IterationLimit,
// agent.TokenLimit). Like any failed run, it leaves the history as it was.
type OutputError struct {
	State      agent.State // how the run ended
	Answer     string      // the model's last answer, raw
	Violations []string    // how Answer breaks the schema, each naming its path; none if it was not checked
}

func (e *OutputError) Error() string {
	if len(e.Violations) == 0 {
		return fmt.Sprintf("typed: no answer valid against the schema: the run ended %s", e.State)
	}
	return fmt.Sprintf("typed: the answer is not valid against the schema after the re-asks: %s", strings.Join(e.Violations, "; "))
}

// Run runs an agent of cfg on input and returns its answer as a T, with
// the run's Result: the answer must be valid against jsonschema.For[T]'s
// schema, with [Configure]'s default options. Pass cfg.History to keep the
// conversation for later runs. A run that ends without a valid answer
// returns an [*OutputError], unless it failed or was cancelled first (the
// Result's error).
func Run[T any](ctx context.Context, cfg agent.Config, input string) (T, agent.Result, error) {
	var out T
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return out, agent.Result{State: agent.Failed}, fmt.Errorf("typed: generating the schema of %T: %w", out, err)
	}
	if cfg, err = Configure(cfg, s, nil); err != nil {
		return out, agent.Result{State: agent.Failed}, err
	}
	a, err := agent.New(cfg)
	if err != nil {
		return out, agent.Result{State: agent.Failed}, err
	}
	res, err := a.Run(ctx, input)
	answer := Output(res)
	switch {
	case err != nil:
		return out, res, err
	case answer == nil: // a run paused, or out of time
		return out, res, &OutputError{State: res.State, Answer: res.Text}
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		return out, res, fmt.Errorf("typed: the answer, valid against the schema, does not decode into %T: %w", out, err)
	}
	return out, res, nil
}
