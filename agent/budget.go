package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// A meter sums what a run has spent, and what the runs started under it
// have: an agent run inside one of its tool calls (a subagent) runs under
// the call's ctx, finds the meter there and adds its cost and tokens to
// every run above it, so that a budget or token limit covers its
// subagents' spending, and a subagent stops, [BudgetLimit] or
// [TokenLimit], once a limit above it is reached.
type meter struct {
	parent    *meter
	max       float64 // the run's Config.MaxCostUSD; 0: none of its own
	maxTokens int64   // the run's Config.MaxTotalTokens; 0: none
	budgeted  bool    // it or a meter above it has a budget
	mu        sync.Mutex
	used      llm.Usage // the run's own and below, for limits and the Result
	spent     float64   // USD, the run's own and below
}

type meterKey struct{}

// newMeter returns ctx carrying a meter with budget max and token limit
// maxTokens, under ctx's own.
func newMeter(ctx context.Context, max float64, maxTokens int64) (context.Context, *meter) {
	parent, _ := ctx.Value(meterKey{}).(*meter)
	m := &meter{parent: parent, max: max, maxTokens: maxTokens, budgeted: max > 0 || parent != nil && parent.budgeted}
	return context.WithValue(ctx, meterKey{}, m), m
}

// add adds u, costing usd, to m and to every meter above it.
func (m *meter) add(u llm.Usage, usd float64) {
	for p := m; p != nil; p = p.parent {
		p.mu.Lock()
		p.used, p.spent = p.used.Add(u), p.spent+usd
		p.mu.Unlock()
	}
}

// total returns what m's run and the runs below it have used and cost.
func (m *meter) total() (llm.Usage, float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, m.spent
}

// reached returns the limit that m's run, or one above it, has reached:
// TokenLimit, BudgetLimit, or none.
func (m *meter) reached() State {
	for ; m != nil; m = m.parent {
		m.mu.Lock()
		tokens, spent := m.maxTokens > 0 && m.used.Context() >= m.maxTokens, m.max > 0 && m.spent >= m.max
		m.mu.Unlock()
		switch {
		case tokens:
			return TokenLimit
		case spent:
			return BudgetLimit
		}
	}
	return ""
}

// unpriced says that model, which a budget covers, has no price in the
// model table: its runs would spend nothing as far as the budget knew.
func unpriced(model string) error {
	return fmt.Errorf("agent: a budget (Config.MaxCostUSD) needs the model's price, and the model table (llm.LookupModel) has none for %q", model)
}
