package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

const task = "Please add up the numbers in every file under /data and report the total."

// toolSession returns a history of a task followed by n tool turns, each
// with a result of resultChars characters, ending with a user message (the
// results of the last turn), as the agent has it just before a request.
func toolSession(cfg Config, n, resultChars int) *History {
	h := New(cfg)
	h.AppendUser(llm.Text{Text: task})
	for i := range n {
		id := fmt.Sprintf("toolu_%02d", i)
		h.AppendAssistant(asst(text(fmt.Sprintf("Reading file %d.", i)), use(id)), llm.Usage{})
		h.AppendUser(result(id, fmt.Sprintf("file %d: value=%d ", i, i*7)+strings.Repeat("z", resultChars)))
	}
	return h
}

// checkCompacted checks the rules every compaction must keep.
func checkCompacted(t *testing.T, h *History, before []llm.Message, keep int) {
	t.Helper()
	if err := h.validate(); err != nil {
		t.Fatalf("invalid after Compact: %v", err)
	}
	msgs := h.Messages()
	if msgs[0].Role != llm.User {
		t.Fatalf("first message is %s", msgs[0].Role)
	}
	// The newest keep turns (2·keep messages) are verbatim.
	n := 2 * keep
	if diff := cmp.Diff(before[len(before)-n:], msgs[len(msgs)-n:]); diff != "" {
		t.Errorf("recent turns changed (-before +after):\n%s", diff)
	}
}

