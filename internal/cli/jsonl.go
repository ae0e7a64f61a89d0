package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/typed"
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
	case agent.Repaired:
		return "repaired"
	case agent.Result:
		return "done"
	}
	return fmt.Sprintf("%T", ev) // a new event type the switch does not know yet
}

// marshalEvent writes ev as one JSON object whose first field, "type",
// names it, so that a reader can switch on it before decoding the rest.
// The Result that ends a run is written {"type":"done","result":…}, with
// the text of err, the run's error yielded with it, as "error", and, for a
// run with a schema, its answer as "structured_output". Unless priced, a
// cost is written as null, not 0: a model without a price is not free.
func marshalEvent(ev agent.Event, err error, priced, schema bool) ([]byte, error) {
	var v any = ev
	switch e := ev.(type) {
	case agent.Nested:
		return marshalNested(e, priced)
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
		}{Result: resultValue(e, priced, schema)}
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
// cost of null; with a schema, with the answer's JSON (package typed).
func resultValue(res agent.Result, priced, schema bool) any {
	v := struct {
		agent.Result
		CostUSD          *float64        `json:"cost_usd"` // shadows the embedded one
		StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	}{Result: res}
	if priced {
		v.CostUSD = &res.CostUSD
	}
	if schema {
		v.StructuredOutput = typed.Output(res)
	}
	return v
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

// jsonRenderer writes each event to stdout as one JSON line with a "type".
// Notes and errors go to stderr as text, where a person will see them, and
// errors also go to stdout, so that a program reading the lines sees why
// the run failed: a failed run ends with an "error" line that holds its
// result, in place of "done", so that the error is the last line.
type jsonRenderer struct {
	out, errw io.Writer
	priced    bool // the model has a price: costs are numbers, not null
	schema    bool // --json-schema: a result holds the answer's JSON
	// failed is the result of a run that failed, held for its error line.
	failed *agent.Result
}

func newJSONRenderer(stdout, stderr io.Writer, priced, schema bool) *jsonRenderer {
	return &jsonRenderer{out: stdout, errw: stderr, priced: priced, schema: schema}
}

func (r *jsonRenderer) event(ev agent.Event, runErr error) {
	if res, ok := ev.(agent.Result); ok && res.State == agent.Failed && runErr != nil {
		r.failed = &res // fail writes it, with the error
		return
	}
	// An error here would be a bug in an event's fields, so it is
	// reported, not hidden.
	b, err := marshalEvent(ev, runErr, r.priced, r.schema)
	if err != nil {
		fmt.Fprintf(r.errw, "agentloop: cannot encode %s event: %v\n", eventType(ev), err)
		return
	}
	r.write(b)
}

func (r *jsonRenderer) fail(err error) {
	rec := newErrorRecord(err)
	if r.failed != nil {
		rec.Result = resultValue(*r.failed, r.priced, r.schema)
		r.failed = nil
	}
	b, err := marshalNoEscape(rec)
	if err != nil {
		fmt.Fprintf(r.errw, "agentloop: cannot encode the error: %v\n", err)
		return
	}
	r.write(b)
}

// marshalNoEscape is json.Marshal without HTML escapes, so that a
// message's "a > b" stays readable.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// write writes one JSON line. encoding/json leaves C1 controls raw, which
// some terminals take for CSI or OSC, so they are written as \u escapes:
// the same JSON, safe to show.
func (r *jsonRenderer) write(line []byte) {
	var b []byte
	for {
		// In UTF-8, 0xc2 and a byte of 0x80 to 0x9f are U+0080 to U+009F.
		i := bytes.IndexByte(line, 0xc2)
		if i < 0 || i+1 == len(line) {
			break
		}
		if c := line[i+1]; c <= 0x9f {
			b = fmt.Appendf(append(b, line[:i]...), `\u%04x`, c)
		} else {
			b = append(b, line[:i+2]...)
		}
		line = line[i+2:]
	}
	if b == nil {
		b = line // no C1 control: no copy
	} else {
		b = append(b, line...)
	}
	r.out.Write(append(b, '\n'))
}

func (r *jsonRenderer) note(format string, args ...any) {
	io.WriteString(r.errw, "agentloop: "+visible(fmt.Sprintf(format, args...))+"\n")
}

func (r *jsonRenderer) pause() {}
func (r *jsonRenderer) close() {}
