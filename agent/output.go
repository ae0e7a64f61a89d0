package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// An OutputError says a run with [Config].Schema ended without an answer
// valid against it: the re-asks ran out ([Failed]), the model refused
// ([Refused]), max_tokens cut the answer ([Truncated]), or a limit ended
// the run ([IterationLimit], [TokenLimit]). Like any failed run, it leaves
// the history as it was.
type OutputError struct {
	State      State    // how the run ended
	Answer     string   // the model's last answer, raw
	Violations []string // how Answer breaks the schema, each naming its path; none if it was not checked
}

func (e *OutputError) Error() string {
	if len(e.Violations) == 0 {
		return fmt.Sprintf("agent: no answer valid against Config.Schema: the run ended %s", e.State)
	}
	return fmt.Sprintf("agent: the answer is not valid against Config.Schema after the re-asks: %s", strings.Join(e.Violations, "; "))
}

// reask is the user turn that sends an invalid answer back.
const reask = "Your answer is not valid against the required JSON schema:\n- %s\n" +
	"Answer again with only the corrected JSON value, no other text."

// output holds what a run with a schema needs, prepared once by New.
type output struct {
	schema *jsonschema.Resolved
	format json.RawMessage // output_config.format's schema, on models that take one
}

// newOutput prepares s for model, and where output_config.format cannot
// carry it (a model without structured outputs, a schema with a map) asks
// for the JSON in system, which it returns.
func newOutput(s *jsonschema.Schema, model, system string) (*output, string, error) {
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, "", fmt.Errorf("agent: Config.Schema: %w", err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, "", fmt.Errorf("agent: Config.Schema: %w", err)
	}
	o := &output{schema: rs}
	if info, _ := llm.LookupModel(model); info.StructuredOutputs {
		if o.format, err = apirules.OutputSchema(raw); err == nil { // else a map: asked in words
			return o, system, nil
		}
	}
	ask := "Your final answer must be only a JSON value valid against this JSON schema, with no other text:\n" + string(raw)
	return o, strings.TrimSpace(system + "\n\n" + ask), nil
}

// answer checks a typed run's end: a Finished run's answer is valid, or
// is sent back with its violations (go on), or, the re-asks spent, fails;
// a run that ended otherwise without one fails, unless it was cut short.
func (r *run) answer(state State) (next bool, err error) {
	switch state {
	case Finished:
	case Refused, Truncated, IterationLimit, TokenLimit:
		return false, &OutputError{State: state, Answer: r.text}
	default:
		return false, nil
	}
	text := unfence(r.text)
	vs := tool.Violations(r.out.schema, []byte(text))
	if len(vs) == 0 {
		r.output = json.RawMessage(text)
		return false, nil
	}
	if r.reasks >= r.cfg.Reasks {
		return false, &OutputError{State: Failed, Answer: r.text, Violations: vs}
	}
	r.reasks++
	r.cfg.History.AppendUser(llm.Text{Text: fmt.Sprintf(reask, strings.Join(vs, "\n- "))})
	return true, nil
}

// unfence returns text without the blank space and the Markdown code fence
// a model may put around its JSON when asked in words.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if body, ok := strings.CutPrefix(t, "```"); ok && strings.HasSuffix(body, "```") {
		if lang, rest, ok := strings.Cut(strings.TrimSuffix(body, "```"), "\n"); ok && !strings.ContainsAny(lang, "{[\"") {
			return strings.TrimSpace(rest) // without the fence's line: "json", or none
		}
	}
	return t
}
