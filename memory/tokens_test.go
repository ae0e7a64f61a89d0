package memory

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/testenv"
	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

func pngBase64(t testing.TB, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestImageCost(t *testing.T) {
	tests := []struct {
		name string
		img  llm.Image
		want int
	}{
		{"small", llm.Image{MediaType: "image/png", Data: pngBase64(t, 200, 150)}, 40},              // 30000/750
		{"medium", llm.Image{MediaType: "image/png", Data: pngBase64(t, 1000, 750)}, 1000},          // 750000/750
		{"long edge scaled", llm.Image{MediaType: "image/png", Data: pngBase64(t, 3136, 200)}, 210}, // 1568×100
		{"pixel cap", llm.Image{MediaType: "image/png", Data: pngBase64(t, 1500, 1500)}, 1534},
		{"unreadable", llm.Image{MediaType: "image/webp", Data: "UklGRg=="}, imageFallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := imageCost(tt.img); got != tt.want {
				t.Errorf("ImageTokens = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	est := func(chars int, ratio float64) int { return int(math.Ceil(float64(chars) / ratio)) }
	prompt := strings.Repeat("x", 700)
	userChars := 700 + 2*blockOverhead // message framing + text block framing

	tests := []struct {
		name string
		run  func(h *History) int // returns the expected Tokens()
	}{
		{"empty", func(h *History) int { return 0 }},
		{"estimate only, system and tools counted", func(h *History) int {
			h.SetPrefix(strings.Repeat("s", 350), []llm.ToolSpec{{Name: "calc", Description: "adds", InputSchema: []byte(`{"type":"object"}`)}})
			h.AppendUser(llm.Text{Text: prompt})
			prefix := 350 + len("calc") + len("adds") + len(`{"type":"object"}`) + blockOverhead
			return est(prefix+userChars, defaultRatio)
		}},
		{"exact after a turn", func(h *History) int {
			h.AppendUser(llm.Text{Text: prompt})
			h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: 3, CacheCreationInputTokens: 40, CacheReadInputTokens: 150, OutputTokens: 7})
			return 200
		}},
		{"exact prefix plus estimated tail at the learned ratio", func(h *History) int {
			h.AppendUser(llm.Text{Text: prompt})
			// The API counted the 724 characters as 181 tokens: 4 chars/token.
			h.AppendAssistant(asst(use("t1")), llm.Usage{InputTokens: 181, OutputTokens: 20})
			if h.ratio != 4 {
				t.Errorf("learned ratio = %v, want 4", h.ratio)
			}
			h.AppendUser(result("t1", strings.Repeat("r", 400)))
			tail := blockOverhead + len("t1") + blockOverhead + 400 + blockOverhead
			return 201 + est(tail, 4)
		}},
		{"images counted in the tail", func(h *History) int {
			h.AppendUser(llm.Text{Text: prompt})
			h.AppendAssistant(asst(text("send it")), llm.Usage{InputTokens: 200, OutputTokens: 5})
			h.AppendUser(llm.Image{MediaType: "image/png", Data: pngBase64(t, 1000, 750)})
			return 205 + est(2*blockOverhead, h.ratio) + 1000
		}},
		{"repair keeps the exact prefix", func(h *History) int {
			h.AppendUser(llm.Text{Text: prompt})
			h.AppendAssistant(asst(use("t1")), llm.Usage{InputTokens: 200, OutputTokens: 5})
			h.AppendUser(result("t1", "x"))
			h.AppendAssistant(asst(llm.ToolUse{ID: "t2", Name: "calc", Input: []byte(`{"cut`)}), llm.Usage{})
			h.Repair() // drops the cut-off turn
			return 205 + est(blockOverhead+len("t1")+blockOverhead+1+blockOverhead, h.ratio)
		}},
		{"a server-tool turn's summed usage is billing, not the context", func(h *History) int {
			h.AppendUser(llm.Text{Text: prompt})
			h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: 200, OutputTokens: 5})
			h.AppendUser(llm.Text{Text: "search"})
			search := asst(
				llm.RawBlock{Type: "server_tool_use", JSON: []byte(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`)},
				llm.RawBlock{Type: "web_search_tool_result", JSON: []byte(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`)},
				text("found"))
			h.AppendAssistant(search, llm.Usage{InputTokens: 404_500, OutputTokens: 943})
			if got := h.entries[3].Usage.InputTokens; got != 404_500 {
				t.Errorf("recorded input = %d, want the turn's, billed as it came", got)
			}
			tail, _ := measureBlocks(user(text("search")).Content)
			turn, _ := measureBlocks(search.Content)
			return 205 + est(tail+turn, h.ratio)
		}},
		{"overflow marks the reported count", func(h *History) int {
			h.AppendUser(llm.Text{Text: prompt})
			h.MarkOverflow(fmt.Errorf("turn 2: %w", &llm.APIError{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 215439 tokens > 200000 maximum"}))
			return 215439
		}},
		{"overflow without a count assumes the window", func(h *History) int {
			h.AppendUser(llm.Text{Text: prompt})
			h.MarkOverflow(nil)
			return 200_000
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Config{Model: "claude-sonnet-4-5"})
			want := tt.run(h)
			if got := h.Tokens(); got != want {
				t.Errorf("Tokens = %d, want %d", got, want)
			}
		})
	}
}

func TestNeedsCompactionDefaults(t *testing.T) {
	h := New(Config{Model: "claude-sonnet-4-5"})
	if got, want := h.Config().ContextLimit, 200_000-llm.DefaultMaxTokens-10_000; got != want {
		t.Errorf("default ContextLimit = %d, want %d", got, want)
	}
	h.AppendUser(llm.Text{Text: "hi"})
	h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: int64(h.Config().ContextLimit)})
	if h.NeedsCompaction() {
		t.Error("NeedsCompaction at exactly the limit")
	}
	h.AppendUser(llm.Text{Text: "one more"})
	if !h.NeedsCompaction() {
		t.Error("NeedsCompaction false above the limit")
	}
}

// TestServerToolTurnRecorded feeds a real recorded web-search turn that
// ended in pause_turn: its message_delta reports 404,500 input tokens,
// summed over the server's sampling iterations, for a 2,479-token prompt.
// The history must not take that for its size, or every later request
// would try to compact.
func TestServerToolTurnRecorded(t *testing.T) {
	dir := testenv.Fixtures(t)
	sse, err := os.ReadFile(filepath.Join(dir, "pyd_pause_turn_web_search_real.sse"))
	if err != nil {
		t.Fatal(err)
	}
	rec := anthropictest.Replay(sse)
	srv := anthropictest.NewServer(rec)
	defer srv.Close()
	client := llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test", MaxAttempts: 1})
	var asm llm.Assembler
	for ev, err := range client.Stream(t.Context(), llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Messages: []llm.Message{user(text("What is the weather in San Francisco?"))}}) {
		if err != nil {
			t.Fatal(err)
		}
		asm.Add(ev)
	}
	if u := asm.Turn().Usage; asm.Turn().StopReason != llm.PauseTurn || u.InputTokens != 404_500 {
		t.Fatalf("fixture changed: stop %q, usage %+v", asm.Turn().StopReason, u)
	}

	h := New(Config{Model: "claude-sonnet-4-5"})
	h.AppendUser(llm.Text{Text: "What is the weather in San Francisco?"})
	out := asm.Turn()
	h.AppendAssistant(out.Message, out.Usage)
	if h.NeedsCompaction() || h.Tokens() >= 100_000 {
		t.Errorf("Tokens = %d, NeedsCompaction = %v after a 2,479-token prompt; want an estimate far below the limit %d",
			h.Tokens(), h.NeedsCompaction(), h.Config().ContextLimit)
	}
	if h.ratio != defaultRatio {
		t.Errorf("ratio learned from a summed usage: %v", h.ratio)
	}
	if got := h.entries[1].Usage; got != asm.Turn().Usage {
		t.Errorf("recorded usage = %+v, want the turn's %+v", got, asm.Turn().Usage)
	}
}

