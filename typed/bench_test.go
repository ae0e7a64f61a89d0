package typed_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/typed"
)

// BenchmarkTypedRun measures what Configure costs over a plain run: the
// same one-turn answer, `{"city":"Paris","temp":21}`, from a model that
// takes no time, with and without the schema. "run" reuses one agent, the
// history rolled back after each run: what differs is the validation of
// the answer. "new" configures and makes the agent too, as typed.Run
// does: it adds preparing the schema (resolving it, and transforming it
// for output_config.format), once per agent.
func BenchmarkTypedRun(b *testing.B) {
	turn := []llm.Event{
		llm.MessageStart{ID: "msg_1", Usage: llm.Usage{InputTokens: 10}},
		llm.TextDelta{Index: 0, Text: `{"city":"Paris","temp":21}`},
		llm.BlockStop{Index: 0},
		llm.MessageDelta{StopReason: llm.EndTurn, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}},
		llm.MessageStop{},
	}
	answer := llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
		return func(yield func(llm.Event, error) bool) {
			for _, ev := range turn {
				if !yield(ev, nil) {
					return
				}
			}
		}
	})
	schema := schemaFor[forecast](b)
	for _, name := range []string{"plain/run", "typed/run", "plain/new", "typed/new"} {
		b.Run(name, func(b *testing.B) {
			isTyped, fresh := strings.HasPrefix(name, "typed"), strings.HasSuffix(name, "new")
			plain := agent.Config{Model: answer, History: memory.New(memory.Config{})}
			newAgent := func() *agent.Agent {
				cfg := plain
				if isTyped {
					var err error
					if cfg, err = typed.Configure(cfg, schema, nil); err != nil {
						b.Fatal(err)
					}
				}
				a, err := agent.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				return a
			}
			a := newAgent()
			b.ReportAllocs()
			for b.Loop() {
				if fresh {
					a = newAgent()
				}
				rollback := plain.History.Checkpoint()
				if res, err := a.Run(context.Background(), "Weather in Paris?"); err != nil || res.State != agent.Finished {
					b.Fatalf("%+v, %v", res, err)
				}
				rollback()
			}
		})
	}
}
