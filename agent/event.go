package agent

import (
	"encoding/json"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// An Event is one step of a run, as [Agent.Stream] yields it: one of the
// types in this file or the [Result] that ends the run, a sealed set. The
// tags give the CLI's --json shape.
type Event interface{ isEvent() }

// TurnStart opens a model turn. Iteration counts model calls from 1; a
// retried turn keeps its number.
type TurnStart struct {
	Iteration int `json:"iteration"`
}

// TextDelta is a fragment of the model's visible answer.
type TextDelta struct {
	Text string `json:"text"`
}

// ThinkingDelta is a fragment of the model's extended thinking.
type ThinkingDelta struct {
	Thinking string `json:"thinking"`
}

// ToolCallStart says the model began writing the input of a call to Name.
type ToolCallStart struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ToolInputDelta is a fragment of the JSON input of the call ID, split
// anywhere; [ToolCall] carries the whole input.
type ToolInputDelta struct {
	ID          string `json:"id"`
	PartialJSON string `json:"partial_json"`
}

// ToolCall says the input of call ID is complete and the call starts now,
// maybe while the model still streams the rest of its turn.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolDone is the outcome of call ID as the model gets it: Content is its
// text, with "[image]" for each image; IsError marks a failed, denied or
// refused call; Duration is the call's own running time, 0 if not run.
type ToolDone struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Content  string        `json:"content"`
	IsError  bool          `json:"is_error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// UsageUpdate reports token use after each model turn: the turn's, the
// run's so far, and the run's cost so far in USD.
type UsageUpdate struct {
	Turn    llm.Usage `json:"turn"`
	Total   llm.Usage `json:"total"`
	CostUSD float64   `json:"cost_usd"`
}

// Compacted says the history was compacted, as the Compaction reports.
type Compacted struct{ memory.Compaction }

// Retry says the current model turn failed and is sent again, as attempt
// Attempt (2 for the first retry). With Discard, the caller must throw away
// what it received since the turn's [TurnStart]: none of it is kept.
type Retry struct {
	Attempt int    `json:"attempt"`
	Error   string `json:"error"` // Err's text
	Err     error  `json:"-"`     // why, for errors.Is and errors.As
	Discard bool   `json:"discard"`
}

// Repaired says the history, about to be sent, broke a rule of the API,
// such as a tool call left without its result, and was repaired; Fixes
// says how.
type Repaired struct {
	Fixes []string `json:"fixes"`
}

func (TurnStart) isEvent()      {}
func (TextDelta) isEvent()      {}
func (ThinkingDelta) isEvent()  {}
func (ToolCallStart) isEvent()  {}
func (ToolInputDelta) isEvent() {}
func (ToolCall) isEvent()       {}
func (ToolDone) isEvent()       {}
func (UsageUpdate) isEvent()    {}
func (Compacted) isEvent()      {}
func (Retry) isEvent()          {}
func (Repaired) isEvent()       {}
func (Result) isEvent()         {}
