package durable

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// WorkflowName is the name the workflow is registered under, for starting
// it by name from another language or the temporal CLI.
const WorkflowName = "agentloop.Run"

// Defaults of [Input]'s fields.
const (
	DefaultHeartbeat    = 10 * time.Second
	DefaultModelTimeout = 10 * time.Minute
	DefaultToolTimeout  = 10 * time.Minute
)

// Input starts a durable run: a prompt, the conversation it continues, and
// the limits of package agent's Config that make sense in a workflow. The
// zero value of every field but Prompt works; defaults are documented on
// each field.
type Input struct {
	// Prompt is the user's message. Required.
	Prompt string `json:"prompt"`
	// History is the conversation so far, such as the Result.History of
	// the previous run. Default empty: a new conversation.
	History []llm.Message `json:"history,omitempty"`

	// Model is the model of the turns. Default [llm.DefaultModel].
	Model string `json:"model,omitempty"`
	// MaxTokens is the max_tokens of each turn. Default [llm.DefaultMaxTokens].
	MaxTokens int `json:"max_tokens,omitempty"`
	// ContextWindow is the model's context window. Default: the model's in
	// the model table ([llm.LookupModel]).
	ContextWindow int `json:"context_window,omitempty"`
	// ContextLimit is the compaction threshold (see memory.Config).
	ContextLimit int `json:"context_limit,omitempty"`
	// System is the system prompt. Default: the worker's Config.System.
	System string `json:"system,omitempty"`
	// AppendSystem is added to the system prompt, System or the worker's,
	// after a blank line, as the CLI's --append-system is. Default none.
	AppendSystem string `json:"append_system,omitempty"`
	// Thinking turns on extended thinking. Default off.
	Thinking *llm.ThinkingConfig `json:"thinking,omitempty"`
	// Compaction overrides the history's strategy for staying under the
	// context limit (see memory.Config.Compaction): "server", "client" or
	// "off". Default: by model. A workflow never asks for an on-demand
	// server summary; threshold compaction on the server still runs.
	Compaction string `json:"compaction,omitempty"`
	// Effort is sent as output_config.effort (see agent.Config.Effort).
	// Default: the model's.
	Effort string `json:"effort,omitempty"`
	// DisableCache turns prompt caching off.
	DisableCache bool `json:"disable_cache,omitempty"`
	// Schema asks for a final answer that is JSON valid against it, as
	// typed.Configure does: Result.Output then holds it. A run that ends
	// without one fails with a non-retryable application error of type
	// "OutputError" whose details are the [*typed.OutputError]. Default
	// none.
	Schema *jsonschema.Schema `json:"schema,omitempty"`
	// Reasks is as in typed.Options: default 2, negative none. The count
	// starts over when a run continues as new.
	Reasks int `json:"reasks,omitempty"`

	// MaxIterations caps the model calls of the run. Default 20, as in
	// agent.Config.
	MaxIterations int `json:"max_iterations,omitempty"`
	// FinalAnswer makes one last tool-less call at the iteration limit.
	FinalAnswer bool `json:"final_answer,omitempty"`
	// MaxDuration caps the run's time, measured by the workflow's clock,
	// approvals included. Default 0: none.
	MaxDuration time.Duration `json:"max_duration,omitempty"`
	// MaxTotalTokens caps the tokens of the run. Default 0: none.
	MaxTotalTokens int64 `json:"max_total_tokens,omitempty"`
	// MaxCostUSD caps the cost of the run, as in agent.Config: the model
	// must have a price. Default 0: none.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// RepeatLimit is as in agent.Config: default 3, negative turns it off.
	RepeatLimit int `json:"repeat_limit,omitempty"`

	// Tools, if not nil, names the worker's tools the run may call, as a
	// subagent's run does. Default nil: all of them.
	Tools []string `json:"tools"`

	// Approve names the tools whose calls wait for [Approve]; "*" names
	// every tool. Default none.
	Approve []string `json:"approve,omitempty"`

	// TurnsPerRun, if set, caps the model turns of one workflow run, after
	// which it continues as new. Default 0: a run continues as new when
	// Temporal suggests it (its history grows large), between two turns.
	TurnsPerRun int `json:"turns_per_run,omitempty"`
	// Heartbeat is the activities' heartbeat timeout: how soon a dead
	// worker is noticed. Default [DefaultHeartbeat].
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// ModelTimeout bounds one attempt of a model turn. Default
	// [DefaultModelTimeout].
	ModelTimeout time.Duration `json:"model_timeout,omitempty"`
	// ToolTimeout bounds one attempt of a tool call, on top of the tool's
	// own timeout in its registry. Default [DefaultToolTimeout].
	ToolTimeout time.Duration `json:"tool_timeout,omitempty"`
	// ToolAttempts is how many times a tool call is tried when its worker
	// fails. Default 5. Tools in Config.AtMostOnce are tried once.
	ToolAttempts int `json:"tool_attempts,omitempty"`

	// Stream says that a caller watches the run from its start, with
	// [Stream], as if its lease began with the run: its first turn's text
	// streams too. Every run's events can be read with [Stream]; while
	// someone watches, each batch of text is a signal in the workflow
	// history, and otherwise a turn's text comes whole at its end.
	// Default off.
	Stream bool `json:"stream,omitempty"`

	// Resume is set by the workflow itself when it continues as new.
	Resume *Resume `json:"resume,omitempty"`
}

