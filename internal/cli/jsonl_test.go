package cli

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

func TestEventJSON(t *testing.T) {
	usage := llm.Usage{InputTokens: 10, OutputTokens: 2}
	tests := []struct {
		ev   agent.Event
		err  error // yielded with ev
		want string
	}{
		{agent.TurnStart{Iteration: 2}, nil, `{"type":"turn_start","iteration":2}`},
		{agent.TextDelta{Text: "hé\n"}, nil, `{"type":"text_delta","text":"hé\n"}`},
		{agent.ThinkingDelta{Thinking: "hmm"}, nil, `{"type":"thinking_delta","thinking":"hmm"}`},
		{agent.ToolCallStart{ID: "toolu_1", Name: "add"}, nil, `{"type":"tool_call_start","id":"toolu_1","name":"add"}`},
		{agent.ToolInputDelta{ID: "toolu_1", PartialJSON: `{"a":`}, nil, `{"type":"tool_input_delta","id":"toolu_1","partial_json":"{\"a\":"}`},
		{agent.ToolCall{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a":1}`)}, nil, `{"type":"tool_call","id":"toolu_1","name":"add","input":{"a":1}}`},
		{agent.ToolCall{ID: "toolu_1", Name: "now"}, nil, `{"type":"tool_call","id":"toolu_1","name":"now","input":{}}`},
		{agent.ToolDone{ID: "toolu_1", Name: "add", Content: "3", Duration: time.Millisecond},
			nil, `{"type":"tool_done","id":"toolu_1","name":"add","content":"3","duration_ns":1000000}`},
		{agent.ToolDone{ID: "toolu_1", Name: "add", Content: "denied: no", IsError: true},
			nil, `{"type":"tool_done","id":"toolu_1","name":"add","content":"denied: no","is_error":true,"duration_ns":0}`},
		{agent.UsageUpdate{Turn: usage, Total: usage, CostUSD: 0.5},
			nil, `{"type":"usage_update","turn":{"input_tokens":10,"output_tokens":2},"total":{"input_tokens":10,"output_tokens":2},"cost_usd":0.5}`},
		{agent.Compacted{Compaction: memory.Compaction{Before: 100, After: 40, Steps: []string{"cleared 2 tool results"}}},
			nil, `{"type":"compacted","before":100,"after":40,"steps":["cleared 2 tool results"]}`},
		{agent.Retry{Attempt: 2, Error: "overloaded", Err: errors.New("overloaded"), Discard: true}, nil, `{"type":"retry","attempt":2,"error":"overloaded","discard":true}`},
		{agent.Repaired{Fixes: []string{"answered 1 tool call"}}, nil, `{"type":"repaired","fixes":["answered 1 tool call"]}`},
		{agent.Result{Text: "hi", State: agent.Finished, Iterations: 1}, nil,
			`{"type":"done","result":{"text":"hi","state":"finished","iterations":1,"usage":{"input_tokens":0,"output_tokens":0},"cost_usd":0}}`},
		{agent.Result{State: agent.Failed}, errors.New("boom"),
			`{"type":"done","result":{"text":"","state":"failed","iterations":0,"usage":{"input_tokens":0,"output_tokens":0},"cost_usd":0},"error":"boom"}`},
	}
	for _, tt := range tests {
		t.Run(eventType(tt.ev), func(t *testing.T) {
			got, err := marshalEvent(tt.ev, tt.err, true, false)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("marshalEvent(%#v)\n got %s\nwant %s", tt.ev, got, tt.want)
			}
		})
	}
}

// TestEventJSONUnpriced checks that a model without a price shows its cost
// as null, not as a misleading 0.
func TestEventJSONUnpriced(t *testing.T) {
	for _, tt := range []struct {
		ev   agent.Event
		err  error
		want string
	}{
		{agent.UsageUpdate{Turn: llm.Usage{InputTokens: 1}, CostUSD: 0}, nil,
			`{"type":"usage_update","turn":{"input_tokens":1,"output_tokens":0},"total":{"input_tokens":0,"output_tokens":0},"cost_usd":null}`},
		{agent.Result{Text: "hi", State: agent.Finished, Iterations: 1}, errors.New("x"),
			`{"type":"done","result":{"text":"hi","state":"finished","iterations":1,"usage":{"input_tokens":0,"output_tokens":0},"cost_usd":null},"error":"x"}`},
	} {
		got, err := marshalEvent(tt.ev, tt.err, false, false)
		if err != nil || string(got) != tt.want {
			t.Errorf("marshalEvent(%#v, false)\n got %s, %v\nwant %s", tt.ev, got, err, tt.want)
		}
	}
}

// TestJSONLinesEscapeC1 checks that --json writes C1 controls, which
// encoding/json leaves raw and some terminals obey, as \u escapes: the
// same JSON, decoding to the same text.
func TestJSONLinesEscapeC1(t *testing.T) {
	var out strings.Builder
	r := newJSONRenderer(&out, io.Discard, true, false)
	text := "\u009b2J\u009d0;x\u009c é \u00a0\u00bf\x1b"
	r.event(agent.TextDelta{Text: text}, nil)
	want := `{"type":"text_delta","text":"\u009b2J\u009d0;x\u009c é ` + "\u00a0\u00bf" + `\u001b"}` + "\n"
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
	var ev agent.TextDelta
	if err := json.Unmarshal([]byte(out.String()), &ev); err != nil || ev.Text != text {
		t.Errorf("decodes to %q, %v; want %q", ev.Text, err, text)
	}
}
