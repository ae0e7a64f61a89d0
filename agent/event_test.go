package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

func TestEventJSON(t *testing.T) {
	usage := llm.Usage{InputTokens: 10, OutputTokens: 2}
	tests := []struct {
		ev   Event
		want string
	}{
		{TurnStart{Iteration: 2}, `{"type":"turn_start","iteration":2}`},
		{TextDelta{Text: "hé\n"}, `{"type":"text_delta","text":"hé\n"}`},
		{ThinkingDelta{Thinking: "hmm"}, `{"type":"thinking_delta","thinking":"hmm"}`},
		{ToolCallStart{ID: "toolu_1", Name: "add"}, `{"type":"tool_call_start","id":"toolu_1","name":"add"}`},
		{ToolInputDelta{ID: "toolu_1", PartialJSON: `{"a":`}, `{"type":"tool_input_delta","id":"toolu_1","partial_json":"{\"a\":"}`},
		{ToolCall{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a":1}`)}, `{"type":"tool_call","id":"toolu_1","name":"add","input":{"a":1}}`},
		{ToolCall{ID: "toolu_1", Name: "now"}, `{"type":"tool_call","id":"toolu_1","name":"now","input":{}}`},
		{ToolResult{ID: "toolu_1", Name: "add", Content: "3", Duration: time.Millisecond},
			`{"type":"tool_result","id":"toolu_1","name":"add","content":"3","duration_ns":1000000}`},
		{ToolResult{ID: "toolu_1", Name: "add", Content: "denied: no", IsError: true},
			`{"type":"tool_result","id":"toolu_1","name":"add","content":"denied: no","is_error":true,"duration_ns":0}`},
		{Usage{Turn: usage, Total: usage, CostUSD: 0.5},
			`{"type":"usage","turn":{"input_tokens":10,"output_tokens":2},"total":{"input_tokens":10,"output_tokens":2},"cost_usd":0.5}`},
		{Compaction{Before: 100, After: 40, Steps: []string{"cleared 2 tool results"}},
			`{"type":"compaction","before":100,"after":40,"steps":["cleared 2 tool results"]}`},
		{Retry{Attempt: 2, Error: "overloaded", Discard: true}, `{"type":"retry","attempt":2,"error":"overloaded","discard":true}`},
		{Done{Result: Result{Text: "hi", State: Finished, Iterations: 1}},
			`{"type":"done","result":{"text":"hi","state":"finished","iterations":1,"usage":{"input_tokens":0,"output_tokens":0},"cost_usd":0}}`},
		{Done{Result: Result{State: Failed}, Error: "boom"},
			`{"type":"done","result":{"text":"","state":"error","iterations":0,"usage":{"input_tokens":0,"output_tokens":0},"cost_usd":0},"error":"boom"}`},
	}
	for _, tt := range tests {
		t.Run(EventType(tt.ev), func(t *testing.T) {
			got, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal(%#v)\n got %s\nwant %s", tt.ev, got, tt.want)
			}
			back, err := UnmarshalEvent(got)
			if err != nil {
				t.Fatalf("UnmarshalEvent(%s): %v", got, err)
			}
			want := tt.ev
			if tc, ok := want.(ToolCall); ok && tc.Input == nil {
				tc.Input = json.RawMessage("{}")
				want = tc
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalEventErrors(t *testing.T) {
	for _, in := range []string{`{"type":"nope"}`, `{}`, `[`, `{"type":"turn_start","iteration":"x"}`} {
		if ev, err := UnmarshalEvent([]byte(in)); err == nil {
			t.Errorf("UnmarshalEvent(%s) = %#v, want an error", in, ev)
		}
	}
}
