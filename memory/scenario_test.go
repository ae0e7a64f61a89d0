package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

const (
	model  = "claude-sonnet-4-5"
	task   = "Add up the numbers in every file under /data and report the total."
	system = "You are a careful agent. Use the tools to read files; never guess their contents."
)

var tools = []llm.ToolSpec{{
	Name:        "read_file",
	Description: "Reads a file and returns its contents.",
	InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
}}

// sessionConfig configures one scripted tool session.
type sessionConfig struct {
	turns       int  // tool turns before the final answer
	resultChars int  // size of each tool result
	cache       bool // Request.Cache
	compact     bool // call Compact when NeedsCompaction
	limit       int  // memory.Config.ContextLimit
}

// sessionStats is what a session measured.
type sessionStats struct {
	billedInput float64 // input + 1.25×cache write + 0.1×cache read, main turns
	peak        int64   // largest prompt sent (input + cache write + cache read)
	compactions int
	requests    []*anthropictest.Request
	history     *memory.History
}

// runSession drives History and llm.Client by hand, as the agent does,
// against a fake server that reports usage and cache hits like the API.
func runSession(tb testing.TB, sc sessionConfig) sessionStats {
	tb.Helper()
	sim := newCacheSim()
	var mainTurns atomic.Int32
	srv := anthropictest.NewServer(anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
		if isSummaryRequest(r) {
			return sim.summaryReply(r)
		}
		n := int(mainTurns.Add(1))
		if n > sc.turns {
			return sim.finalReply(r)
		}
		return sim.toolReply(r, n)
	})))
	defer srv.Close()
	client := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	h := memory.New(memory.Config{Model: model, ContextLimit: sc.limit, KeepRecent: 3})
	h.SetPrefix(system, tools)
	h.AppendUser(llm.Text{Text: task})

	ctx := context.Background()
	var st sessionStats
	for turn := 0; turn <= sc.turns+1; turn++ {
		h.Repair()
		if sc.compact && h.NeedsCompaction() {
			if _, err := h.Compact(ctx, client); err != nil {
				tb.Fatalf("turn %d: Compact: %v", turn, err)
			}
			st.compactions++
		}
		req := llm.Request{Model: model, MaxTokens: 1024, System: system, Tools: tools, Messages: h.Messages(), Cache: sc.cache}
		var asm llm.Assembler
		for ev, err := range client.Stream(ctx, req) {
			if err != nil {
				tb.Fatalf("turn %d: %v", turn, err)
			}
			asm.Add(ev)
		}
		out := asm.Turn()
		msg, u := out.Message, out.Usage
		h.AppendAssistant(msg, u)
		if got := int64(h.Tokens()); got != u.Context() {
			tb.Fatalf("turn %d: Tokens() = %d right after the turn, want the API's exact %d", turn, got, u.Context())
		}
		st.billedInput += float64(u.InputTokens) + 1.25*float64(u.CacheCreationInputTokens) + 0.1*float64(u.CacheReadInputTokens)
		st.peak = max(st.peak, u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens)
		var results []llm.Block
		for _, b := range msg.Content {
			if tu, ok := b.(llm.ToolUse); ok {
				body := fmt.Sprintf("%s: value=%d\n", tu.ID, turn) + strings.Repeat("0123456789abcdef", sc.resultChars/16)
				results = append(results, llm.ToolResult{ToolUseID: tu.ID, Content: []llm.Block{llm.Text{Text: body}}})
			}
		}
		if len(results) == 0 {
			break
		}
		h.AppendUser(results...)
	}
	st.requests = srv.Requests()
	st.history = h
	return st
}

func checkAll(t *testing.T, reqs []*anthropictest.Request) {
	t.Helper()
	for _, r := range reqs {
		if err := anthropictest.CheckRequest(r.Body); err != nil {
			t.Errorf("request %d breaks the API's rules: %v", r.N, err)
		}
	}
}

