package looprules

import (
	"testing"

	"github.com/agentloop/agentloop/llm"
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
