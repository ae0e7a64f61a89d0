package typed_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/typed"
)

type forecast struct {
	City string `json:"city"`
	Temp int    `json:"temp"`
}

func schemaFor[T any](t testing.TB) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.For[T](nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fake returns a fake API playing replies, and a client of it; at the
// test's end it checks every request against the API's rules.
func fake(t testing.TB, replies ...at.Reply) (*at.Server, *llm.Client) {
	t.Helper()
	srv := at.NewServer(replies...)
	t.Cleanup(func() {
		srv.Close()
		for _, r := range srv.Requests() {
			if err := at.CheckRequest(r.Body); err != nil {
				t.Errorf("request %d would be rejected by the API: %v", r.N, err)
			}
		}
	})
	return srv, llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test"})
}

// format returns the output_config.format of request r, if any.
func format(t *testing.T, r *at.Request) json.RawMessage {
	t.Helper()
	var body struct {
		OutputConfig *struct {
			Format json.RawMessage `json:"format"`
		} `json:"output_config"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.OutputConfig == nil {
		return nil
	}
	return body.OutputConfig.Format
}

func TestConfigure(t *testing.T) {
	const valid = `{"city":"Paris","temp":21}`
	echo := tool.Must(tool.New("echo", "Echo the text.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}))
	tests := []struct {
		name    string
		model   string // the history's; default llm.DefaultModel
		reasks  int
		maxIter int
		final   bool               // Config.FinalAnswer
		schema  *jsonschema.Schema // default forecast's
		words   bool               // asked in words on a model with structured outputs
		replies []at.Reply
		state   agent.State
		output  string       // typed.Output
		errAs   *agent.State // the OutputError's State, if the run fails with one
		viol    []string     // its Violations
		reasked []string     // texts the re-asks must hold, one per re-ask
	}{{
		name:    "valid answer",
		replies: []at.Reply{at.NewStream().Text(valid).Stop("end_turn")},
		state:   agent.Finished, output: valid,
	}, {
		name: "invalid then valid",
		replies: []at.Reply{at.NewStream().Text(`{"city":"Paris","temp":"warm"}`).Stop("end_turn"),
			at.NewStream().Text(valid).Stop("end_turn")},
		state: agent.Finished, output: valid,
		reasked: []string{`field "temp": got string, want integer`},
	}, {
		name: "not JSON then valid",
		replies: []at.Reply{at.NewStream().Text(`It is 21 degrees in Paris.`).Stop("end_turn"),
			at.NewStream().Text(valid).Stop("end_turn")},
		state: agent.Finished, output: valid,
		reasked: []string{"not valid JSON"},
	}, {
		name: "re-asks exhausted",
		replies: []at.Reply{at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn"),
			at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn"),
			at.NewStream().Text(`{"city":"Paris","temp":"21"}`).Stop("end_turn")},
		state:   agent.Failed,
		errAs:   ptr(agent.Failed),
		viol:    []string{`field "temp": got string, want integer`},
		reasked: []string{`missing required field "temp"`, `missing required field "temp"`},
	}, {
		name:    "no re-asks",
		reasks:  -1,
		replies: []at.Reply{at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn")},
		state:   agent.Failed, errAs: ptr(agent.Failed),
		viol: []string{`missing required field "temp"`},
	}, {
		name:    "a re-ask the iteration limit stops",
		maxIter: 1,
		replies: []at.Reply{at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn")},
		state:   agent.IterationLimit, errAs: ptr(agent.IterationLimit),
	}, {
		name:    "a valid best-effort answer at the iteration limit",
		maxIter: 1, final: true,
		replies: []at.Reply{at.NewStream().ToolUse("toolu_1", "echo", `{"text":"21"}`).Stop("tool_use"),
			at.NewStream().Text(valid).Stop("end_turn")},
		state: agent.Finished, output: valid,
	}, {
		name:    "an invalid best-effort answer at the iteration limit",
		maxIter: 1, final: true,
		replies: []at.Reply{at.NewStream().ToolUse("toolu_1", "echo", `{"text":"21"}`).Stop("tool_use"),
			at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn")},
		state: agent.IterationLimit, errAs: ptr(agent.IterationLimit),
	}, {
		name: "tool calls before the answer",
		replies: []at.Reply{at.NewStream().ToolUse("toolu_1", "echo", `{"text":"21"}`).Stop("tool_use"),
			at.NewStream().Text(valid).Stop("end_turn")},
		state: agent.Finished, output: valid,
	}, {
		name:    "refusal",
		replies: []at.Reply{at.NewStream().Text("I cannot").Stop("refusal")},
		state:   agent.Refused, errAs: ptr(agent.Refused),
	}, {
		name:    "cut answer",
		replies: []at.Reply{at.NewStream().Text(`{"city":"Pa`).Stop("max_tokens")},
		state:   agent.Truncated, errAs: ptr(agent.Truncated),
	}, {
		name:    "a map, which output_config.format cannot hold, asked in words",
		schema:  schemaFor[map[string]int](t),
		words:   true,
		replies: []at.Reply{at.NewStream().Text(`{"paris":21}`).Stop("end_turn")},
		state:   agent.Finished, output: `{"paris":21}`,
	}, {
		name:    "fenced answer of a model asked in words",
		model:   "claude-sonnet-4-0",
		replies: []at.Reply{at.NewStream().Text("```json\n" + valid + "\n```").Stop("end_turn")},
		state:   agent.Finished, output: valid,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, client := fake(t, tt.replies...)
			model := tt.model
			if model == "" {
				model = llm.DefaultModel
			}
			h := memory.New(memory.Config{Model: model})
			h.AppendUser(llm.Text{Text: "earlier"})
			h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "ok"}}}, llm.Usage{})
			before := h.Messages()
			schema := tt.schema
			if schema == nil {
				schema = schemaFor[forecast](t)
			}
			cfg, err := typed.Configure(agent.Config{Model: client, History: h, Tools: []*tool.Tool{echo}, MaxIterations: tt.maxIter, FinalAnswer: tt.final},
				schema, &typed.Options{Reasks: tt.reasks})
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(t.Context(), "Weather in Paris?")
			if res.State != tt.state {
				t.Errorf("state = %s, want %s (err %v)", res.State, tt.state, err)
			}
			if got := string(typed.Output(res)); got != tt.output {
				t.Errorf("output = %s, want %s", got, tt.output)
			}
			oe, ok := errors.AsType[*typed.OutputError](err)
			switch {
			case tt.errAs == nil && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.errAs != nil && !ok:
				t.Errorf("err = %v, want an *OutputError", err)
			case ok:
				if oe.State != *tt.errAs {
					t.Errorf("OutputError.State = %s, want %s", oe.State, *tt.errAs)
				}
				if diff := cmp.Diff(tt.viol, oe.Violations); diff != "" {
					t.Errorf("violations (-want +got):\n%s", diff)
				}
				if oe.Answer != res.Text {
					t.Errorf("OutputError.Answer = %q, want the last answer %q", oe.Answer, res.Text)
				}
				if diff := cmp.Diff(before, h.Messages()); diff != "" {
					t.Errorf("a failed typed run changed the history (-before +after):\n%s", diff)
				}
			}
			reqs := srv.Requests()
			var reasked []string
			for _, r := range reqs[1:] {
				msgs := r.Messages()
				if last := msgs[len(msgs)-1]; strings.HasPrefix(last.Text, "Your answer is not valid") {
					reasked = append(reasked, last.Text)
				}
			}
			if len(reasked) != len(tt.reasked) {
				t.Fatalf("re-asks = %q, want %d", reasked, len(tt.reasked))
			}
			for i, want := range tt.reasked {
				if !strings.Contains(reasked[i], want) {
					t.Errorf("re-ask %d = %q, want it to name %q", i, reasked[i], want)
				}
			}
			// The format goes to models that take it, words to the others.
			info, _ := llm.LookupModel(model)
			info.StructuredOutputs = info.StructuredOutputs && !tt.words
			if sent := format(t, reqs[0]) != nil; sent != info.StructuredOutputs {
				t.Errorf("output_config.format sent = %v, want %v", sent, info.StructuredOutputs)
			}
			var body struct {
				System json.RawMessage `json:"system"`
			}
			if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if asked := strings.Contains(string(body.System), "JSON schema"); asked == info.StructuredOutputs {
				t.Errorf("system prompt asks for JSON = %v, want %v", asked, !info.StructuredOutputs)
			}
		})
	}
}

