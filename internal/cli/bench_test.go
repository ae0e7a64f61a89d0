package cli

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/shell"
)

// benchEvents is one model turn as the renderers see it: 200 text deltas
// and a tool call whose input arrives in 20 fragments.
func benchEvents() []agent.Event {
	evs := []agent.Event{agent.TurnStart{Iteration: 1}}
	for range 200 {
		evs = append(evs, agent.TextDelta{Text: "word "})
	}
	evs = append(evs, agent.ToolCallStart{ID: "t1", Name: "calculator"})
	for range 20 {
		evs = append(evs, agent.ToolInputDelta{ID: "t1", PartialJSON: `"abc",`})
	}
	evs = append(evs,
		agent.ToolCall{ID: "t1", Name: "calculator", Input: json.RawMessage(`{"a":1,"b":2,"operation":"add"}`)},
		agent.ToolDone{ID: "t1", Name: "calculator", Content: "3"},
		agent.UsageUpdate{}, agent.Result{State: agent.Finished})
	return evs
}

func benchmarkRenderer(b *testing.B, newR func() renderer) {
	evs := benchEvents()
	b.ReportAllocs()
	for b.Loop() {
		r := newR()
		for _, ev := range evs {
			r.event(ev, nil)
		}
		r.close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

func BenchmarkRenderText(b *testing.B) {
	benchmarkRenderer(b, func() renderer {
		return newTextRenderer(io.Discard, io.Discard, style{}, false, false, false, nil)
	})
}

func BenchmarkRenderLesson(b *testing.B) {
	benchmarkRenderer(b, func() renderer {
		return newTextRenderer(io.Discard, io.Discard, style{color: true}, false, true, true, &screen{cols: 200, rows: 50})
	})
}

func BenchmarkRenderJSON(b *testing.B) {
	benchmarkRenderer(b, func() renderer { return newJSONRenderer(io.Discard, io.Discard, true, false) })
}

// BenchmarkDemo runs the whole demo unpaced: fake server, llm client,
// agent loop, calculator, renderer; four model turns and four tool calls.
func BenchmarkDemo(b *testing.B) {
	c := &cli{getenv: func(string) string { return "" }, isTerminal: func(any) bool { return false }}
	b.ReportAllocs()
	for b.Loop() {
		if code := c.main(context.Background(), []string{"demo"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit status %d", code)
		}
	}
}

// BenchmarkRegisterBuiltins registers the default tools (files and shell),
// the start-up work of every run that keeps the default --tools: each tool
// generates and compiles its input schema.
func BenchmarkRegisterBuiltins(b *testing.B) {
	o := &options{tools: append(slices.Clone(fileTools), shell.Name)}
	b.ReportAllocs()
	for b.Loop() {
		bt, err := registerBuiltins(o, tool.NewRegistry(tool.Config{}))
		if err != nil {
			b.Fatal(err)
		}
		bt.close()
	}
}
