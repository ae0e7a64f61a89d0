package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// compactionCost is what one session cost, the main turns and every
// compaction (the client's summary calls, the server's compaction
// iterations) together.
type compactionCost struct {
	billed             float64 // input + 1.25×cache write + 0.1×cache read
	input, write, read int64
	output             int64
	usd                float64 // at claude-opus-5-5's prices
	compactions        int
	requests           int
	peak               int64
}

// add counts u, the server's compaction (which llm reads from
// usage.iterations) included.
func (c *compactionCost) add(u llm.Usage, price llm.Price) {
	c.usd += price.Cost(u) // compaction included
	for {
		c.billed += float64(u.InputTokens) + 1.25*float64(u.CacheCreationInputTokens) + 0.1*float64(u.CacheReadInputTokens)
		c.input += u.InputTokens
		c.write += u.CacheCreationInputTokens
		c.read += u.CacheReadInputTokens
		c.output += u.OutputTokens
		if u.Compaction == nil {
			return
		}
		c.compactions++
		u = *u.Compaction
	}
}

// reuse is the share of prompt tokens read from the cache.
func (c *compactionCost) reuse() float64 {
	return float64(c.read) / float64(c.input+c.write+c.read)
}

// compactionSummary is what the fake's compactions write, either side.
const compactionSummary = "## Original task\nAdd up the numbers in every file under /data.\n## Key facts\nfiles read so far hold values 0..n; the running total is kept in the summary."

// runCompactionSession runs the BENCHMARKS.md session on claude-opus-5-5,
// with caching, compacting on the client or on the server. The fake bills
// as the API does: the main turns by the cache simulator over the prompt
// the model reads (from the last compaction block on); a client summary
// call as uncached input; a server compaction as an iteration over the
// whole prompt (which reads the cached prefix) that writes the summary,
// then a message iteration over the prefix and the summary.
func runCompactionSession(tb testing.TB, mode string, turns, resultChars, limit int) compactionCost {
	tb.Helper()
	const opus = "claude-opus-5-5"
	info, _ := llm.LookupModel(opus)
	sim := newCacheSim()
	var cost compactionCost
	n := 0
	srv := anthropictest.NewServer(anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
		if isSummaryRequest(r) {
			return sim.summaryReply(r)
		}
		in, w, rd, err := sim.usage(r)
		if err != nil {
			return anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: err.Error()}
		}
		s := anthropictest.NewStream()
		if p, _ := r.Params(); p != nil && p.CompactionTrigger > 0 && in+w+rd >= p.CompactionTrigger {
			out := len(compactionSummary) / 4
			s.Compaction(compactionSummary, in, out, w, rd)
			prefix := (len(system) + len(tools[0].InputSchema) + len(tools[0].Description) + 40) / 4
			in, w, rd = prefix+out, 0, 0
		}
		n++
		s.Usage(in, 1, w, rd)
		if n > turns {
			return s.Text("The total is 1234.").Stop("end_turn", 10)
		}
		return s.Text(fmt.Sprintf("Reading file %d to continue the task.", n)).
			ToolUse(fmt.Sprintf("toolu_%03d", n), "read_file", fmt.Sprintf(`{"path":"/data/file%03d.txt"}`, n)).Stop("tool_use", 40)
	})))
	defer srv.Close()
	client := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	h := memory.New(memory.Config{Model: opus, ContextLimit: limit, KeepRecent: 3, Compaction: mode})
	h.SetPrefix(system, tools)
	h.AppendUser(llm.Text{Text: task})
	ctx := context.Background()
	for turn := 0; turn <= turns+1; turn++ {
		if h.NeedsCompaction() {
			c, err := h.Compact(ctx, client)
			if err != nil {
				tb.Fatalf("turn %d: Compact: %v", turn, err)
			}
			cost.add(c.Usage, info.Price)
			cost.compactions++ // the client's
		}
		req := llm.Request{Model: opus, MaxTokens: 1024, System: system, Tools: tools, Messages: h.Messages(), Cache: true,
			ContextEdits: h.ContextManagement(false)}
		var asm llm.Assembler
		for ev, err := range client.Stream(ctx, req) {
			if err != nil {
				tb.Fatalf("turn %d: %v", turn, err)
			}
			asm.Add(ev)
		}
		out := asm.Turn()
		msg, u := out.Message, out.Usage
		cost.add(u, info.Price)
		cost.peak = max(cost.peak, u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens)
		h.AppendAssistant(msg, u)
		var results []llm.Block
		for _, b := range msg.Content {
			if tu, ok := b.(llm.ToolUse); ok {
				body := fmt.Sprintf("%s: value=%d\n", tu.ID, turn) + strings.Repeat("0123456789abcdef", resultChars/16)
				results = append(results, llm.ToolResult{ToolUseID: tu.ID, Content: []llm.Block{llm.Text{Text: body}}})
			}
		}
		if len(results) == 0 {
			break
		}
		h.AppendUser(results...)
	}
	for _, r := range srv.Requests() {
		if err := anthropictest.CheckRequest(r.Body); err != nil {
			tb.Fatalf("request %d: %v", r.N, err)
		}
	}
	cost.requests = len(srv.Requests())
	return cost
}

// BenchmarkCompactionCost runs one long tool session on claude-opus-5-5
// (150 turns, results of ~8,000 characters, context limit 80,000) compacting
// on the client and on the server, with prompt caching, and reports for
// each, every call billed (main turns and compactions):
//
//   - billed-input: input + 1.25×cache_write + 0.1×cache_read tokens;
//   - prefix-reuse: the share of prompt tokens read from the cache;
//   - usd: the session's cost at the model's prices, output included;
//   - compactions and peak-context.
func BenchmarkCompactionCost(b *testing.B) {
	for _, mode := range []string{"client", "server"} {
		b.Run(mode, func(b *testing.B) {
			var c compactionCost
			for b.Loop() {
				c = runCompactionSession(b, mode, 150, 8000, 80_000)
			}
			b.ReportMetric(c.billed, "billed-input")
			b.ReportMetric(c.reuse(), "prefix-reuse")
			b.ReportMetric(c.usd, "usd")
			b.ReportMetric(float64(c.compactions), "compactions")
			b.ReportMetric(float64(c.peak), "peak-context")
			b.ReportMetric(float64(c.requests), "requests")
		})
	}
}

// TestCompactionCostSession checks the benchmark's session: both modes
// compact, the server's without a summary call, and neither outgrows the
// limit.
func TestCompactionCostSession(t *testing.T) {
	client := runCompactionSession(t, "client", 60, 8000, 80_000)
	server := runCompactionSession(t, "server", 60, 8000, 80_000)
	t.Logf("client %+v\nserver %+v", client, server)
	if client.compactions == 0 || server.compactions == 0 {
		t.Fatalf("compactions: client %d, server %d; want both", client.compactions, server.compactions)
	}
	if server.requests != 61 {
		t.Errorf("server mode made %d requests, want the 61 turns alone", server.requests)
	}
	if client.peak > 80_000 || server.peak > 80_000 {
		t.Errorf("peak context: client %d, server %d; limit 80,000", client.peak, server.peak)
	}
}
