package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/internal/telemetry" // otel hook
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// DefaultMaxIterations is the default cap on the model calls of one run.
const DefaultMaxIterations = 20

// Config configures an [Agent]. Only Model is required; the zero value of
// every other field has a sensible default, documented on the field.
type Config struct {
	// Model streams model turns. Required. An [*llm.Client] in production.
	Model llm.Model
	// System is the system prompt. Default none.
	System string
	// Thinking turns on extended thinking. Default nil: off.
	Thinking *llm.ThinkingConfig
	// Tools are the tools the model may call. Default none.
	Tools []*tool.Tool
	// Registry runs the calls, and is needed only for its options
	// (concurrency, timeouts, output caps) or to share tools between
	// agents: Tools are added to it. Default: a tool.NewRegistry with
	// default options.
	Registry *tool.Registry
	// History is the conversation, which persists across runs of the same
	// Agent. Its Config names the model the turns go to and their
	// max_tokens, which also price and size the history: they are set
	// there, once. Default: memory.New(memory.Config{}), the default model
	// ([llm.DefaultModel]) with [llm.DefaultMaxTokens].
	History *memory.History

	// MaxIterations caps the model calls of one run. Default
	// [DefaultMaxIterations]. A run that hits it ends with state
	// [IterationLimit].
	MaxIterations int
	// FinalAnswer, when the iteration limit is hit, makes one last call
	// with tools disabled, so that the run ends with a best-effort answer
	// rather than a tool result.
	FinalAnswer bool
	// MaxDuration caps the wall time of one run. Default 0: no limit. A run
	// that hits it ends with state [TimeLimit].
	MaxDuration time.Duration
	// MaxTotalTokens caps the tokens one run may use, summed over its model
	// turns: input (cached or not) and output. Default 0: no limit. It is
	// checked before each model call; a run that hits it ends with state
	// [TokenLimit].
	MaxTotalTokens int64
	// MaxAttempts is how many times one model turn is tried when its stream
	// fails after output arrived, the failure is transient (see
	// [llm.IsRetryable]) and the llm client no longer retries it itself.
	// Retries wait by [llm.Backoff], and not at all for a server asking
	// to wait longer than [llm.DefaultMaxRetryWait]. Default 3, as the llm
	// client's; 1 turns the retry off.
	MaxAttempts int
	// DisableCache turns off prompt caching, which is on by default: each
	// call then reads the previous call's prefix from the cache.
	DisableCache bool

	// Approve, when set, is consulted before each tool call, on the
	// goroutine reading the model's stream, so it may block to ask a
	// person. A non-nil error denies the call: the model gets the is_error
	// result "denied: <error>". Default nil: every call is approved.
	Approve func(ctx context.Context, call tool.Call) error
	// Middleware wraps Model, for logging and tracing. Default nil.
	Middleware func(llm.Model) llm.Model
	// RepeatLimit is how many times in a row the same tool may be called
	// with the same input. The call that reaches the limit is not run; the
	// model gets an is_error result saying it is repeating itself. Default
	// 3; a negative value turns the check off.
	RepeatLimit int
	// Logger receives a line for each unusual event: retries, unknown stop
	// reasons, compactions. Default: discard.
	Logger *slog.Logger

	// otel hook: the three fields below.

	// Name names the agent in traces: gen_ai.agent.name, and the span
	// name "invoke_agent {Name}". Default none: the span is "invoke_agent".
	Name string
	// ConversationID is the gen_ai.conversation.id of the runs' spans,
	// such as a session's id. Default none.
	ConversationID string
	// Telemetry says where the spans of runs, tool calls and compactions
	// go; an *llm.Client's own Telemetry says where its model calls' go.
	// Default: the global OpenTelemetry providers.
	Telemetry llm.Telemetry
}

// An Agent runs the think → act → observe loop over one conversation. Runs
// of one Agent must not overlap, since they share its history; to serve
// many conversations, make many Agents, which are cheap.
type Agent struct {
	cfg   Config
	model llm.Model
	log   *slog.Logger
	// retryDelay is the wait before retrying a turn; tests shorten it.
	retryDelay func(attempt int, err error) time.Duration
	busy       atomic.Bool            // a run is in progress
	otel       *telemetry.Instruments // otel hook
}

var (
	// ErrNoModel is returned by [New] when [Config.Model] is nil.
	ErrNoModel = errors.New("agent: Config.Model is required")
	// ErrBusy is yielded by [Agent.Stream] when another run of the same
	// Agent is in progress: the two would interleave in one history.
	ErrBusy = errors.New("agent: another run of this Agent is in progress")
)