func TestCompactClearsToolResultsFirst(t *testing.T) {
	h := toolSession(Config{ContextLimit: 4000, KeepRecent: 2}, 20, 800)
	before := h.Messages()
	m := &fakeModel{summary: "unused"}
	c, err := h.Compact(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.requests()) != 0 {
		t.Errorf("clearing was enough, yet the model was called")
	}
	if diff := cmp.Diff([]string{"cleared 18 tool results and 0 images"}, c.Steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if c.Before <= 4000 || c.After > h.Config().ContextLimit*6/10 || c.After != h.Tokens() {
		t.Errorf("Before %d After %d Tokens %d, target %d", c.Before, c.After, h.Tokens(), h.Config().ContextLimit*6/10)
	}
	checkCompacted(t, h, before, 2)
	if got := llm.TextOf(h.Messages()[2].Content[0].(llm.ToolResult).Content); got != clearedResult {
		t.Errorf("old result = %q, want the placeholder", got)
	}
	if len(h.Messages()) != len(before) {
		t.Errorf("clearing removed messages")
	}
}

func TestCompactSummarises(t *testing.T) {
	h := toolSession(Config{Model: "claude-sonnet-4-5", ContextLimit: 1500, KeepRecent: 2}, 30, 100)
	h.SetPrefix("You are an agent.", []llm.ToolSpec{{Name: "calc", InputSchema: []byte(`{"type":"object"}`)}})
	before := h.Messages()
	m := &fakeModel{summary: "## Original task\n" + task + "\n## Key facts\nfile 3: value=21", usage: llm.Usage{InputTokens: 3000, OutputTokens: 200}}
	c, err := h.Compact(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d summary calls, want 1", len(reqs))
	}
	req := reqs[0]
	if req.Tools != nil || req.System != summaryPrompt || req.Model != "claude-sonnet-4-5" || req.MaxTokens != 4096 {
		t.Errorf("summary request: tools %v, model %q, max %d, system %.40q", req.Tools, req.Model, req.MaxTokens, req.System)
	}
	if err := validateMessages(req.Messages); err != nil {
		t.Errorf("summary request invalid: %v", err)
	}
	tr := llm.TextOf(req.Messages[0].Content)
	// The transcript holds the task and the original results, even those
	// the first step cleared.
	for _, want := range []string{task, "file 3: value=21 zz", "[tool call toolu_03 calc"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if strings.Contains(tr, clearedResult) {
		t.Errorf("transcript shows cleared placeholders instead of the originals")
	}
	if len(c.Steps) != 2 || !strings.HasPrefix(c.Steps[0], "cleared") || c.Steps[1] != "summarised 57 messages" {
		t.Errorf("steps = %q", c.Steps)
	}
	checkCompacted(t, h, before, 2)
	msgs := h.Messages()
	if len(msgs) != 5 || !strings.Contains(llm.TextOf(msgs[0].Content), task) || !strings.HasPrefix(llm.TextOf(msgs[0].Content), summaryHeader) {
		t.Errorf("after summary: %d messages, first %q", len(msgs), llm.TextOf(msgs[0].Content))
	}
	if c.Usage != m.usage || h.entries[0].Usage != m.usage {
		t.Errorf("summary usage: compaction %+v, summary message %+v; want %+v", c.Usage, h.entries[0].Usage, m.usage)
	}
	if h.Tokens() > h.Config().ContextLimit*6/10 {
		t.Errorf("Tokens %d above target %d", h.Tokens(), h.Config().ContextLimit*6/10)
	}

	// A second compaction summarises the summary with the newer turns.
	for i := range 30 {
		id := fmt.Sprintf("toolu_b%02d", i)
		h.AppendAssistant(asst(text("more"), use(id)), llm.Usage{})
		h.AppendUser(result(id, strings.Repeat("q", 100)))
	}
	if _, err := h.Compact(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	tr = llm.TextOf(m.requests()[1].Messages[0].Content)
	if !strings.Contains(tr, "[earlier summary]") || !strings.Contains(tr, task) {
		t.Errorf("second transcript does not carry the first summary forward")
	}
	if err := h.validate(); err != nil {
		t.Fatal(err)
	}
}

// TestCompactCutsBetweenTurns checks that compaction cuts before an
// assistant turn, not inside one: assistant messages in a row are one turn
// to the API, whose calls the user turn after the last answers.
func TestCompactCutsBetweenTurns(t *testing.T) {
	h := toolSession(Config{ContextLimit: 1500, KeepRecent: 1, Compaction: "client"}, 30, 100)
	h.AppendAssistant(asst(use("toolu_x")), llm.Usage{})
	h.AppendAssistant(asst(text("and then")), llm.Usage{})
	h.AppendUser(result("toolu_x", "done"))
	before := h.Messages()
	if _, err := h.Compact(context.Background(), &fakeModel{summary: "the task: " + task}); err != nil {
		t.Fatal(err)
	}
	if err := h.validate(); err != nil {
		t.Fatalf("invalid after Compact: %v", err)
	}
	msgs := h.Messages()
	if diff := cmp.Diff(before[len(before)-3:], msgs[len(msgs)-3:]); diff != "" || len(msgs) != 4 {
		t.Errorf("%d messages; the newest turn, kept whole, changed (-before +after):\n%s", len(msgs), diff)
	}
}

func TestCompactHardCut(t *testing.T) {
	tests := []struct {
		name      string
		model     llm.Model
		wantSteps []string // prefixes
	}{
		{"no model", nil, []string{"cleared", "dropped"}},
		{"summary fails", &fakeModel{err: errors.New("llm: 529 overloaded_error")}, []string{"cleared", "summary failed: memory: summarise: llm: 529", "dropped"}},
		{"summary is blank", &fakeModel{summary: "  "}, []string{"cleared", "summary failed", "dropped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Assistant texts are large, so clearing results is not enough.
			h := New(Config{ContextLimit: 3000, KeepRecent: 2, Compaction: "client"})
			h.AppendUser(llm.Text{Text: task})
			for i := range 20 {
				id := fmt.Sprintf("toolu_%02d", i)
				h.AppendAssistant(asst(text(strings.Repeat("w", 800)), use(id)), llm.Usage{})
				h.AppendUser(result(id, strings.Repeat("z", 400)))
			}
			before := h.Messages()
			c, err := h.Compact(context.Background(), tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Steps) != len(tt.wantSteps) {
				t.Fatalf("steps = %q, want %q", c.Steps, tt.wantSteps)
			}
			for i, w := range tt.wantSteps {
				if !strings.HasPrefix(c.Steps[i], w) {
					t.Errorf("step %d = %q, want prefix %q", i, c.Steps[i], w)
				}
			}
			checkCompacted(t, h, before, 1)
			head := llm.TextOf(h.Messages()[0].Content)
			if !strings.HasPrefix(head, cutHeader) || !strings.Contains(head, task) {
				t.Errorf("head after cut = %q; want the note and the task", head)
			}
			if h.Tokens() > 3000 {
				t.Errorf("Tokens %d over the limit", h.Tokens())
			}
		})
	}
}

func TestCompactCannot(t *testing.T) {
	h := New(Config{ContextLimit: 1000})
	h.AppendUser(llm.Text{Text: task})
	h.AppendAssistant(asst(use("toolu_1")), llm.Usage{})
	h.AppendUser(result("toolu_1", strings.Repeat("z", 10_000)))
	m := &fakeModel{summary: "s"}
	c, err := h.Compact(context.Background(), m)
	if !errors.Is(err, ErrCannotCompact) {
		t.Fatalf("Compact = %v, want ErrCannotCompact", err)
	}
	if c.After <= 1000 || len(m.requests()) > maxCompactionSteps {
		t.Errorf("After = %d, %d model calls", c.After, len(m.requests()))
	}
	if err := h.validate(); err != nil {
		t.Errorf("failed compaction left an invalid history: %v", err)
	}
}

func TestCompactCancelled(t *testing.T) {
	h := toolSession(Config{ContextLimit: 1500, KeepRecent: 2}, 30, 100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Compact(ctx, &fakeModel{summary: "s"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Compact = %v, want context.Canceled", err)
	}
	if err := h.validate(); err != nil {
		t.Errorf("cancelled compaction left an invalid history: %v", err)
	}
}

func TestCompactAfterOverflow(t *testing.T) {
	// The estimate says all is well, but the API said otherwise.
	h := toolSession(Config{ContextLimit: 100_000, KeepRecent: 2}, 10, 100)
	if h.NeedsCompaction() {
		t.Fatal("precondition: no compaction needed by the estimate")
	}
	h.MarkOverflow(errors.New("prompt is too long: 201000 tokens > 200000 maximum"))
	if !h.NeedsCompaction() {
		t.Fatal("NeedsCompaction false after MarkOverflow")
	}
	c, err := h.Compact(context.Background(), &fakeModel{summary: "task: " + task})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Steps) == 0 || c.After >= c.Before {
		t.Errorf("compaction after overflow did nothing: %+v", c)
	}
}

// TestCompactSummaryFitsItsWindow checks that the summarisation call never
// gets more than the summariser's window holds: with a history much larger
// than the window (after a "prompt is too long"), it summarises the oldest
// part that fits, and again, within the step bound.
func TestCompactSummaryFitsItsWindow(t *testing.T) {
	cfg := Config{ContextWindow: 12_000, MaxTokens: 500, KeepRecent: 2}
	h := New(cfg)
	h.AppendUser(llm.Text{Text: task})
	for i := range 80 {
		id := fmt.Sprintf("toolu_%02d", i)
		h.AppendAssistant(asst(text(strings.Repeat("w", 1000)), use(id)), llm.Usage{})
		h.AppendUser(result(id, "ok"))
	}
	before := h.Messages()
	m := &fakeModel{summary: "task: " + task}
	if _, err := h.Compact(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) < 2 {
		t.Fatalf("%d summary calls; the history cannot fit one", len(reqs))
	}
	for i, r := range reqs {
		n := len(summaryPrompt) + len(llm.TextOf(r.Messages[0].Content))
		if tokens := int(float64(n) / defaultRatio); tokens > cfg.ContextWindow-summaryMaxTokens {
			t.Errorf("summary call %d sends ~%d tokens, window %d", i, tokens, cfg.ContextWindow)
		}
	}
	checkCompacted(t, h, before, 1)
}
