package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// eventType names ev in the --json output: its Go type in snake_case, such
// as "tool_call". Encoding events is the CLI's business, not the agent's,
// so the names live here.
func eventType(ev agent.Event) string {
	switch ev.(type) {
	case agent.TurnStart:
		return "turn_start"
	case agent.TextDelta:
		return "text_delta"
	case agent.ThinkingDelta:
		return "thinking_delta"
	case agent.ToolCallStart:
		return "tool_call_start"
	case agent.ToolInputDelta:
		return "tool_input_delta"
	case agent.ToolCall:
		return "tool_call"
	case agent.ToolDone:
		return "tool_done"
	case agent.UsageUpdate:
		return "usage_update"
	case agent.Compacted:
		return "compacted"
	case agent.Retry:
		return "retry"
	case agent.Result:
		return "done"
	}
	return fmt.Sprintf("%T", ev) // a new event type the switch does not know yet
}

// marshalEvent writes ev as one JSON object whose first field, "type",
// names it, so that a reader can switch on it before decoding the rest.
// The Result that ends a run is written {"type":"done","result":…}, with
// the text of err, the run's error yielded with it, as "error". Unless
// priced, a cost is written as null, not 0: a model without a price is
// not free.
func marshalEvent(ev agent.Event, err error, priced bool) ([]byte, error) {
	var v any = ev
	switch e := ev.(type) {
	case agent.ToolCall:
		if len(e.Input) == 0 {
			e.Input = json.RawMessage("{}") // as the API saw it
			v = e
		}
	case agent.UsageUpdate:
		if !priced {
			v = struct {
				agent.UsageUpdate
				CostUSD *float64 `json:"cost_usd"` // shadows the embedded 0
			}{UsageUpdate: e}
		}
	case agent.Result:
		done := struct {
			Result any    `json:"result"`
			Error  string `json:"error,omitempty"`
		}{Result: resultValue(e, priced)}
		if err != nil {
			done.Error = err.Error()
		}
		v = done
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	typ, err := json.Marshal(eventType(ev))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(typ)+10)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// resultValue is res as the JSON lines write it: unless priced, with a
// cost of null.
func resultValue(res agent.Result, priced bool) any {
	if priced {
		return res
	}
	return struct {
		agent.Result
		CostUSD *float64 `json:"cost_usd"` // shadows the embedded 0
	}{Result: res}
}

// errorRecord is the JSON line --json writes for the error that ended a
// run. Like every event's line it opens with its "type". For a run that
// failed it is the last line, in place of "done", and holds its result.
type errorRecord struct {
	Type      string `json:"type"` // "error"
	Message   string `json:"message"`
	Status    int    `json:"status,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Result    any    `json:"result,omitempty"`
}

// newErrorRecord returns the record of err.
func newErrorRecord(err error) errorRecord {
	rec := errorRecord{Type: "error", Message: err.Error()}
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) {
		rec.Message, rec.Status, rec.ErrorType, rec.RequestID = apiErr.Message, apiErr.StatusCode, apiErr.Type, apiErr.RequestID
	}
	return rec
}
