package memory

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/testenv"
	"github.com/agentloop/agentloop/llm"
)

func pngBase64(t testing.TB, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestImageTokens(t *testing.T) {
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
			if got := ImageTokens(tt.img); got != tt.want {
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
			h.AppendUserText(prompt)
			prefix := 350 + len("calc") + len("adds") + len(`{"type":"object"}`) + blockOverhead
			return est(prefix+userChars, defaultRatio)
		}},
		{"exact after a turn", func(h *History) int {
			h.AppendUserText(prompt)
			h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: 3, CacheCreationInputTokens: 40, CacheReadInputTokens: 150, OutputTokens: 7})
			return 200
		}},
		{"exact prefix plus estimated tail at the learned ratio", func(h *History) int {
			h.AppendUserText(prompt)
			// The API counted the 724 characters as 181 tokens: 4 chars/token.
			h.AppendAssistant(asst(use("t1")), llm.Usage{InputTokens: 181, OutputTokens: 20})
			if h.Ratio() != 4 {
				t.Errorf("learned ratio = %v, want 4", h.Ratio())
			}
			h.AppendToolResults([]llm.ToolResult{result("t1", strings.Repeat("r", 400))})
			tail := blockOverhead + len("t1") + blockOverhead + 400 + blockOverhead
			return 201 + est(tail, 4)
		}},
		{"images counted in the tail", func(h *History) int {
			h.AppendUserText(prompt)
			h.AppendAssistant(asst(text("send it")), llm.Usage{InputTokens: 200, OutputTokens: 5})
			h.AppendUser(llm.Image{MediaType: "image/png", Data: pngBase64(t, 1000, 750)})
			return 205 + est(2*blockOverhead, h.Ratio()) + 1000
		}},
		{"repair keeps the exact prefix", func(h *History) int {
			h.AppendUserText(prompt)
			h.AppendAssistant(asst(use("t1")), llm.Usage{InputTokens: 200, OutputTokens: 5})
			h.AppendToolResults([]llm.ToolResult{result("t1", "x")})
			h.AppendAssistant(asst(llm.ToolUse{ID: "t2", Name: "calc", Input: []byte(`{"cut`)}), llm.Usage{})
			h.Repair() // drops the cut-off turn
			return 205 + est(blockOverhead+len("t1")+blockOverhead+1+blockOverhead, h.Ratio())
		}},
		{"a server-tool turn's summed usage is billing, not the context", func(h *History) int {
			h.AppendUserText(prompt)
			h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: 200, OutputTokens: 5})
			h.AppendUserText("search")
			search := asst(
				llm.RawBlock{Type: "server_tool_use", JSON: []byte(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`)},
				llm.RawBlock{Type: "web_search_tool_result", JSON: []byte(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`)},
				text("found"))
			h.AppendAssistant(search, llm.Usage{InputTokens: 404_500, OutputTokens: 943})
			if got := h.Usage().InputTokens; got != 404_700 {
				t.Errorf("billed input = %d, want both turns summed", got)
			}
			tail, _ := measure(user(text("search")))
			turn, _ := measure(search)
			return 205 + est(tail+turn, h.Ratio())
		}},
		{"overflow marks the reported count", func(h *History) int {
			h.AppendUserText(prompt)
			h.MarkOverflow(errors.New(`llm: 400 invalid_request_error: prompt is too long: 215439 tokens > 200000 maximum`))
			return 215439
		}},
		{"overflow without a count assumes the window", func(h *History) int {
			h.AppendUserText(prompt)
			h.MarkOverflow(nil)
			return 200_000
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(Config{})
			want := tt.run(h)
			if got := h.Tokens(); got != want {
				t.Errorf("Tokens = %d, want %d", got, want)
			}
		})
	}
}

