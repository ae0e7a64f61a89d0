package typed

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// Options tune [Configure]; a nil *Options takes every default.
type Options struct {
	// Reasks is how many times an answer invalid against the schema is
	// sent back. Default 2; negative: none.
	Reasks int
}

// Configure returns cfg set up so that each run of an Agent of it must end
// with a final answer that is one JSON value valid against schema, which
// [Output] then returns. On models with [llm.ModelInfo].StructuredOutputs
// the schema is sent, in the subset the API takes, as
// output_config.format; on others, and for a schema the API cannot take (a
// map), the system prompt asks for it. Either way the answer is validated
// against schema itself, an invalid one is sent back with each violation
// by its path, and a run that ends without a valid one returns an
// [*OutputError], the history left as it was. With cfg.FinalAnswer, a
// valid best-effort answer at the iteration limit finishes the run: it is
// the answer asked for.
//
// It adds to cfg without replacing anything: a Model middleware after
// cfg.Middleware, a BeforeStop hook after cfg.Hooks, and an Observer
// around cfg.Observer, which still sees every run. Whether the model takes
// structured outputs is read from cfg.History's model (default
// llm.DefaultModel): set History first.
func Configure(cfg agent.Config, schema *jsonschema.Schema, opts *Options) (agent.Config, error) {
	if schema == nil {
		return cfg, errors.New("typed: the schema is nil")
	}
	rs, err := schema.Resolve(nil)
	if err != nil {
		return cfg, fmt.Errorf("typed: the schema: %w", err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return cfg, fmt.Errorf("typed: the schema: %w", err)
	}
	model := llm.DefaultModel
	if cfg.History != nil {
		model = cfg.History.Config().Model
	}
	var format json.RawMessage
	if info, _ := llm.LookupModel(model); info.StructuredOutputs {
		format, _ = outputSchema(raw) // a map has none: asked in words
	}
	if format == nil {
		ask := "Your final answer must be only a JSON value valid against this JSON schema, with no other text:\n" + string(raw)
		cfg.System = strings.TrimSpace(cfg.System + "\n\n" + ask)
	} else {
		cfg.Middleware = withFormat(cfg.Middleware, format)
	}
	c := &checker{schema: rs, reasks: 2, inner: cfg.Observer}
	if opts != nil {
		c.reasks = max(cmp.Or(opts.Reasks, 2), 0)
	}
	cfg.Hooks = append(slices.Clip(cfg.Hooks), c.beforeStop)
	cfg.Observer = c
	return cfg, nil
}

// withFormat returns middleware, then one that sends format as each
// model turn's output_config.format; a compaction's summary request,
// which must stay prose, goes without it.
func withFormat(middleware func(llm.Model) llm.Model, format json.RawMessage) func(llm.Model) llm.Model {
	return func(m llm.Model) llm.Model {
		if middleware != nil {
			if m = middleware(m); m == nil {
				return nil // agent.New says so
			}
		}
		return llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
			if ctx.Value(compacting{}) == nil {
				req.OutputSchema = format
			}
			return m.Stream(ctx, req)
		})
	}
}

// compacting marks the ctx of a compaction (checker.Compact).
type compacting struct{}

// A checker holds a run to its schema: beforeStop checks each answer and
// sends an invalid one back, and, as the agent's Observer, it turns a run
// that ended without a valid answer into an [*OutputError].
type checker struct {
	schema *jsonschema.Resolved
	reasks int
	inner  agent.Observer // the Config's own, if any
}

// An answer is what a run's checks found, shared by its hook and its
// Observer through the run's ctx, under their checker as the key.
type answer struct {
	violations []string // the last answer's; none if it was valid
	reasks     int      // answers sent back
	reasked    bool     // the last answer was sent back
	valid      *string  // the last answer found valid, if any
}

// reask is the user turn that sends an invalid answer back.
const reask = "Your answer is not valid against the required JSON schema:\n- %s\n" +
	"Answer again with only the corrected JSON value, no other text."