// Resume is the state of a run that continues as new, carried to the next
// workflow run: the agent's run paused between two turns (agent.Paused),
// and goes on there with what is left of its limits. A call's repeat count
// starts over.
type Resume struct {
	// Before is the history before the run, for a run that fails or is
	// refused to put back; nil when it is the first BeforeLen messages of
	// History, so that a run does not carry its conversation twice.
	Before    []llm.Message `json:"before,omitempty"`
	BeforeLen int           `json:"before_len,omitempty"`
	// History is the conversation so far, as memory/jsonl.Encode
	// writes it: with the exact token counts the API reported, which
	// Input.History, a list of messages, cannot carry.
	History []byte `json:"history"`
	// Iteration and Usage are the model calls and tokens of the workflow
	// runs so far.
	Iteration int        `json:"iteration"`
	Usage     llm.Usage  `json:"usage"`
	Tools     []ToolInfo `json:"tools"`
	// Agents are the worker's subagents, and SubUsage and SubCostUSD
	// what their runs used so far.
	Agents     []AgentInfo `json:"agents,omitempty"`
	SubUsage   llm.Usage   `json:"sub_usage"`
	SubCostUSD float64     `json:"sub_cost_usd,omitempty"`
	Started    time.Time   `json:"started"`
	Runs       int         `json:"runs"`
	// Prefix names the first messages of History as the previous run's
	// last model request sent them, for the next turn to name.
	Prefix *Prefix `json:"prefix,omitempty"`
	Seq    int     `json:"seq,omitempty"`    // of the last streamed event
	Events []Event `json:"events,omitempty"` // the latest, for pollers that are behind
}

// ToolInfo describes a tool of the worker to the workflow, in its [Offer].
type ToolInfo struct {
	Spec llm.ToolSpec `json:"spec"`
	// Sequential, a tool alone in a queue, is set only in the offers of
	// workers from before [tool.Tool].Queue took its place: their runs
	// still replay with it.
	Sequential bool   `json:"sequential,omitempty"`
	Queue      string `json:"queue,omitempty"` // the tool's [tool.Tool].Queue
	AtMostOnce bool   `json:"at_most_once,omitempty"`
}

// Result is the outcome of a durable run: package agent's Result, and the
// conversation after the run, to continue it with.
type Result struct {
	agent.Result
	// Output is the final answer as JSON valid against Input.Schema, set
	// only with one.
	Output  json.RawMessage `json:"structured_output,omitempty"`
	History []llm.Message   `json:"history"`
	// Runs counts the workflow runs, continue-as-new included.
	Runs int `json:"runs"`
}

// TurnInput is the input of [Activities.ModelTurn].
type TurnInput struct {
	// Request is the turn's request. When Prefix is set, its Messages are
	// empty: they are the Prefix's, then New.
	Request llm.Request `json:"request"`
	// Prefix names the messages that the request begins with, which an
	// earlier request of the run sent.
	Prefix *Prefix `json:"prefix,omitempty"`
	// New are the messages after the Prefix's.
	New []llm.Message `json:"new,omitempty"`
	// Stream signals the turn's text to the workflow as it streams.
	Stream bool `json:"stream,omitempty"`
	// Eager signals each tool call to the workflow as its input
	// completes, for it to start the call at once.
	Eager bool `json:"eager,omitempty"`
}

// TurnOutput is a model turn, assembled.
type TurnOutput struct {
	Message   llm.Message    `json:"message"`
	Stop      llm.StopReason `json:"stop"`
	Usage     llm.Usage      `json:"usage"`
	Container string         `json:"container,omitempty"`
	// Source names the attempt that streamed the turn, whose signalled
	// calls are the turn's.
	Source string `json:"source,omitempty"`
	// Cut holds the blocks that max_tokens cut off, for the workflow to
	// decide on, as the loop does.
	Cut llm.Message `json:"cut"`
}

// ToolOutput is the outcome of [Activities.CallTool]: the call's result
// and its own running time on the worker, 0 if it did not run.
//
// Its JSON is the result's with a "duration_ns" added, so that a workflow
// history recorded before Duration existed still decodes, and so does a
// new one on a worker that does not know Duration yet.
type ToolOutput struct {
	llm.ToolResult
	Duration time.Duration
}

// MarshalJSON writes the result's JSON object with "duration_ns" in it.
func (o ToolOutput) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(o.ToolResult)
	if err != nil {
		return nil, err
	}
	// b is an object, never empty: it has at least its "type".
	return fmt.Appendf(b[:len(b)-1], `,"duration_ns":%d}`, int64(o.Duration)), nil
}

// UnmarshalJSON reads what MarshalJSON writes, or a bare result.
func (o *ToolOutput) UnmarshalJSON(data []byte) error {
	var d struct {
		Duration time.Duration `json:"duration_ns"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return err
	}
	o.Duration = d.Duration
	return o.ToolResult.UnmarshalJSON(data)
}

// Decision answers a call that waits for approval.
type Decision struct {
	// CallID is the tool_use id of the call.
	CallID string `json:"call_id"`
	// Allow runs the call; otherwise the model is told it was denied.
	Allow bool `json:"allow"`
	// Reason is told to the model when the call is denied.
	Reason string `json:"reason,omitempty"`
}

// Names of the workflow's update and query handlers.
const (
	UpdateApprove = "approve"
	QueryPending  = "pending"
)
