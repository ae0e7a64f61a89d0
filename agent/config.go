package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// Config configures an [Agent]. Only Model is required; every other field's
// zero value has the default documented on it.
type Config struct {
	// Model streams model turns. Required. An [*llm.Client] in production.
	Model llm.Model
	// System is the system prompt. Default none.
	System string
	// Thinking configures thinking. Default nil: the model's default (off
	// on older models, adaptive on current ones).
	Thinking *llm.ThinkingConfig
	// Effort is every turn's output_config.effort, one of the model's
	// [llm.ModelInfo].Efforts (another fails the run before any request):
	// on current models it sets how much the model thinks. Default: the model's.
	Effort string
	// Tools are the tools the model may call. Default none.
	Tools []*tool.Tool
	// ServerTools are the declarations of the tools the API runs itself
	// (web search, web fetch, code execution…: package llm/servertool
	// writes them), offered in every request. Their calls and results are
	// kept in the history as they came. Deferrable tools wait for the API's
	// tool search only when these hold one (package toolsearch adds it):
	// otherwise every tool is sent whole. Default none.
	ServerTools []json.RawMessage
	// Registry runs the calls; Tools are added to it. Pass one only for its
	// options or to share tools between agents. Default: a new one.
	Registry *tool.Registry
	// History is the conversation, which persists across runs. Its Config
	// names the turns' model and max_tokens, which also price and size it.
	// Default: memory.New(memory.Config{}); pass one to read or save it.
	History *memory.History

	// MaxIterations caps the model calls of one run, which then ends
	// [IterationLimit]. Default 20.
	MaxIterations int
	// FinalAnswer, at the iteration limit, makes one last call with tools
	// disabled, so that the run ends with an answer, not a tool result.
	FinalAnswer bool
	// MaxDuration caps the wall time of one run, which then ends
	// [TimeLimit]. Default 0: no limit.
	MaxDuration time.Duration
	// MaxTotalTokens caps one run's input (cached or not) and output tokens,
	// its subagents' included (as for MaxCostUSD), checked before each
	// model call; the run then ends [TokenLimit]. Default 0: no limit.
	MaxTotalTokens int64
	// MaxCostUSD caps one run's cost in USD, its subagents' included (runs
	// of an Agent inside its tool calls, under the call's ctx), checked
	// before each model call; the run then ends [BudgetLimit]. Costs are the
	// model table's list prices ([llm.LookupModel]): a model it does not
	// price cannot take a budget, and New says so. Default 0: no limit.
	MaxCostUSD float64
	// MaxAttempts is how many times a turn is tried whose stream fails
	// transiently ([llm.IsRetryable]) after output arrived, where the llm
	// client no longer retries, waiting by [Runtime].Backoff (by default
	// [llm.RetryWait]). Default 3; 1: no retry.
	MaxAttempts int
	// DisableCache turns off prompt caching, which is on by default.
	DisableCache bool

	// Hooks are called, in order, before and after each tool call, on the
	// prompt, when the model would stop and before a compaction (see
	// [Hook]). Default none.
	Hooks []Hook
	// Middleware wraps Model, for logging and tracing. Default nil.
	Middleware func(llm.Model) llm.Model
	// RepeatLimit is how many times in a row a tool may be called with the
	// same input: the call that reaches it is not run, and the model is told
	// it repeats itself. Default 3; negative turns the check off.
	RepeatLimit int
	// Logger receives a line for each unusual event: retries, unknown stop
	// reasons, compactions. Default: discard.
	Logger *slog.Logger
	// Runtime runs the tool calls and keeps the time (see [Runtime]).
	// Default nil: the Registry's calls on goroutines, and the system
	// clock. A Runtime of one's own brings its own tools, so Tools and
	// Registry must then be unset.
	Runtime Runtime
	// Observer sees each run from the outside: its events, tool calls and
	// compactions (see [Observer]; package telemetry traces them). Default
	// nil: none.
	Observer Observer

	// Name names the agent, for an Observer: in traces, gen_ai.agent.name
	// and the span "invoke_agent {Name}". Default none.
	Name string
	// ConversationID names the conversation the runs belong to, such as a
	// session's id: hooks get it as HookEvent.Session, traces as
	// gen_ai.conversation.id. Default none.
	ConversationID string
}

// An Agent runs the think → act → observe loop over one conversation. Its
// runs must not overlap, since they share its history; Agents are cheap.
type Agent struct {
	cfg   Config        // with defaults, and Model wrapped by Middleware
	model llm.ModelInfo // the history's model's, for its price and thinking
	rt    Runtime       // Config.Runtime, as the Observer wraps it
	busy  atomic.Bool   // a run is in progress
}

var errBusy = errors.New("agent: another run of this Agent is in progress")

