package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
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
		agent.UsageUpdate{}, agent.Done{Result: agent.Result{State: agent.Finished}})
	return evs
}

func benchmarkRenderer(b *testing.B, newR func() renderer) {
	evs := benchEvents()
	b.ReportAllocs()
	for b.Loop() {
		r := newR()
		for _, ev := range evs {
			r.event(ev)
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
	benchmarkRenderer(b, func() renderer { return newJSONRenderer(io.Discard, io.Discard, true) })
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