// TestScenarioCompaction runs a long tool session that must compact
// several times, with the fake server answering the summary requests.
func TestScenarioCompaction(t *testing.T) {
	st := runSession(t, sessionConfig{turns: 40, resultChars: 1000, cache: true, compact: true, limit: 3000})
	checkAll(t, st.requests)
	if st.compactions < 2 {
		t.Errorf("%d compactions, want several", st.compactions)
	}
	if st.peak > 3000+400 { // the limit plus at most one turn's growth
		t.Errorf("peak prompt %d tokens, limit 3000", st.peak)
	}
	var summaries int
	for _, r := range st.requests {
		if !isSummaryRequest(r) {
			continue
		}
		summaries++
		p, _ := r.Params()
		if len(p.Tools) != 0 || !strings.Contains(string(p.System), "compacting the history") {
			t.Errorf("summary request %d: tools %d, system %.60s", r.N, len(p.Tools), p.System)
		}
		if !strings.Contains(p.Messages[0].Text, task) && !strings.Contains(p.Messages[0].Text, "[earlier summary]") {
			t.Errorf("summary request %d carries neither the task nor an earlier summary", r.N)
		}
	}
	if summaries == 0 {
		t.Error("no summary request: compaction never reached step 2")
	}
	// The last request begins with the summary, and the session finished.
	last := st.requests[len(st.requests)-1].Messages()
	if !strings.Contains(last[0].Text, "Original task") {
		t.Errorf("last request starts with %.80q, want the summary", last[0].Text)
	}
	if err := memory.Validate(st.history); err != nil {
		t.Error(err)
	}
}

// TestScenarioPromptTooLong recovers from a 400 "prompt is too long": the
// error is recognised through llm's *APIError, the history compacts, and
// the one retry succeeds.
func TestScenarioPromptTooLong(t *testing.T) {
	sim := newCacheSim()
	srv := anthropictest.NewServer(
		anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 205000 tokens > 200000 maximum"},
		anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
			if isSummaryRequest(r) {
				return sim.summaryReply(r)
			}
			return sim.finalReply(r)
		})),
	)
	defer srv.Close()
	client := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	h := memory.New(memory.Config{Model: model, KeepRecent: 1})
	h.SetPrefix(system, tools)
	h.AppendUser(llm.Text{Text: task})
	for i := range 6 {
		id := fmt.Sprintf("toolu_%d", i)
		h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.ToolUse{ID: id, Name: "read_file", Input: []byte(`{"path":"/data/a"}`)}}}, llm.Usage{})
		h.AppendUser(llm.ToolResult{ToolUseID: id, Content: []llm.Block{llm.Text{Text: strings.Repeat("x", 3000)}}})
	}
	ctx := context.Background()
	turn := func() (llm.Message, llm.Usage, error) {
		var asm llm.Assembler
		for ev, err := range client.Stream(ctx, llm.Request{Model: model, System: system, Tools: tools, Messages: h.Messages(), Cache: true}) {
			if err != nil {
				return llm.Message{}, llm.Usage{}, err
			}
			asm.Add(ev)
		}
		out := asm.Turn()
		return out.Message, out.Usage, nil
	}
	_, _, err := turn()
	var ae *llm.APIError
	if !errors.As(err, &ae) || !errors.Is(err, llm.ErrPromptTooLong) {
		t.Fatalf("first turn error %v: want a prompt-too-long *llm.APIError", err)
	}
	h.MarkOverflow(err)
	c, err := h.Compact(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if c.After >= c.Before || len(c.Steps) == 0 {
		t.Errorf("compaction did nothing: %+v", c)
	}
	msg, u, err := turn()
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	h.AppendAssistant(msg, u)
	checkAll(t, srv.Requests())
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want the failed turn and one retry (clearing was enough)", n)
	}
	if err := memory.Validate(h); err != nil {
		t.Error(err)
	}
}

// TestScenarioInterrupted cancels a run after the model asked for tools:
// the next request, after Repair, is valid and answers the call.
func TestScenarioInterrupted(t *testing.T) {
	sim := newCacheSim()
	srv := anthropictest.NewServer(
		anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply { return sim.toolReply(r, 1) }),
		anthropictest.ReplyFunc(sim.finalReply),
	)
	defer srv.Close()
	client := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	h := memory.New(memory.Config{Model: model})
	h.AppendUser(llm.Text{Text: task})
	for range 2 {
		h.Repair()
		var asm llm.Assembler
		for ev, err := range client.Stream(context.Background(), llm.Request{Model: model, Tools: tools, Messages: h.Messages(), Cache: true}) {
			if err != nil {
				t.Fatal(err)
			}
			asm.Add(ev)
		}
		out := asm.Turn()
		h.AppendAssistant(out.Message, out.Usage)
		// The user cancels before the tool runs, then asks something else.
		h.AppendUser(llm.Text{Text: "Stop. Just tell me the total so far."})
	}
	checkAll(t, srv.Requests())
	second := srv.Requests()[1]
	rs := second.ToolResults()
	if len(rs) == 0 {
		msgs := second.Messages()
		rs = msgs[2].Content
	}
	if len(rs) == 0 || rs[0].Type != "tool_result" || !rs[0].IsError || !strings.Contains(rs[0].Content[0].Text, "not executed: interrupted") {
		t.Errorf("second request does not answer the interrupted call: %+v", rs)
	}
}