// New returns an Agent for cfg, with defaults filled in. It returns an
// error naming the field if cfg is invalid, such as a negative limit.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: Config.Model is required")
	}
	limits := []string{"MaxIterations", "MaxDuration", "MaxTotalTokens", "MaxAttempts"}
	for i, v := range []int64{int64(cfg.MaxIterations), int64(cfg.MaxDuration), cfg.MaxTotalTokens, int64(cfg.MaxAttempts)} {
		if v < 0 {
			return nil, fmt.Errorf("agent: Config.%s is negative (%d)", limits[i], v)
		}
	}
	if i := slices.IndexFunc(cfg.Hooks, func(h Hook) bool { return h == nil }); i >= 0 {
		return nil, fmt.Errorf("agent: Config.Hooks[%d] is nil", i)
	}
	if cfg.History == nil {
		cfg.History = memory.New(memory.Config{})
	}
	hc := cfg.History.Config()
	model, _ := llm.LookupModel(hc.Model) // a model it lacks has no price
	switch usd := cfg.MaxCostUSD; {
	case usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0):
		return nil, fmt.Errorf("agent: Config.MaxCostUSD is %v; want 0 (no budget) or a positive amount", usd)
	case usd > 0 && model.Price == (llm.Price{}):
		return nil, unpriced(hc.Model)
	}
	if th := cfg.Thinking; th != nil && !th.Adaptive && th.BudgetTokens >= hc.MaxTokens {
		// The API's rule: the thinking budget is part of max_tokens.
		return nil, fmt.Errorf("agent: Config.Thinking.BudgetTokens (%d) must be below the history's MaxTokens (%d)", th.BudgetTokens, hc.MaxTokens)
	}
	if cfg.Runtime != nil && (cfg.Registry != nil || len(cfg.Tools) > 0) {
		return nil, errors.New("agent: Config.Tools and Config.Registry must be unset with a Config.Runtime, which brings its own tools")
	}
	cfg.MaxIterations = cmp.Or(cfg.MaxIterations, DefaultMaxIterations)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 3)
	cfg.RepeatLimit = cmp.Or(cfg.RepeatLimit, 3)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Registry == nil {
		cfg.Registry = tool.NewRegistry(tool.Config{Logger: cfg.Logger})
	}
	for _, t := range cfg.Tools {
		if t != nil { // Register says what a nil one is
			if got, ok := cfg.Registry.Lookup(t.Spec().Name); ok && got == t {
				continue // shared with another agent
			}
		}
		if err := cfg.Registry.Register(t); err != nil {
			return nil, fmt.Errorf("agent: Config.Tools: %w", err)
		}
	}
	if cfg.Middleware != nil {
		if cfg.Model = cfg.Middleware(cfg.Model); cfg.Model == nil {
			return nil, errors.New("agent: Config.Middleware returned a nil Model")
		}
	}
	rt := cmp.Or[Runtime](cfg.Runtime, goroutines{cfg.Registry})
	if cfg.Observer != nil {
		rt = cfg.Observer.Runtime(rt)
	}
	return &Agent{cfg: cfg, model: model, rt: rt}, nil
}

// Config returns the agent's configuration, with its defaults filled in
// and Model as Config.Middleware wrapped it.
func (a *Agent) Config() Config { return a.cfg }

// A State says how a run ended.
type State string

// The states a run can end in.
const (
	Finished       State = "finished"        // the model ended its turn: end_turn, stop_sequence or unknown
	Refused        State = "refused"         // safety classifiers stopped the turn; the history is rolled back
	IterationLimit State = "iteration_limit" // the run hit Config.MaxIterations
	Truncated      State = "truncated"       // the history's MaxTokens cut the answer off
	Cancelled      State = "cancelled"       // ctx ended or the caller stopped reading; see Agent.Stream
	Failed         State = "failed"          // an error, returned alongside, ended the run; the history is rolled back
	TimeLimit      State = "time_limit"      // the run hit Config.MaxDuration
	TokenLimit     State = "token_limit"     // the run, with its subagents, hit Config.MaxTotalTokens, or a subagent its parent's
	Blocked        State = "blocked"         // a hook blocked the prompt, and Result.Text says why; the history is as it was
	BudgetLimit    State = "budget_limit"    // the run, with its subagents, hit Config.MaxCostUSD, or a subagent its parent's
	Paused         State = "paused"          // Config.Runtime paused the run between two turns; see Runtime.Pause
)

// Result is the outcome of a run: [Agent.Run] returns it, and
// [Agent.Stream] yields it last, with the run's error.
type Result struct {
	Text       string    `json:"text"`       // the text of the model's last turn
	State      State     `json:"state"`      // how the run ended
	Iterations int       `json:"iterations"` // model calls, FinalAnswer's included, retries not
	Usage      llm.Usage `json:"usage"`      // summed over every model call, retries and subagents' included
	CostUSD    float64   `json:"cost_usd"`   // Usage at the prices in the model table (llm.LookupModel); 0 for a model it lacks
}

// Run runs the loop on input and returns its result: [Agent.Stream],
// drained. The error is non-nil exactly when Stream yields one.
func (a *Agent) Run(ctx context.Context, input string) (res Result, err error) {
	for ev, e := range a.Stream(ctx, input) {
		if r, ok := ev.(Result); ok {
			res, err = r, e
		}
	}
	return res, err
}
