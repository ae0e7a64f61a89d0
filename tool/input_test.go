package tool

import (
	"context"
	"encoding/json"
	"strings"
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
	noop := func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil }
	draft7 := Must(NewRaw("draft7", "An older schema.", json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#",
		"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0},"s":{"type":"string","minLength":2},"p":{"pattern":"^a"},
		"d":{"$ref":"#/definitions/d","maximum":1}},"required":["n"],"definitions":{"d":{"type":"integer"}}}`), noop))
	// Refs to definitions are followed member by member; another ref (to
	// the root) leaves only the validator's first problem to report.
	ref := Must(NewRaw("ref", "Refs.", json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#/$defs/n"}},
		"$defs":{"n":{"type":"integer"}}}`), noop))
	root := Must(NewRaw("root", "A tree.", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#"}}},
		"additionalProperties":false}`), noop))
	r := NewRegistry(Config{})
	if err := r.Register(point, list, draft7, ref, root); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, input, want string
	}{
		{"every problem at once", "point", `{"x": "one", "z": 3, "w": 4, "inner": {"n": 1.5}, "tags": ["a", 7]}`,
			`invalid input for tool "point": 6 problems:` +
				"\n- field \"inner.n\": got number, want integer" +
				"\n- field \"tags[1]\": got number, want string" +
				"\n- field \"x\": got string, want number" +
				"\n- missing required field \"y\"" +
				"\n- unknown field \"w\"; use only the fields in the input schema" +
				"\n- unknown field \"z\"; use only the fields in the input schema"},
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
			`invalid input for tool "list": field "items[0].n": maximum: 300 is greater than 255`},
		{"draft-07 is validated, every problem", "draft7", `{"n": 0, "s": "x"}`,
			`invalid input for tool "draft7": 2 problems:` +
				"\n- field \"n\": exclusiveMinimum: 0 is less than or equal to 0" +
				"\n- field \"s\": minLength: \"x\" contains 1 Unicode code points, fewer than 2"},
		{"draft-07 read in every part: $ref's siblings are ignored", "draft7", `{"n": 0, "d": 5}`,
			`invalid input for tool "draft7": field "n": exclusiveMinimum: 0 is less than or equal to 0`},
		{"refs to definitions", "ref", `{"a": "x", "b": 1.5}`,
			`invalid input for tool "ref": 2 problems:` +
				"\n- field \"a\": type: x has type \"string\", want \"integer\"" +
				"\n- field \"b\": type: 1.5 has type \"number\", want \"integer\""},
		{"a ref to the root: the first problem", "root", `{"kids": [{"n": 1}, {"n": 1, "m": 2}]}`,
			`invalid input for tool "root": unexpected additional properties ["m"]`},
		{"a long value is cut short", "draft7", `{"n": 1, "p": "` + strings.Repeat("b", 1000) + `"}`,
			`invalid input for tool "draft7": field "p": ` + llm.Truncate(`pattern: "`+strings.Repeat("b", 1000)+`" does not match regular expression "^a"`, 300)},
		{"a number as written", "point", `{"x": 1, "y": 2, "label": 3}`,
			`invalid input for tool "point": field "label": got number, want string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Run(t.Context(), []llm.ToolUse{{ID: "id", Name: tt.tool, Input: json.RawMessage(tt.input)}})
			if diff := cmp.Diff([]llm.ToolResult{errorResult("id", tt.want)}, got); diff != "" {
				t.Errorf("Run(%s) (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}

// shapeSeeds are inputs that the shape-only check and the full parse might
// read differently: strings, escapes, duplicate names, invalid UTF-8,
// numbers out of range, data after the value.
var shapeSeeds = []string{
	`{"x": 1, "y": 2}`, `{"x": 1, "y": "2"}`, `{"x": 1}`, `{"x": 1, "y": 2, "z": 3}`,
	`{"x": 1, "y": 2, "tags": ["a", "b\n\"c\u00e9"], "inner": {"n": 3}}`,
	`{"x": 1, "y": 2, "tags": [1]}`, `{"x": 1, "y": 2, "x": "dup"}`, `{"x": 1, "y": 2, "x": 3}`,
	"{\"x\": 1, \"y\": 2, \"tags\": [\"\xff\"]}", "{\"x\": 1, \"y\": 2, \"\xff\": 1}",
	`{"x": 1e400, "y": 2}`, `{"x": 1, "y": 2} x`, `{"x": 1, "y": 2}{}`, `[]`, `null`, `"s"`, ` `, ``,
	`{"x": -0, "y": 2e-400}`, `{"x": 1, "y": 2, "inner": null}`, `{"x": true, "y": false}`, `{"x": 1, "y": 2,}`,
}

// FuzzDecode checks that a typed tool's handler decodes its input as
// encoding/json does: the same value, or the same error.
func FuzzDecode(f *testing.F) {
	for _, s := range shapeSeeds {
		f.Add(s)
	}
	for _, s := range []string{`{"X": 1, "Y": 2}`, `{"x": null}`, `{"x": 1.5e3, "inner": {"n": 1e30}}`,
		`{"inner": {"n": 1.5}}`, `{"tags": "a"}`, `{"tags": null, "x": "1"}`} {
		f.Add(s)
	}
	var got pointInput
	point := Must(New("point", "Keep the point.", func(ctx context.Context, in pointInput) (string, error) {
		got = in
		return "", nil
	}))
	f.Fuzz(func(t *testing.T, input string) {
		got = pointInput{}
		_, err := point.handler(t.Context(), json.RawMessage(input)) // the handler alone, without the schema check before it
		var want pointInput
		wantErr := json.Unmarshal([]byte(input), &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decode(%q) error = %v, encoding/json's = %v", input, err, wantErr)
		}
		if diff := cmp.Diff(want, got); err == nil && diff != "" {
			t.Errorf("decode(%q) differs from encoding/json (-want +got):\n%s", input, diff)
		}
	})
}
