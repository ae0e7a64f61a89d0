package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

type forecast struct {
	City string `json:"city"`
	Temp int    `json:"temp"`
}

func forecastSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.For[forecast](nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTypedAnswer(t *testing.T) {
	const valid = `{"city":"Paris","temp":21}`
	tests := []struct {
		name    string
		model   string // the history's; default llm.DefaultModel
		reasks  int
		tools   bool
		schema  *jsonschema.Schema // default forecastSchema
		words   bool               // asked in words on a model with structured outputs
		replies []at.Reply
		state   State
		output  string   // Result.Output
		errAs   *State   // the OutputError's State, if the run fails with one
		viol    []string // its Violations
		reasked []string // texts the re-asks must hold, one per re-ask
	}{{
		name:    "valid answer",
		replies: []at.Reply{at.NewStream().Text(valid).Stop("end_turn")},
		state:   Finished, output: valid,
	}, {
		name: "invalid then valid",
		replies: []at.Reply{at.NewStream().Text(`{"city":"Paris","temp":"warm"}`).Stop("end_turn"),
			at.NewStream().Text(valid).Stop("end_turn")},
		state: Finished, output: valid,
		reasked: []string{`field "temp": got string, want integer`},
	}, {
		name: "not JSON then valid",
		replies: []at.Reply{at.NewStream().Text(`It is 21 degrees in Paris.`).Stop("end_turn"),
			at.NewStream().Text(valid).Stop("end_turn")},
		state: Finished, output: valid,
		reasked: []string{"not valid JSON"},
	}, {
		name: "re-asks exhausted",
		replies: []at.Reply{at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn"),
			at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn"),
			at.NewStream().Text(`{"city":"Paris","temp":"21"}`).Stop("end_turn")},
		state:   Failed,
		errAs:   ptr(Failed),
		viol:    []string{`field "temp": got string, want integer`},
		reasked: []string{`missing required field "temp"`, `missing required field "temp"`},
	}, {
		name:    "no re-asks",
		reasks:  -1,
		replies: []at.Reply{at.NewStream().Text(`{"city":"Paris"}`).Stop("end_turn")},
		state:   Failed, errAs: ptr(Failed),
		viol: []string{`missing required field "temp"`},
	}, {
		name:  "tool calls before the answer",
		tools: true,
		replies: []at.Reply{at.NewStream().ToolUse("toolu_1", "echo", `{"text":"21"}`).Stop("tool_use"),
			at.NewStream().Text(valid).Stop("end_turn")},
		state: Finished, output: valid,
	}, {
		name:    "refusal",
		replies: []at.Reply{at.NewStream().Text("I cannot").Stop("refusal")},
		state:   Refused, errAs: ptr(Refused),
	}, {
		name:    "cut answer",
		replies: []at.Reply{at.NewStream().Text(`{"city":"Pa`).Stop("max_tokens")},
		state:   Truncated, errAs: ptr(Truncated),
	}, {
		name:    "a map, which output_config.format cannot hold, asked in words",
		schema:  mapSchema(t),
		words:   true,
		replies: []at.Reply{at.NewStream().Text(`{"paris":21}`).Stop("end_turn")},
		state:   Finished, output: `{"paris":21}`,
	}, {
		name:    "fenced answer of a model asked in words",
		model:   "claude-sonnet-4-0",
		replies: []at.Reply{at.NewStream().Text("```json\n" + valid + "\n```").Stop("end_turn")},
		state:   Finished, output: valid,
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
				schema = forecastSchema(t)
			}
			cfg := Config{Schema: schema, Reasks: tt.reasks, History: h}
			if tt.tools {
				cfg.Registry = newTools(t).reg
			}
			a := newAgent(t, client, cfg)
			res, err := a.Run(context.Background(), "Weather in Paris?")
			if res.State != tt.state {
				t.Errorf("state = %s, want %s (err %v)", res.State, tt.state, err)
			}
			if got := string(res.Output); got != tt.output {
				t.Errorf("output = %s, want %s", got, tt.output)
			}
			oe, ok := errors.AsType[*OutputError](err)
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
			var body struct {
				System       json.RawMessage `json:"system"`
				OutputConfig *struct {
					Format json.RawMessage `json:"format"`
				} `json:"output_config"`
			}
			if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			info, _ := llm.LookupModel(model)
			info.StructuredOutputs = info.StructuredOutputs && !tt.words
			if sent := body.OutputConfig != nil && body.OutputConfig.Format != nil; sent != info.StructuredOutputs {
				t.Errorf("output_config.format sent = %v, want %v", sent, info.StructuredOutputs)
			}
			if asked := strings.Contains(string(body.System), "JSON schema"); asked == info.StructuredOutputs {
				t.Errorf("system prompt asks for JSON = %v, want %v", asked, !info.StructuredOutputs)
			}
		})
	}
}

func mapSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.For[map[string]int](nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestSchemaInvalid(t *testing.T) {
	_, client := fake(t)
	_, err := New(Config{Model: client, Schema: &jsonschema.Schema{Type: "object", Required: []string{"a"}, Pattern: "("}})
	if err == nil || !strings.Contains(err.Error(), "Config.Schema") {
		t.Errorf("New with an invalid schema: err = %v, want one naming Config.Schema", err)
	}
}
