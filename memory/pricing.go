package memory

import (
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// Price is a model's price in USD per million tokens.
type Price struct {
	InputPerMTok      float64
	OutputPerMTok     float64
	CacheWritePerMTok float64 // 5-minute cache writes, 1.25× input
	CacheReadPerMTok  float64 // cache hits, usually 0.1× input
}

// Pricing maps a model name to its price. A dated model name such as
// "claude-haiku-4-5-20251001" matches its undated key "claude-haiku-4-5";
// the longest matching key wins.
type Pricing map[string]Price

// DefaultPricing holds the Claude API list prices (platform.claude.com
// pricing page, October 2026) for 5-minute cache writes. It does not model
// 1-hour cache writes (2× input), batch discounts, or the prompt-length
// tiers of Haiku 5.5 (its lower tier is listed). Copy and edit it to
// change a price.
var DefaultPricing = Pricing{
	"claude-fable-5-1":  {10, 50, 12.50, 0.25},
	"claude-mythos-5-1": {10, 50, 12.50, 0.25},
	"claude-fable-5":    {10, 50, 12.50, 1},
	"claude-mythos-5":   {10, 50, 12.50, 1},
	"claude-opus-5-5":   {4, 20, 5, 0.20},
	"claude-opus-5":     {5, 25, 6.25, 0.50},
	"claude-sonnet-5-5": {2, 10, 2.50, 0.10},
	"claude-sonnet-5":   {2, 10, 2.50, 0.20},
	"claude-haiku-5-5":  {0.10, 0.50, 0.125, 0.01},
	"claude-opus-4-8":   {5, 25, 6.25, 0.50},
	"claude-opus-4-7":   {5, 25, 6.25, 0.50},
	"claude-opus-4-6":   {5, 25, 6.25, 0.50},
	"claude-opus-4-5":   {5, 25, 6.25, 0.50},
	"claude-opus-4-1":   {15, 75, 18.75, 1.50},
	"claude-opus-4-0":   {15, 75, 18.75, 1.50},
	"claude-opus-4":     {15, 75, 18.75, 1.50},
	"claude-sonnet-4-6": {3, 15, 3.75, 0.30},
	"claude-sonnet-4-5": {3, 15, 3.75, 0.30},
	"claude-sonnet-4-0": {3, 15, 3.75, 0.30},
	"claude-sonnet-4":   {3, 15, 3.75, 0.30},
	"claude-haiku-4-5":  {1, 5, 1.25, 0.10},
	"claude-3-5-haiku":  {0.80, 4, 1, 0.08},
	"claude-3-haiku":    {0.25, 1.25, 0.30, 0.03},
}

// Lookup returns the price of model: its own entry, or else the longest key
// that is model up to a "-" (so a date suffix still matches).
func (p Pricing) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best, found := "", false
	for k := range p {
		if len(k) > len(best) && strings.HasPrefix(model, k) && model[len(k)] == '-' {
			best, found = k, true
		}
	}
	return p[best], found
}

// Cost returns what usage u of model costs in USD. ok is false when model
// has no price.
func (p Pricing) Cost(model string, u llm.Usage) (usd float64, ok bool) {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0, false
	}
	usd = float64(u.InputTokens)*pr.InputPerMTok +
		float64(u.OutputTokens)*pr.OutputPerMTok +
		float64(u.CacheCreationInputTokens)*pr.CacheWritePerMTok +
		float64(u.CacheReadInputTokens)*pr.CacheReadPerMTok
	return usd / 1e6, true
}