func TestNeedsCompactionDefaults(t *testing.T) {
	h := New(Config{})
	if got, want := h.Config().ContextLimit, 200_000-llm.DefaultMaxTokens-10_000; got != want {
		t.Errorf("default ContextLimit = %d, want %d", got, want)
	}
	h.AppendUserText("hi")
	h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: int64(h.Config().ContextLimit)})
	if h.NeedsCompaction() {
		t.Error("NeedsCompaction at exactly the limit")
	}
	h.AppendUserText("one more")
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
	rec, err := anthropictest.ReplayFile(filepath.Join(dir, "pyd_pause_turn_web_search_real.sse"))
	if err != nil {
		t.Fatal(err)
	}
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
	if u := asm.Usage(); asm.StopReason() != llm.PauseTurn || u.InputTokens != 404_500 {
		t.Fatalf("fixture changed: stop %q, usage %+v", asm.StopReason(), u)
	}

	h := New(Config{Model: "claude-sonnet-4-5"})
	h.AppendUserText("What is the weather in San Francisco?")
	h.AppendAssistant(asm.Message(), asm.Usage())
	if h.NeedsCompaction() || h.Tokens() >= 100_000 {
		t.Errorf("Tokens = %d, NeedsCompaction = %v after a 2,479-token prompt; want an estimate far below the limit %d",
			h.Tokens(), h.NeedsCompaction(), h.Config().ContextLimit)
	}
	if h.Ratio() != defaultRatio {
		t.Errorf("ratio learned from a summed usage: %v", h.Ratio())
	}
	if got := h.Usage(); got != asm.Usage() {
		t.Errorf("billed usage = %+v, want the turn's %+v", got, asm.Usage())
	}
}

type fakeCounter struct {
	n     int
	calls int
}

func (c *fakeCounter) CountTokens(ctx context.Context, req llm.Request) (int, error) {
	c.calls++
	if err := ValidateMessages(req.Messages); err != nil {
		return 0, err
	}
	return c.n, nil
}

func TestRecount(t *testing.T) {
	ctr := &fakeCounter{n: 950}
	h := New(Config{Model: "m", ContextLimit: 1000, Counter: ctr})
	h.AppendUserText(strings.Repeat("x", 100))
	if n, err := h.Recount(context.Background()); err != nil || ctr.calls != 0 {
		t.Fatalf("Recount far from the limit = %d, %v with %d calls; want no call", n, err, ctr.calls)
	}
	h.AppendAssistant(asst(text("go on")), llm.Usage{})
	h.AppendUserText(strings.Repeat("y", 3500)) // estimate ≈ 1050, past CountFrom (900)
	n, err := h.Recount(context.Background())
	if err != nil || n != 950 || ctr.calls != 1 {
		t.Fatalf("Recount near the limit = %d, %v with %d calls; want 950 from one call", n, err, ctr.calls)
	}
	if h.Tokens() != 950 || h.NeedsCompaction() {
		t.Errorf("after Recount Tokens = %d, NeedsCompaction = %v", h.Tokens(), h.NeedsCompaction())
	}
	// Now exact through the end: no second call.
	if _, err := h.Recount(context.Background()); err != nil || ctr.calls != 1 {
		t.Errorf("Recount with nothing estimated called the API again")
	}
}

