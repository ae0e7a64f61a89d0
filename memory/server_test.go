package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
)

// TestContextManagementByModel checks the automatic choice and each
// override: which edits a request asks for, in which order, with which
// limits.
func TestContextManagementByModel(t *testing.T) {
	const limit = 100_000
	editing := llm.ContextEdit{Type: llm.ClearToolUses, Trigger: &llm.EditLimit{Type: "input_tokens", Value: limit / 2},
		Keep: &llm.EditLimit{Type: "tool_uses", Value: 4}, ClearAtLeast: &llm.EditLimit{Type: "input_tokens", Value: limit / 10}}
	thinking := llm.ContextEdit{Type: llm.ClearThinking, Keep: &llm.EditLimit{Type: "thinking_turns", Value: 1}}
	compact := llm.ContextEdit{Type: llm.Compact, Trigger: &llm.EditLimit{Type: "input_tokens", Value: limit * 8 / 10}}
	for _, tc := range []struct {
		model, mode  string
		big, think   bool // the history is past half the limit; thinking is on
		wantStrategy string
		want         []llm.ContextEdit
	}{
		{model: "claude-opus-5-5", wantStrategy: "server", want: []llm.ContextEdit{editing, compact}},
		{model: "claude-opus-5-5", think: true, wantStrategy: "server", want: []llm.ContextEdit{editing, compact}},
		{model: "claude-opus-5-5", big: true, think: true, wantStrategy: "server", want: []llm.ContextEdit{thinking, editing, compact}},
		{model: "claude-haiku-4-5", wantStrategy: "client", want: []llm.ContextEdit{editing}},
		{model: "claude-opus-4-1", wantStrategy: "client"},
		{model: "claude-unknown-9", wantStrategy: "client"},
		{model: "claude-opus-5-5", mode: "client", wantStrategy: "client"},
		{model: "claude-opus-5-5", mode: "off", wantStrategy: "off"},
		{model: "claude-unknown-9", mode: "server", wantStrategy: "server", want: []llm.ContextEdit{editing, compact}},
	} {
		h := New(Config{Model: tc.model, ContextLimit: limit, Compaction: tc.mode})
		h.AppendUser(llm.Text{Text: "task"})
		if tc.big {
			h.AppendAssistant(llm.Message{Content: []llm.Block{llm.Text{Text: "read"}}}, llm.Usage{InputTokens: limit * 6 / 10})
		}
		if got := h.strategy(); got != tc.wantStrategy {
			t.Errorf("%s %q: strategy %q, want %q", tc.model, tc.mode, got, tc.wantStrategy)
		}
		var got []llm.ContextEdit
		if cm := h.ContextManagement(tc.think); cm != nil {
			got = cm
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %q big=%v thinking=%v: edits (-want +got):\n%s", tc.model, tc.mode, tc.big, tc.think, diff)
		}
	}
	// The API's minimum trigger holds for a small limit.
	h := New(Config{Model: "claude-opus-5-5", ContextLimit: 20_000})
	if cm := h.ContextManagement(false); cm[len(cm)-1].Trigger.Value != 50_000 {
		t.Errorf("compaction trigger %d for a 20,000 limit, want the API's minimum 50,000", cm[len(cm)-1].Trigger.Value)
	}
}

// TestServerCompactionKept checks what a turn holding a compaction block
// leaves: the block, byte for byte, in place of everything it summarises,
// behind a note that keeps the history opening with a user message; the
// count is the turn's (the compacted context's); a saved session reloads
// the same.
func TestServerCompactionKept(t *testing.T) {
	h := New(Config{Model: "claude-opus-5-5"})
	h.SetPrefix("sys", nil)
	h.AppendUser(llm.Text{Text: "task"})
	for i := range 3 {
		id := "toolu_0" + string(rune('0'+i))
		h.AppendAssistant(llm.Message{Content: []llm.Block{llm.ToolUse{ID: id, Name: "read", Input: []byte(`{}`)}}}, llm.Usage{InputTokens: int64(60_000 * (i + 1))})
		h.AppendUser(llm.ToolResult{ToolUseID: id, Content: []llm.Block{llm.Text{Text: "data"}}})
	}
	block := llm.RawBlock{Type: "compaction", JSON: []byte(`{"type":"compaction","content":"Read three files.","encrypted_content":"opaque=="}`)}
	turn := llm.Message{Role: llm.Assistant, Content: []llm.Block{block, llm.Text{Text: "Done."}}}
	h.AppendAssistant(turn, llm.Usage{InputTokens: 900, OutputTokens: 100})

	want := []llm.Message{
		{Role: llm.User, Content: []llm.Block{llm.Text{Text: serverNote}}},
		turn,
	}
	if diff := cmp.Diff(want, h.Messages()); diff != "" {
		t.Errorf("history after a server compaction (-want +got):\n%s", diff)
	}
	if got := h.Tokens(); got != 1000 {
		t.Errorf("Tokens() = %d after the compaction, want the turn's 1000", got)
	}
	if h.NeedsCompaction() {
		t.Error("NeedsCompaction after the server compacted")
	}
	if err := h.validate(); err != nil {
		t.Error(err)
	}

	g := Restore(h.Snapshot(), Config{Model: "claude-opus-5-5"})
	if diff := cmp.Diff(want, g.Messages()); diff != "" {
		t.Errorf("reloaded history (-want +got):\n%s", diff)
	}
	if got := g.Tokens(); got != 1000 {
		t.Errorf("reloaded Tokens() = %d, want 1000", got)
	}
}

