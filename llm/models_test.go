package llm

import (
	"math"
	"testing"
)

// The model table finds dated names, prices every kind of token, and
// knows nothing of other vendors' models.
func TestLookupModel(t *testing.T) {
	tests := []struct {
		model  string
		u      Usage
		usd    float64
		window int
		ok     bool
	}{
		{"claude-sonnet-4-5", Usage{InputTokens: 1_000_000}, 3, 200_000, true},
		{"claude-sonnet-4-5-20250929", Usage{OutputTokens: 1_000_000}, 15, 200_000, true},
		{"claude-haiku-4-5", Usage{CacheCreationInputTokens: 1_000_000, CacheReadInputTokens: 1_000_000}, 1.25 + 0.10, 200_000, true},
		{"claude-opus-4-20250514", Usage{InputTokens: 1_000_000}, 15, 200_000, true},
		{"claude-opus-5-5", Usage{InputTokens: 500_000, OutputTokens: 100_000}, 2 + 2, 1_000_000, true},
		{"claude-sonnet-5-20260301", Usage{InputTokens: 1_000_000}, 2, 1_000_000, true},
		{DefaultModel, Usage{}, 0, 1_000_000, true},
		{"gpt-4o", Usage{InputTokens: 1}, 0, 0, false},
		{"claude-sonnet", Usage{InputTokens: 1}, 0, 0, false},
		{"claude-sonnet-4-50", Usage{InputTokens: 1}, 0, 0, false},
	}
	for _, tt := range tests {
		m, ok := LookupModel(tt.model)
		if got := m.Price.Cost(tt.u); ok != tt.ok || math.Abs(got-tt.usd) > 1e-9 || m.ContextWindow != tt.window {
			t.Errorf("LookupModel(%q) = %+v, %v costing %v; want window %d, %v, costing %v", tt.model, m, ok, got, tt.window, tt.ok, tt.usd)
		}
	}
	for name, m := range Models {
		if m.ContextWindow <= 0 || m.MaxOutput <= 0 || m.MaxOutput >= m.ContextWindow || m.Price.Input <= 0 {
			t.Errorf("Models[%q] = %+v: limits or price missing", name, m)
		}
	}
}
