package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// An Event is one step of a run, as [Agent.Stream] yields it. The set is
// sealed: it is one of the types in this file, and a type switch over them
// covers every case.
//
// Every event marshals to a JSON object whose "type" field names it in
// snake_case ("turn_start", "text_delta", …), so that a program can print a
// run as JSON lines and another can read it back with [UnmarshalEvent].
type Event interface{ isEvent() }

// TurnStart opens a model turn. Iteration counts model calls from 1. A turn
// retried after a failure keeps its iteration number.
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

// ToolCallStart says the model opened a tool_use block: it is now writing
// the input of a call to the tool Name.
type ToolCallStart struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ToolInputDelta is a fragment of the JSON input of the call ID, as the
// model streams it. Fragments split anywhere; only [ToolCall] carries the
// whole input.
type ToolInputDelta struct {
	ID          string `json:"id"`
	PartialJSON string `json:"partial_json"`
}

// ToolCall says the input of call ID is complete and the call starts now,
// possibly while the model is still streaming the rest of its turn.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResult is the outcome of call ID as it is sent back to the model.
// Content is the text of the result. IsError marks a failed, denied or
// refused call; the model sees it and may correct itself. Duration is the
// call's own running time, from its start to its finish, even when the
// model was still streaming then; a call that was not run took 0.
type ToolResult struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Content  string        `json:"content"`
	IsError  bool          `json:"is_error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Usage reports token use after each model turn: Turn for the turn alone,
// Total for the run so far, and the run's cost so far in US dollars.
type Usage struct {
	Turn    llm.Usage `json:"turn"`
	Total   llm.Usage `json:"total"`
	CostUSD float64   `json:"cost_usd"`
}

// Compaction says the history was compacted from Before to After tokens
// (estimated). Steps names what was done, in order.
type Compaction struct {
	Before int      `json:"before"`
	After  int      `json:"after"`
	Steps  []string `json:"steps,omitempty"`
}

// Retry says the current model turn failed and is being sent again.
// Attempt is the number of the attempt about to start (2 for the first
// retry). When Discard is true, the caller must throw away everything it
// received for the current turn since its [TurnStart]: text, thinking and
// tool calls. None of it reached the history.
type Retry struct {
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
	Discard bool   `json:"discard"`
}

// Done ends every stream, successful or not. Error repeats, as text, the
// error yielded with it, so that a JSON transcript shows it too.
type Done struct {
	Result Result `json:"result"`
	Error  string `json:"error,omitempty"`
}

func (TurnStart) isEvent()      {}
func (TextDelta) isEvent()      {}
func (ThinkingDelta) isEvent()  {}
func (ToolCallStart) isEvent()  {}
func (ToolInputDelta) isEvent() {}
func (ToolCall) isEvent()       {}
func (ToolResult) isEvent()     {}
func (Usage) isEvent()          {}
func (Compaction) isEvent()     {}
func (Retry) isEvent()          {}
func (Done) isEvent()           {}

// EventType returns the JSON "type" of e, such as "tool_call".
func EventType(e Event) string {
	switch e.(type) {
	case TurnStart:
		return "turn_start"
	case TextDelta:
		return "text_delta"
	case ThinkingDelta:
		return "thinking_delta"
	case ToolCallStart:
		return "tool_call_start"
	case ToolInputDelta:
		return "tool_input_delta"
	case ToolCall:
		return "tool_call"
	case ToolResult:
		return "tool_result"
	case Usage:
		return "usage"
	case Compaction:
		return "compaction"
	case Retry:
		return "retry"
	case Done:
		return "done"
	}
	return ""
}

// typed marshals v, a struct, with e's type as its first field. v is e
// converted to a type without methods, so that json.Marshal does not call
// MarshalJSON again.
func typed(e Event, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	typ := EventType(e)
	out := make([]byte, 0, len(body)+len(typ)+12)
	out = append(out, `{"type":"`...)
	out = append(out, typ...) // event types need no escaping
	out = append(out, '"')
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// MarshalJSON writes the event with its "type".
func (e TurnStart) MarshalJSON() ([]byte, error) { type w TurnStart; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e TextDelta) MarshalJSON() ([]byte, error) { type w TextDelta; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e ThinkingDelta) MarshalJSON() ([]byte, error) { type w ThinkingDelta; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e ToolCallStart) MarshalJSON() ([]byte, error) { type w ToolCallStart; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e ToolInputDelta) MarshalJSON() ([]byte, error) { type w ToolInputDelta; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type". A missing input is
// written as {}, as the API would see it.
func (e ToolCall) MarshalJSON() ([]byte, error) {
	type w ToolCall
	if len(e.Input) == 0 {
		e.Input = json.RawMessage("{}")
	}
	return typed(e, w(e))
}

// MarshalJSON writes the event with its "type".
func (e ToolResult) MarshalJSON() ([]byte, error) { type w ToolResult; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e Usage) MarshalJSON() ([]byte, error) { type w Usage; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e Compaction) MarshalJSON() ([]byte, error) { type w Compaction; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e Retry) MarshalJSON() ([]byte, error) { type w Retry; return typed(e, w(e)) }

// MarshalJSON writes the event with its "type".
func (e Done) MarshalJSON() ([]byte, error) { type w Done; return typed(e, w(e)) }

// UnmarshalEvent decodes one event written by its MarshalJSON method. It
// lets a program replay a run saved as JSON lines.
func UnmarshalEvent(data []byte) (Event, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	var e Event
	var err error
	switch head.Type {
	case "turn_start":
		e, err = decode[TurnStart](data)
	case "text_delta":
		e, err = decode[TextDelta](data)
	case "thinking_delta":
		e, err = decode[ThinkingDelta](data)
	case "tool_call_start":
		e, err = decode[ToolCallStart](data)
	case "tool_input_delta":
		e, err = decode[ToolInputDelta](data)
	case "tool_call":
		e, err = decode[ToolCall](data)
	case "tool_result":
		e, err = decode[ToolResult](data)
	case "usage":
		e, err = decode[Usage](data)
	case "compaction":
		e, err = decode[Compaction](data)
	case "retry":
		e, err = decode[Retry](data)
	case "done":
		e, err = decode[Done](data)
	default:
		return nil, fmt.Errorf("agent: unknown event type %q", head.Type)
	}
	return e, err
}

// decode unmarshals data into an E. The event types have no UnmarshalJSON
// method, and the extra "type" field is ignored.
func decode[E Event](data []byte) (Event, error) {
	var e E
	err := json.Unmarshal(data, &e)
	return e, err
}