func TestIsPromptTooLong(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("llm: 400 invalid_request_error: prompt is too long: 215439 tokens > 200000 maximum"), true},
		{errors.New("llm: 413 request_too_large: Request exceeds the maximum size"), true},
		{errors.New("llm: 529 overloaded_error: Overloaded"), false},
		{errors.New("agent: stop_reason model_context_window_exceeded"), true},
		{fmt.Errorf("turn 3: %w", &llm.APIError{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 201000 tokens > 200000 maximum"}), true},
		{&llm.APIError{StatusCode: 413, Type: "request_too_large", Message: "Request exceeds the maximum allowed number of bytes."}, true},
		{&llm.APIError{StatusCode: 400, Type: "invalid_request_error", Message: "messages.1: tool_use ids must be unique"}, false},
	}
	for _, tt := range tests {
		if got := IsPromptTooLong(tt.err); got != tt.want {
			t.Errorf("IsPromptTooLong(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		model string
		u     llm.Usage
		want  float64
		ok    bool
	}{
		{"claude-sonnet-4-5", llm.Usage{InputTokens: 1_000_000}, 3, true},
		{"claude-sonnet-4-5-20250929", llm.Usage{OutputTokens: 1_000_000}, 15, true},
		{"claude-haiku-4-5", llm.Usage{CacheCreationInputTokens: 1_000_000, CacheReadInputTokens: 1_000_000}, 1.25 + 0.10, true},
		{"claude-opus-4-20250514", llm.Usage{InputTokens: 1_000_000}, 15, true},
		{"claude-opus-4-5-20251101", llm.Usage{InputTokens: 1_000_000}, 5, true},
		{"claude-opus-5-5", llm.Usage{InputTokens: 500_000, OutputTokens: 100_000}, 2 + 2, true},
		{"gpt-4o", llm.Usage{InputTokens: 1}, 0, false},
		{"claude-sonnet", llm.Usage{InputTokens: 1}, 0, false},
	}
	for _, tt := range tests {
		got, ok := DefaultPricing.Cost(tt.model, tt.u)
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Cost(%q, %+v) = %v, %v; want %v, %v", tt.model, tt.u, got, ok, tt.want, tt.ok)
		}
	}
}

func TestHistoryCost(t *testing.T) {
	h := New(Config{Model: "claude-sonnet-4-5", SummaryModel: "claude-haiku-4-5"})
	h.AppendUserText("hi")
	h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000})
	h.addUsage(h.cfg.SummaryModel, llm.Usage{InputTokens: 1_000_000})
	usd, ok := h.Cost()
	if !ok || math.Abs(usd-(3+1.5+1)) > 1e-9 {
		t.Errorf("Cost = %v, %v; want 5.5, true", usd, ok)
	}
	want := llm.Usage{InputTokens: 2_000_000, OutputTokens: 100_000}
	if h.Usage() != want {
		t.Errorf("Usage = %+v, want %+v", h.Usage(), want)
	}
}

func TestSetDefaultModel(t *testing.T) {
	tests := []struct {
		name                string
		cfg                 Config
		wantModel, wantSumm string
	}{
		{"fills both when unset", Config{}, "claude-haiku-4-5", "claude-haiku-4-5"},
		{"keeps a set summary model", Config{SummaryModel: "claude-sonnet-4-5"}, "claude-haiku-4-5", "claude-sonnet-4-5"},
		{"changes nothing when Model is set", Config{Model: "claude-opus-4-1"}, "claude-opus-4-1", "claude-opus-4-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(tt.cfg)
			h.AppendUserText("hi")
			h.AppendAssistant(asst(text("ok")), llm.Usage{InputTokens: 1_000_000})
			h.SetDefaultModel("claude-haiku-4-5")
			if got := h.Config(); got.Model != tt.wantModel || got.SummaryModel != tt.wantSumm {
				t.Errorf("Model, SummaryModel = %q, %q; want %q, %q", got.Model, got.SummaryModel, tt.wantModel, tt.wantSumm)
			}
			// The turn appended before is priced as the model that ran it.
			want, _ := DefaultPricing.Cost(tt.wantModel, llm.Usage{InputTokens: 1_000_000})
			if usd, ok := h.Cost(); !ok || usd != want {
				t.Errorf("Cost = %v, %v; want %v, true", usd, ok, want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	h := New(Config{Model: "m"})
	h.AppendUserText("first")
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "one"}}},
		llm.Usage{InputTokens: 10, OutputTokens: 5})
	exact := h.Tokens()
	h.AppendUserText("refused prompt")
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "no"}}},
		llm.Usage{InputTokens: 30, OutputTokens: 1})

	h.Truncate(2)
	if h.Len() != 2 {
		t.Fatalf("Len = %d after Truncate(2), want 2", h.Len())
	}
	if got := llm.TextOf(h.Messages()[1].Content); got != "one" {
		t.Errorf("last message = %q, want the kept turn", got)
	}
	if got := h.Tokens(); got != exact {
		t.Errorf("Tokens = %d after Truncate, want the kept prefix's exact %d", got, exact)
	}
	if got := h.Usage().InputTokens; got != 40 {
		t.Errorf("billed input = %d, want 40: taken-back turns stay billed", got)
	}
	h.Truncate(5) // past the end: nothing to do
	h.Truncate(-1)
	if h.Len() != 0 {
		t.Errorf("Len = %d after Truncate(-1), want 0", h.Len())
	}
}
