package agent

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// pricedTurns answers every request with a call of tool, with input
// tokens that cost about usd at the default model's price ($2 a million).
func pricedTurns(usd float64, tool, input string) at.Reply {
	var n atomic.Int64
	return at.Repeat(at.ReplyFunc(func(*at.Request) at.Reply {
		i := n.Add(1)
		return at.NewStream().Usage(int(usd*500_000), 1, 0, 0).
			ToolUse(fmt.Sprintf("toolu_%d", i), tool, fmt.Sprintf(input, i)).Stop("tool_use")
	}))
}

func TestMaxCostUSD(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      float64
		want     State
		requests int
	}{
		// $1 a turn: the check before the second request stops the run.
		{"reached after the first turn", 0.5, BudgetLimit, 1},
		{"reached exactly", 2, BudgetLimit, 2},
		{"not reached", 100, IterationLimit, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client := fake(t, pricedTurns(1, "echo", `{"text":"call %d"}`))
			a := newAgent(t, client, Config{Registry: newTools(t).reg, MaxCostUSD: tc.max, MaxIterations: 3})
			res, err := a.Run(t.Context(), "spend")
			if err != nil {
				t.Fatal(err)
			}
			if res.State != tc.want || res.Iterations != tc.requests || len(srv.Requests()) != tc.requests {
				t.Errorf("result = %+v after %d requests; want %s after %d", res, len(srv.Requests()), tc.want, tc.requests)
			}
			// The completed turns are kept, each with its answered call.
			if got, want := len(a.cfg.History.Messages()), 1+2*tc.requests; got != want {
				t.Errorf("%d messages in the history, want %d: %v", got, want, texts(a.cfg.History))
			}
			validHistory(t, a.cfg.History)
		})
	}
}

// TestSubagentBudget runs an agent inside a tool call: its cost counts
// against the budget of the run that called the tool, and it stops once
// that budget is spent.
func TestSubagentBudget(t *testing.T) {
	type task struct {
		Task string `json:"task"`
	}
	for _, tc := range []struct {
		name        string
		model       string // the subagent's
		childStates []State
		childErr    string
	}{
		// The subagent's first turn spends the parent's budget; its check
		// before the second stops it, and the parent's before its second.
		{"spends the parent's budget", "", []State{BudgetLimit}, ""},
		{"model without a price", "claude-unpriced-1", []State{Failed}, "has none for \"claude-unpriced-1\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			childSrv, childClient := fake(t, pricedTurns(1, "echo", `{"text":"call %d"}`))
			child := newAgent(t, childClient, Config{Registry: newTools(t).reg,
				History: memory.New(memory.Config{Model: tc.model})})
			var states []State
			var errs []string
			delegate, err := tool.New("delegate", "Give a task to a subagent.", func(ctx context.Context, in task) (string, error) {
				res, err := child.Run(ctx, in.Task)
				states = append(states, res.State)
				if err != nil {
					errs = append(errs, err.Error())
				}
				return res.Text, err
			})
			if err != nil {
				t.Fatal(err)
			}
			srv, client := fake(t, pricedTurns(0.01, "delegate", `{"task":"task %d"}`))
			a := newAgent(t, client, Config{Tools: []*tool.Tool{delegate}, MaxCostUSD: 0.5, MaxIterations: 1})
			res, err := a.Run(t.Context(), "delegate")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.childStates, states); diff != "" {
				t.Errorf("the subagent's states (-want +got):\n%s", diff)
			}
			if tc.childErr != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.childErr)) {
				t.Errorf("the subagent's errors = %q, want one containing %q", errs, tc.childErr)
			}
			wantChild := 1
			if tc.childErr != "" {
				wantChild = 0
			}
			if n := len(childSrv.Requests()); n != wantChild {
				t.Errorf("the subagent sent %d requests, want %d", n, wantChild)
			}
			if tc.childErr == "" && (res.State != BudgetLimit || len(srv.Requests()) != 1) {
				t.Errorf("result = %+v after %d requests; want %s after 1", res, len(srv.Requests()), BudgetLimit)
			}
			validHistory(t, a.cfg.History)
		})
	}
}

func TestBudgetConfig(t *testing.T) {
	model := &scripted{}
	unpriced := memory.New(memory.Config{Model: "claude-unpriced-1"})
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string // a substring of the error; empty for none
	}{
		{"priced model", Config{Model: model, MaxCostUSD: 1}, ""},
		{"no budget, unpriced model", Config{Model: model, History: unpriced}, ""},
		{"unpriced model", Config{Model: model, MaxCostUSD: 1, History: unpriced}, `the model table (llm.LookupModel) has none for "claude-unpriced-1"`},
		{"negative", Config{Model: model, MaxCostUSD: -1}, "Config.MaxCostUSD is -1; want 0 (no budget) or a positive amount"},
		{"NaN", Config{Model: model, MaxCostUSD: math.NaN()}, "Config.MaxCostUSD is NaN"},
		{"infinite", Config{Model: model, MaxCostUSD: math.Inf(1)}, "Config.MaxCostUSD is +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if got := fmt.Sprint(err); (tc.err == "") != (err == nil) || !strings.Contains(got, tc.err) {
				t.Errorf("New error = %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestBudgetCountsSummaries: a summary call of a compaction spends the
// budget like a turn.
func TestBudgetCountsSummaries(t *testing.T) {
	srv, client := fake(t, at.Repeat(at.ReplyFunc(func(r *at.Request) at.Reply {
		if isSummary(r) {
			return at.NewStream().Usage(500_000, 1, 0, 0).Text("SUMMARY: the user asked things.").Stop("end_turn") // $1
		}
		return at.NewStream().Usage(5000, 1, 0, 0).ToolUse(fmt.Sprintf("toolu_%d", r.N), "echo", fmt.Sprintf(`{"text":"call %d"}`, r.N)).Stop("tool_use")
	})))
	a := newAgent(t, client, Config{History: longHistory(25), Registry: newTools(t).reg, MaxCostUSD: 0.5})
	res, err := a.Run(t.Context(), "go on")
	if err != nil {
		t.Fatal(err)
	}
	// The summary, then the first turn; the check before the second stops the run.
	if n := len(srv.Requests()); res.State != BudgetLimit || n != 2 {
		t.Errorf("result = %+v after %d requests; want %s after 2", res, n, BudgetLimit)
	}
	validHistory(t, a.cfg.History)
}