// TestCompactionOff checks that "off" never compacts: no threshold, and
// Compact refuses, changing nothing.
func TestCompactionOff(t *testing.T) {
	h := New(Config{Model: "claude-opus-5-5", ContextLimit: 1000, Compaction: "off"})
	h.AppendUser(llm.Text{Text: "task"})
	h.AppendAssistant(llm.Message{Content: []llm.Block{llm.Text{Text: "long"}}}, llm.Usage{InputTokens: 5000})
	if h.NeedsCompaction() {
		t.Error("NeedsCompaction with compaction off")
	}
	before := h.Messages()
	if _, err := h.Compact(context.Background(), nil); !errors.Is(err, ErrCannotCompact) {
		t.Errorf("Compact with compaction off: %v, want ErrCannotCompact", err)
	}
	if diff := cmp.Diff(before, h.Messages()); diff != "" {
		t.Errorf("Compact with compaction off changed the history:\n%s", diff)
	}
}

// TestSummaryReadsServerCompaction checks that a client summary after a
// server compaction reads the server's summary whole, not as a truncated
// raw block.
func TestSummaryReadsServerCompaction(t *testing.T) {
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	e := entry{Entry: Entry{Message: llm.Message{Role: llm.Assistant, Content: []llm.Block{
		llm.RawBlock{Type: "compaction", JSON: []byte(`{"type":"compaction","content":"` + string(long) + `"}`)}}}}}
	got := transcript([]entry{e})
	if want := "[assistant]\n[summary of the earlier turns]\n" + string(long) + "\n\n"; got != want {
		t.Errorf("transcript of a compaction block:\n%q\nwant\n%q", got[:min(len(got), 200)], want[:200])
	}
}

// TestServerClearingDoesNotTeach checks that a turn whose prompt context
// editing may have cleared does not teach the estimator: its input is far
// below what the history holds.
func TestServerClearingDoesNotTeach(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		learn bool
	}{{"", false}, {"client", true}} {
		h := New(Config{Model: "claude-haiku-4-5", ContextLimit: 20_000, Compaction: tc.mode})
		h.AppendUser(llm.Text{Text: "task"})
		h.AppendAssistant(llm.Message{Content: []llm.Block{llm.ToolUse{ID: "toolu_1", Name: "read", Input: []byte(`{}`)}}},
			llm.Usage{InputTokens: 100})
		h.AppendUser(llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: strings.Repeat("x", 70_000)}}})
		// 20,000 tokens sent; the server cleared the result and read 500.
		h.AppendAssistant(llm.Message{Content: []llm.Block{llm.Text{Text: "ok"}}}, llm.Usage{InputTokens: 500})
		if learned := h.ratio != defaultRatio; learned != tc.learn {
			t.Errorf("mode %q: ratio %v, learned %v, want %v", tc.mode, h.ratio, learned, tc.learn)
		}
	}
}