type fakeCounter struct {
	n     int
	calls int
}

func (c *fakeCounter) CountTokens(ctx context.Context, req llm.Request) (int, error) {
	c.calls++
	if err := validateMessages(req.Messages); err != nil {
		return 0, err
	}
	return c.n, nil
}

func TestRecount(t *testing.T) {
	ctr := &fakeCounter{n: 950}
	h := New(Config{Model: "m", ContextLimit: 1000, Counter: ctr.CountTokens})
	h.AppendUser(llm.Text{Text: strings.Repeat("x", 100)})
	if n := h.recount(context.Background()); ctr.calls != 0 {
		t.Fatalf("recount far from the limit = %d with %d calls; want no call", n, ctr.calls)
	}
	h.AppendAssistant(asst(text("go on")), llm.Usage{})
	h.AppendUser(llm.Text{Text: strings.Repeat("y", 3500)}) // estimate ≈ 1050, past 90% of the limit
	n := h.recount(context.Background())
	if n != 950 || ctr.calls != 1 {
		t.Fatalf("recount near the limit = %d with %d calls; want 950 from one call", n, ctr.calls)
	}
	if h.Tokens() != 950 || h.NeedsCompaction() {
		t.Errorf("after Recount Tokens = %d, NeedsCompaction = %v", h.Tokens(), h.NeedsCompaction())
	}
	// Now exact through the end: no second call.
	if h.recount(context.Background()); ctr.calls != 1 {
		t.Errorf("Recount with nothing estimated called the API again")
	}
}