// recorder is an Observer that records the results of the runs it sees.
type recorder struct {
	mu      sync.Mutex
	results []agent.State
	errs    []error
}

func (o *recorder) Run(ctx context.Context, a *agent.Agent, input string, run func(context.Context) iter.Seq2[agent.Event, error]) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for ev, err := range run(ctx) {
			if res, ok := ev.(agent.Result); ok {
				o.mu.Lock()
				o.results, o.errs = append(o.results, res.State), append(o.errs, err)
				o.mu.Unlock()
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (o *recorder) Runtime(rt agent.Runtime) agent.Runtime { return rt }

func (o *recorder) Compact(ctx context.Context, compact func(context.Context) (memory.Compaction, error)) (memory.Compaction, error) {
	return compact(ctx)
}

// TestConfigureKeepsConfig: Configure adds to the Config's Middleware,
// Hooks and Observer without replacing them, and a compaction's summary
// request goes without output_config.format, since a summary is prose.
func TestConfigureKeepsConfig(t *testing.T) {
	var summaries, turns int
	srv, client := fake(t, at.Repeat(at.ReplyFunc(func(r *at.Request) at.Reply {
		if msgs := r.Messages(); len(msgs) == 1 && strings.HasPrefix(msgs[0].Text, "<transcript>") {
			summaries++
			return at.NewStream().Text("SUMMARY: the user asked things.").Stop("end_turn")
		}
		turns++
		return at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn") // never valid
	})))
	h := memory.New(memory.Config{Model: llm.DefaultModel, ContextWindow: 20_000, MaxTokens: 1000, KeepRecent: 1, Compaction: "client"})
	for range 25 {
		h.AppendUser(llm.Text{Text: strings.Repeat("question ", 200)})
		h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: strings.Repeat("answer ", 200) + "end"}}}, llm.Usage{})
	}
	before := h.Messages()
	var wrapped int
	var stops []string
	obs := &recorder{}
	cfg := agent.Config{Model: client, History: h, Observer: obs,
		Middleware: func(m llm.Model) llm.Model { wrapped++; return m },
		Hooks: []agent.Hook{func(ctx context.Context, e agent.HookEvent) (agent.Decision, error) {
			if e.Point == agent.BeforeStop {
				stops = append(stops, e.Text)
			}
			return agent.Decision{}, nil
		}}}
	cfg, err := typed.Configure(cfg, schemaFor[forecast](t), &typed.Options{Reasks: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), "Weather in Paris?")
	if _, ok := errors.AsType[*typed.OutputError](err); !ok || res.State != agent.Failed {
		t.Fatalf("result %+v, %v; want failed with an *OutputError", res, err)
	}
	if wrapped != 1 || len(stops) != 2 {
		t.Errorf("the Config's Middleware wrapped %d models, its hook saw %d stops; want 1 and 2", wrapped, len(stops))
	}
	if diff := cmp.Diff([]agent.State{agent.Failed}, obs.results); diff != "" || !errors.As(obs.errs[0], new(*typed.OutputError)) {
		t.Errorf("the Config's Observer saw %v, %v; want the failed run and its OutputError (%s)", obs.results, obs.errs, diff)
	}
	if summaries == 0 || turns != 2 {
		t.Fatalf("%d summaries and %d turns, want a compaction and 2 turns", summaries, turns)
	}
	for _, r := range srv.Requests() {
		msgs := r.Messages()
		summary := len(msgs) == 1 && strings.HasPrefix(msgs[0].Text, "<transcript>")
		if sent := format(t, r) != nil; sent == summary {
			t.Errorf("request %d (a summary: %v) sent output_config.format: %v", r.N, summary, sent)
		}
	}
	if diff := cmp.Diff(before, h.Messages()); diff != "" {
		t.Errorf("a failed typed run changed the history, its compaction included (-before +after):\n%s", diff)
	}
}

func TestConfigureBadSchema(t *testing.T) {
	for _, s := range []*jsonschema.Schema{nil, {Type: "object", Required: []string{"a"}, Pattern: "("}} {
		if _, err := typed.Configure(agent.Config{}, s, nil); err == nil || !strings.Contains(err.Error(), "typed: the schema") {
			t.Errorf("Configure(%v): err = %v, want one naming the schema", s, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
