package looprules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// TestThinks checks when a request counts as thinking, which decides
// whether context editing clears old thinking: on an adaptive-only model
// always, since its thinking cannot be off, and elsewhere only as asked.
func TestThinks(t *testing.T) {
	for _, tt := range []struct {
		model string
		th    *llm.ThinkingConfig
		want  bool
	}{
		{"claude-opus-5-5", nil, true},
		{"claude-sonnet-5-5", &llm.ThinkingConfig{}, true},
		{"claude-haiku-5-5", nil, false},
		{"claude-haiku-5-5", &llm.ThinkingConfig{Adaptive: true}, true},
		{"claude-sonnet-4-5", nil, false},
		{"claude-sonnet-4-5", &llm.ThinkingConfig{BudgetTokens: 2048}, true},
		{"claude-sonnet-4-5", &llm.ThinkingConfig{}, false},
	} {
		if got := thinks(tt.model, tt.th); got != tt.want {
			t.Errorf("thinks(%s, %+v) = %v, want %v", tt.model, tt.th, got, tt.want)
		}
	}
}

// TestInterrupt checks how a run cut short ends its history: after the
// user's prompt, with what was shown and the mark; after an answer, not at
// all, since the exchange is complete.
func TestInterrupt(t *testing.T) {
	for _, tt := range []struct {
		name, shown string
		answered    bool
		want        []llm.Block // the last message's content
	}{
		{"shown text kept", "partial answer", false, []llm.Block{llm.Text{Text: "partial answer"}, llm.Text{Text: Interrupted}}},
		{"blank text dropped", " \n", false, []llm.Block{llm.Text{Text: Interrupted}}},
		{"answered", "more", true, []llm.Block{llm.Text{Text: "done"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := memory.New(memory.Config{})
			h.AppendUser(llm.Text{Text: "hi"})
			if tt.answered {
				h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "done"}}}, llm.Usage{})
			}
			Interrupt(h, tt.shown)
			msgs := h.Messages()
			if diff := cmp.Diff(tt.want, msgs[len(msgs)-1].Content); diff != "" {
				t.Errorf("last message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerCompaction checks that only a turn with a compaction block
// reports one, counted from the history before it and the turn's usage.
func TestServerCompaction(t *testing.T) {
	h := memory.New(memory.Config{})
	h.AppendUser(llm.Text{Text: "hi"})
	plain := llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "ok"}}}
	if _, ok := ServerCompaction(h, plain, llm.Usage{InputTokens: 5}); ok {
		t.Error("a turn without a compaction block reports a compaction")
	}
	compacted := llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.RawBlock{Type: apirules.CompactionBlock, JSON: []byte(`{"type":"compaction","content":"sum"}`)}, llm.Text{Text: "ok"}}}
	c, ok := ServerCompaction(h, compacted, llm.Usage{InputTokens: 5, OutputTokens: 2})
	want := memory.Compaction{Before: h.Tokens(), After: 7, Steps: []string{"on the server"}}
	if diff := cmp.Diff(want, c); !ok || diff != "" {
		t.Errorf("ServerCompaction = %v (-want +got):\n%s", ok, diff)
	}
}