// The model table gives the window: 1M for Sonnet 5.5 (the default model),
// 200k for a 4.x model and for a model it does not know.
func TestConfigDefaultsFromModelTable(t *testing.T) {
	tests := []struct {
		model      string
		wantModel  string
		wantWindow int
	}{
		{"", llm.DefaultModel, 1_000_000},
		{"claude-opus-5-5-20261001", "claude-opus-5-5-20261001", 1_000_000},
		{"claude-sonnet-4-5", "claude-sonnet-4-5", 200_000},
		{"someone-elses-model", "someone-elses-model", 200_000},
	}
	for _, tt := range tests {
		cfg := New(Config{Model: tt.model}).Config()
		if cfg.Model != tt.wantModel || cfg.ContextWindow != tt.wantWindow {
			t.Errorf("Config{Model: %q}: model %q, window %d; want %q, %d", tt.model,
				cfg.Model, cfg.ContextWindow, tt.wantModel, tt.wantWindow)
		}
	}
}

// A checkpoint puts everything back: messages, exact counts, usage, and
// the messages a compaction rewrote.
func TestCheckpoint(t *testing.T) {
	h := New(Config{Model: "claude-sonnet-4-5", ContextWindow: 2000, KeepRecent: 1})
	h.AppendUser(llm.Text{Text: "first"})
	h.AppendAssistant(asst(llm.ToolUse{ID: "t1", Name: "read", Input: []byte(`{}`)}), llm.Usage{InputTokens: 10, OutputTokens: 5})
	h.AppendUser(llm.ToolResult{ToolUseID: "t1", Content: []llm.Block{llm.Text{Text: strings.Repeat("data ", 400)}}})
	h.AppendAssistant(asst(text("one")), llm.Usage{InputTokens: 600, OutputTokens: 5})
	before, tokens := h.Messages(), h.Tokens()
	saved := h.Snapshot()

	rollback := h.Checkpoint()
	h.AppendUser(llm.Text{Text: "a prompt that fails"})
	h.AppendAssistant(asst(text("two")), llm.Usage{InputTokens: 30, OutputTokens: 1})
	if n, _ := h.clearOld(1); n == 0 {
		t.Fatal("clearOld cleared nothing; the test needs a rewrite to undo")
	}
	rollback()

	if diff := cmp.Diff(before, h.Messages()); diff != "" {
		t.Errorf("messages after rollback (-want +got):\n%s", diff)
	}
	if h.Tokens() != tokens {
		t.Errorf("after rollback Tokens = %d, want %d", h.Tokens(), tokens)
	}
	if diff := cmp.Diff(saved, h.Snapshot()); diff != "" {
		t.Errorf("snapshot after rollback (-before +after):\n%s", diff)
	}
	// A rollback leaves the checkpoint intact: rolling back twice is safe.
	h.AppendUser(llm.Text{Text: "again"})
	rollback()
	if len(h.entries) != len(before) {
		t.Errorf("%d messages after a second rollback, want %d", len(h.entries), len(before))
	}
}

// validateMessages checks msgs as a history's validate would.
func validateMessages(msgs []llm.Message) error {
	h := New(Config{})
	for _, m := range msgs {
		h.push(entry{Entry: Entry{Message: m}})
	}
	return h.validate()
}