// beforeStop checks the answer the model would stop with: a valid one
// ends the run, an invalid one is sent back while re-asks last.
func (c *checker) beforeStop(ctx context.Context, e agent.HookEvent) (agent.Decision, error) {
	a, ok := ctx.Value(c).(*answer)
	if e.Point != agent.BeforeStop || !ok {
		return agent.Decision{}, nil
	}
	a.violations = tool.Violations(c.schema, []byte(unfence(e.Text)))
	if len(a.violations) == 0 {
		a.valid = &e.Text
	}
	a.reasked = len(a.violations) > 0 && a.reasks < c.reasks
	if !a.reasked {
		return agent.Decision{}, nil
	}
	a.reasks++
	return agent.Decision{Continue: fmt.Sprintf(reask, strings.Join(a.violations, "\n- "))}, nil
}

// Run runs a's run with an answer to check, and ends one without a valid
// answer with an [*OutputError], rolling its history back as a failed run
// does. The inner Observer sees the run as it ends.
func (c *checker) Run(ctx context.Context, a *agent.Agent, input string, run func(context.Context) iter.Seq2[agent.Event, error]) iter.Seq2[agent.Event, error] {
	checked := func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			h := a.Config().History
			rollback, st := h.Checkpoint(), &answer{}
			for ev, err := range run(context.WithValue(ctx, c, st)) {
				if res, ok := ev.(agent.Result); ok && err == nil {
					if res.State, err = st.verdict(res); err != nil {
						rollback()
						h.Repair()
					}
					ev = res
				}
				if !yield(ev, err) {
					return
				}
			}
		}
	}
	if c.inner != nil {
		return c.inner.Run(ctx, a, input, checked)
	}
	return checked(ctx)
}

// verdict returns the state of a run that ended as res, without an error,
// and the [*OutputError] of one that has no valid answer.
func (a *answer) verdict(res agent.Result) (agent.State, error) {
	switch res.State {
	case agent.Finished:
		switch {
		case len(a.violations) == 0:
			return res.State, nil
		case a.reasked: // the iteration limit stopped the re-ask
			return agent.IterationLimit, &OutputError{State: agent.IterationLimit, Answer: res.Text}
		}
		return agent.Failed, &OutputError{State: agent.Failed, Answer: res.Text, Violations: a.violations}
	case agent.IterationLimit:
		// Config.FinalAnswer's best-effort answer, when valid, is the answer
		// asked for: the run finished with it.
		if a.valid != nil && *a.valid == res.Text && len(a.violations) == 0 {
			return agent.Finished, nil
		}
		return res.State, &OutputError{State: res.State, Answer: res.Text}
	case agent.Refused, agent.Truncated, agent.TokenLimit:
		return res.State, &OutputError{State: res.State, Answer: res.Text}
	}
	return res.State, nil // paused, or stopped by time, budget or a hook: no answer was due yet
}

// Runtime is the inner Observer's.
func (c *checker) Runtime(rt agent.Runtime) agent.Runtime {
	if c.inner != nil {
		return c.inner.Runtime(rt)
	}
	return rt
}

// Compact marks the compaction's ctx, so that its summary is not held to
// the schema, and passes it to the inner Observer.
func (c *checker) Compact(ctx context.Context, compact func(context.Context) (memory.Compaction, error)) (memory.Compaction, error) {
	ctx = context.WithValue(ctx, compacting{}, true)
	if c.inner != nil {
		return c.inner.Compact(ctx, compact)
	}
	return compact(ctx)
}

// Output returns the final answer of res, a run of an Agent whose Config
// [Configure] set up, as the JSON value that was valid against the schema:
// without the blank space and Markdown fence a model may put around it. It
// returns nil for a run that did not finish with one.
func Output(res agent.Result) json.RawMessage {
	text := unfence(res.Text)
	if res.State != agent.Finished || !json.Valid([]byte(text)) {
		return nil
	}
	return json.RawMessage(text)
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
