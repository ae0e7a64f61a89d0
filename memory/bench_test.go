package memory_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// BenchmarkSession runs the scripted 50-turn tool session of
// BENCHMARKS.md, through llm.Client and the fake server, with prompt caching
// and compaction on and off. It reports, per session:
//
//   - billed-input: input + 1.25×cache_write + 0.1×cache_read tokens of the
//     main turns (the API's relative prices);
//   - peak-context: the largest prompt sent, in tokens.
func BenchmarkSession(b *testing.B) {
	for _, bc := range []struct {
		cache, compact bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		b.Run(fmt.Sprintf("cache=%v/compact=%v", bc.cache, bc.compact), func(b *testing.B) {
			var st sessionStats
			for b.Loop() {
				st = runSession(b, sessionConfig{turns: 50, resultChars: 2000, cache: bc.cache, compact: bc.compact, limit: 12000})
			}
			b.ReportMetric(st.billedInput, "billed-input")
			b.ReportMetric(float64(st.peak), "peak-context")
			b.ReportMetric(float64(st.compactions), "compactions")
		})
	}
}

// bigHistory returns a valid history of n tool turns.
func bigHistory(n int) *memory.History {
	h := memory.New(memory.Config{})
	h.SetPrefix(system, tools)
	h.AppendUser(llm.Text{Text: task})
	for i := range n {
		id := fmt.Sprintf("toolu_%03d", i)
		h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{
			llm.Text{Text: "Reading the next file."},
			llm.ToolUse{ID: id, Name: "read_file", Input: []byte(`{"path":"/data/x"}`)},
		}}, llm.Usage{InputTokens: int64(100 * (i + 1)), OutputTokens: 20})
		h.AppendUser(llm.ToolResult{ToolUseID: id, Content: []llm.Block{llm.Text{Text: strings.Repeat("z", 2000)}}})
	}
	return h
}

// The per-request overhead the agent pays: Repair (a no-op on a valid
// history), Tokens and Messages on a 100-turn history.
func BenchmarkPerRequest(b *testing.B) {
	h := bigHistory(100)
	b.Run("Repair", func(b *testing.B) {
		for b.Loop() {
			h.Repair()
		}
	})
	b.Run("Tokens", func(b *testing.B) {
		for b.Loop() {
			h.Tokens()
		}
	})
	b.Run("Messages", func(b *testing.B) {
		for b.Loop() {
			h.Messages()
		}
	})
}