// New returns an Agent for cfg, with defaults filled in. It returns an
// error naming the field if cfg is invalid, such as a negative limit.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, ErrNoModel
	}
	for _, lim := range []struct {
		name string
		v    int64
	}{
		{"MaxIterations", int64(cfg.MaxIterations)},
		{"MaxDuration", int64(cfg.MaxDuration)},
		{"MaxTotalTokens", cfg.MaxTotalTokens},
		{"MaxAttempts", int64(cfg.MaxAttempts)},
	} {
		if lim.v < 0 {
			return nil, fmt.Errorf("agent: Config.%s is negative (%d)", lim.name, lim.v)
		}
	}
	if cfg.History == nil {
		cfg.History = memory.New(memory.Config{})
	}
	if th, max := cfg.Thinking, cfg.History.Config().MaxTokens; th != nil && !th.Adaptive && th.BudgetTokens >= max {
		// The API's rule: the thinking budget is part of max_tokens.
		return nil, fmt.Errorf("agent: Config.Thinking.BudgetTokens (%d) must be below the history's MaxTokens (%d)",
			th.BudgetTokens, max)
	}
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = DefaultMaxIterations
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.RepeatLimit == 0 {
		cfg.RepeatLimit = 3
	}
	if cfg.Registry == nil {
		cfg.Registry = tool.NewRegistry(tool.Config{Logger: cfg.Logger})
	}
	for _, t := range cfg.Tools {
		if got, ok := cfg.Registry.Lookup(t.Spec().Name); ok && got == t {
			continue // shared with another agent
		}
		if err := cfg.Registry.Register(t); err != nil {
			return nil, fmt.Errorf("agent: Config.Tools: %w", err)
		}
	}
	a := &Agent{cfg: cfg, model: cfg.Model, log: cfg.Logger, retryDelay: llm.Backoff}
	a.otel = instruments(cfg.Telemetry) // otel hook
	if cfg.Middleware != nil {
		a.model = cfg.Middleware(cfg.Model)
		if a.model == nil {
			return nil, errors.New("agent: Config.Middleware returned a nil Model")
		}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a, nil
}

// History returns the agent's conversation history.
func (a *Agent) History() *memory.History { return a.cfg.History }

// A State says how a run ended.
type State string

// The states a run can end in.
const (
	// Finished means the model ended its turn: end_turn, stop_sequence, or
	// an unknown stop reason.
	Finished State = "finished"
	// Refused means the model's safety classifiers stopped the turn. The
	// history is as it was before the run: the refused exchange is taken
	// back out of it.
	Refused State = "refused"
	// IterationLimit means the run hit Config.MaxIterations.
	IterationLimit State = "iteration_limit"
	// Truncated means the answer was cut off by the history's MaxTokens.
	Truncated State = "truncated"
	// Cancelled means the context was cancelled, or the caller stopped
	// reading the stream. The prompt and the answer shown so far stay in
	// the history, the answer marked as interrupted.
	Cancelled State = "cancelled"
	// Failed means an error ended the run; it is returned alongside. The
	// history is as it was before the run.
	Failed State = "failed"
	// TimeLimit means the run hit Config.MaxDuration.
	TimeLimit State = "time_limit"
	// TokenLimit means the run hit Config.MaxTotalTokens.
	TokenLimit State = "token_limit"
)

// Result is the outcome of a run.
type Result struct {
	// Text is the text of the model's last turn.
	Text string `json:"text"`
	// State says how the run ended.
	State State `json:"state"`
	// Iterations counts the model calls of the run: retries not included,
	// the FinalAnswer call included.
	Iterations int `json:"iterations"`
	// Usage sums token use over the run's model calls, retries included.
	Usage llm.Usage `json:"usage"`
	// CostUSD prices Usage at the model's price in [llm.Models]; zero for
	// a model the table does not know.
	CostUSD float64 `json:"cost_usd"`
}

// Run runs the loop on input and returns its result: [Agent.Stream],
// drained. The error is non-nil exactly when Stream yields one.
func (a *Agent) Run(ctx context.Context, input string) (Result, error) {
	var res Result
	var err error
	for ev, e := range a.Stream(ctx, input) {
		if d, ok := ev.(Done); ok {
			res = d.Result
		}
		if e != nil {
			err = e
		}
	}
	return res, err
}
