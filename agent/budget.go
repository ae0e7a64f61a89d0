package agent

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// A meter sums what a run has spent, and what the runs started under it
// have: an agent run inside one of its tool calls (a subagent) runs under
// the call's ctx, finds the meter there and adds its cost to every run
// above it, so that a budget covers its subagents' spending, and a
// subagent stops, [BudgetLimit], once a budget above it is spent.
type meter struct {
	parent *meter
	max    float64 // the run's Config.MaxCostUSD; 0: none of its own
	mu     sync.Mutex
	spent  float64
}

type meterKey struct{}

// newMeter returns ctx carrying a meter with budget max, under ctx's own.
func newMeter(ctx context.Context, max float64) (context.Context, *meter) {
	parent, _ := ctx.Value(meterKey{}).(*meter)
	m := &meter{parent: parent, max: max}
	return context.WithValue(ctx, meterKey{}, m), m
}

// add adds usd to m and to every meter above it.
func (m *meter) add(usd float64) {
	for ; m != nil; m = m.parent {
		m.mu.Lock()
		m.spent += usd
		m.mu.Unlock()
	}
}

// reached reports whether m's budget, or one above it, is spent.
func (m *meter) reached() bool {
	for ; m != nil; m = m.parent {
		m.mu.Lock()
		spent := m.max > 0 && m.spent >= m.max
		m.mu.Unlock()
		if spent {
			return true
		}
	}
	return false
}

// budgeted reports whether m or a meter above it has a budget.
func (m *meter) budgeted() bool {
	for ; m != nil; m = m.parent {
		if m.max > 0 {
			return true
		}
	}
	return false
}

// checkBudget says why a run of model cannot keep to a budget of max USD:
// a negative or infinite one, or a model without a price.
func checkBudget(max float64, model string) error {
	switch {
	case max < 0 || math.IsNaN(max) || math.IsInf(max, 0):
		return fmt.Errorf("agent: Config.MaxCostUSD is %v; want 0 (no budget) or a positive amount", max)
	case max > 0:
		return unpriced(model)
	}
	return nil
}

// unpriced says that model has no price in the model table, if so: its
// runs would spend nothing as far as a budget knew.
func unpriced(model string) error {
	if info, _ := llm.LookupModel(model); info.Price != (llm.Price{}) {
		return nil
	}
	return fmt.Errorf("agent: a budget (Config.MaxCostUSD) needs the model's price, and the model table (llm.LookupModel) has none for %q", model)
}