// TestCompactAsksServer checks the on-demand compaction: on a model with
// server compaction, in "server" mode, Compact sends one compaction request
// of the history as it stands, without context_management, and keeps the
// block it returns byte for byte; elsewhere, and when the server refuses,
// the client's summary is used. Each history then passes the strict fake.
func TestCompactAsksServer(t *testing.T) {
	const block = `{"type":"compaction","content":"We read three files.","signature":"sig=="}`
	compaction := anthropictest.NewStream().Usage(900, 1, 0, 0).Compaction("We read three files.").
		Event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}}`).Stop("compaction", 40)
	refused := anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "compaction: not available"}
	summary := anthropictest.NewStream().Usage(500, 1, 0, 0).Text("We read three files.").Stop("end_turn", 30)
	for _, tc := range []struct {
		name, model, mode string
		replies           []anthropictest.Reply
		summarize         []bool // which requests asked for compaction
		server            bool   // the history holds the server's block, else the client's summary
		usage             llm.Usage
	}{
		{"server on opus-5-5", "claude-opus-5-5", "", []anthropictest.Reply{compaction}, []bool{true}, true, llm.Usage{InputTokens: 900, OutputTokens: 40}},
		{"server forced on sonnet-5-5", "claude-sonnet-5-5", "server", []anthropictest.Reply{compaction}, []bool{true}, true, llm.Usage{InputTokens: 900, OutputTokens: 40}},
		{"no server compaction on opus-4-1", "claude-opus-4-1", "", []anthropictest.Reply{summary}, []bool{false}, false, llm.Usage{InputTokens: 500, OutputTokens: 30}},
		{"client on opus-5-5", "claude-opus-5-5", "client", []anthropictest.Reply{summary}, []bool{false}, false, llm.Usage{InputTokens: 500, OutputTokens: 30}},
		{"refused on opus-5-5", "claude-opus-5-5", "", []anthropictest.Reply{refused, summary}, []bool{true, false}, false, llm.Usage{InputTokens: 500, OutputTokens: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConvo(t, tc.model)
			for i := range 3 {
				if err := c.turn(false); err != nil {
					t.Fatalf("turn %d: %v", i+1, err)
				}
			}
			sent := len(c.srv.Requests())
			c.srv.Enqueue(tc.replies...)
			c.h.cfg.ContextLimit, c.h.cfg.KeepRecent, c.h.cfg.Compaction = 300, 1, tc.mode
			comp, err := c.h.Compact(t.Context(), c.client)
			if err != nil {
				t.Fatal(err)
			}
			var asked []bool
			for _, r := range c.srv.Requests()[sent:] {
				var body struct{ Compaction, ContextManagement json.RawMessage }
				json.Unmarshal(r.Body, &body)
				asked = append(asked, string(body.Compaction) == `{"type":"summarize"}`)
				if body.Compaction != nil && (body.ContextManagement != nil || len(r.Messages()) != 7) {
					t.Errorf("compaction request with context_management %s and %d messages, want none and the 7 of the history", body.ContextManagement, len(r.Messages()))
				}
			}
			if diff := cmp.Diff(tc.summarize, asked); diff != "" {
				t.Errorf("requests asking for compaction (-want +got):\n%s", diff)
			}
			if comp.Usage != tc.usage {
				t.Errorf("Compaction.Usage = %+v, want %+v", comp.Usage, tc.usage)
			}
			msgs := c.h.Messages()
			if tc.server {
				want := []llm.Message{userText(serverNote), {Role: llm.Assistant, Content: []llm.Block{llm.RawBlock{Type: "compaction", JSON: []byte(block)}}}}
				if diff := cmp.Diff(want, msgs); diff != "" {
					t.Errorf("history after the server's compaction (-want +got):\n%s", diff)
				}
			} else if !strings.HasPrefix(llm.TextOf(msgs[0].Content), summaryHeader) {
				t.Errorf("history opens with %q, want the client's summary", llm.TextOf(msgs[0].Content))
			}
			if err := c.turn(true); err != nil {
				t.Fatalf("the request after the compaction: %v", err)
			}
			next := c.srv.Requests()[len(c.srv.Requests())-1]
			if err := anthropictest.CheckRequest(next.Body); err != nil {
				t.Error(err)
			}
			// The block goes back as it came, but for the cache breakpoint llm adds at the end.
			if tc.server && !bytes.Contains(next.Body, []byte(strings.TrimSuffix(block, "}"))) {
				t.Errorf("the next request does not send the block as the server wrote it:\n%s", next.Body)
			}
		})
	}
}

// TestHardCutKeepsServerCompaction: a hard cut of a history the server
// compacted keeps the note and the compaction block it speaks of together,
// the block alone of its turn, with the newest turns: never the note
// without its block, nor a cut note quoting the server's note as the task,
// whether or not the note is marked a summary (a Snapshot may not say).
func TestHardCutKeepsServerCompaction(t *testing.T) {
	block := llm.RawBlock{Type: "compaction", JSON: []byte(`{"type":"compaction","content":"Read three files."}`)}
	for _, tc := range []struct {
		name   string
		marked bool // the note is marked a summary, as serverCompacted marks it
	}{{"marked", true}, {"unmarked", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(Config{Model: "claude-opus-5-5", ContextLimit: 3000, KeepRecent: 2, Compaction: "client"})
			h.AppendUser(text(task))
			h.AppendAssistant(asst(block, text("Reading on."), use("toolu_c")), llm.Usage{})
			h.AppendUser(result("toolu_c", "z"))
			for i := range 20 {
				id := fmt.Sprintf("toolu_%02d", i)
				h.AppendAssistant(asst(text(strings.Repeat("w", 800)), use(id)), llm.Usage{})
				h.AppendUser(result(id, strings.Repeat("z", 400)))
			}
			if !tc.marked {
				s := h.Snapshot()
				s.Entries[0].Summary = false
				h = Restore(s, h.Config())
			}
			before := h.Messages()
			c, err := h.Compact(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.validate(); err != nil {
				t.Fatalf("invalid after Compact: %v", err)
			}
			msgs := h.Messages()
			want := []llm.Message{userText(serverNote), asst(block)}
			if diff := cmp.Diff(want, msgs[:min(2, len(msgs))]); diff != "" {
				t.Errorf("the history after a cut opens (-want +got):\n%s\nsteps %q", diff, c.Steps)
			}
			if len(msgs) >= len(before) || !cmp.Equal(before[len(before)-2:], msgs[len(msgs)-2:]) {
				t.Errorf("%d messages of %d kept; want a cut keeping the newest turn", len(msgs), len(before))
			}
			if h.Tokens() > 3000 {
				t.Errorf("Tokens %d over the limit", h.Tokens())
			}
		})
	}
}
