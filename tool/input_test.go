package tool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// TestInputProblems checks what the model reads about input its tool
// cannot take: every problem of the call at once, each naming its field,
// so that one more turn can fix them all; and a number out of range is
// said to be out of range, not invalid JSON.
func TestInputProblems(t *testing.T) {
	point := Must(New("point", "Echo a point.", func(ctx context.Context, in pointInput) (string, error) { return "ok", nil }))
	type item struct {
		Name string `json:"name"`
		N    uint8  `json:"n,omitempty"`
	}
	list := Must(New("list", "Take items.", func(ctx context.Context, in struct {
		Items []item `json:"items"`
	}) (string, error) {
		return "ok", nil
	}))
	draft4 := Must(NewRaw("draft4", "An old schema.", json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#",
		"type":"object","properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true}},"required":["n"]}`),
		func(ctx context.Context, input json.RawMessage) (Output, error) { return Output{}, nil }))
	r := NewRegistry(Config{})
	if err := r.Register(point, list, draft4); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, input, want string
	}{
		{"every problem at once", "point", `{"x": "one", "z": 3, "w": 4, "inner": {"n": 1.5}, "tags": ["a", 7]}`,
			`invalid input for tool "point": 5 problems:` +
				"\n- field \"inner.n\": got number, want integer" +
				"\n- field \"tags[1]\": got number, want string" +
				"\n- field \"x\": got string, want number" +
				"\n- missing required field \"y\"" +
				"\n- unknown fields \"w\", \"z\"; use only the fields in the input schema"},
		{"fields inside an array", "list", `{"items": [{"name": "a"}, {"n": 1}, {"name": 2, "extra": true}]}`,
			`invalid input for tool "list": 3 problems:` +
				"\n- field \"items[2].name\": got number, want string" +
				"\n- missing required field \"items[1].name\"" +
				"\n- unknown field \"items[2].extra\"; use only the fields in the input schema"},
		{"number out of range of float64", "point", `{"x": 1e400, "y": 2}`,
			`invalid input for tool "point": field "x": number 1e400 does not fit in a Go float64`},
		{"number out of range of int", "point", `{"x": 1, "y": 2, "inner": {"n": 1e30}}`,
			`invalid input for tool "point": field "inner.n": number 1e30 does not fit in a Go int`},
		{"schema bound of uint8", "list", `{"items": [{"name": "a", "n": 300}]}`,
			`invalid input for tool "list": field "items[0].n": maximum: got 300, want 255`},
		{"draft-04 is validated", "draft4", `{"n": 0}`,
			`invalid input for tool "draft4": field "n": exclusiveMinimum: got 0, want 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Run(t.Context(), []Call{{ID: "id", Name: tt.tool, Input: json.RawMessage(tt.input)}})
			if diff := cmp.Diff([]llm.ToolResult{errorResult("id", tt.want)}, got); diff != "" {
				t.Errorf("Run(%s) (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}
