package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/internal/apirules"
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
		func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil }))
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

// scopedSchema reads the content of some strings only: those of e, tags
// and inner.s.
const scopedSchema = `{"type":"object","additionalProperties":false,"properties":{"x":{"type":"number"},
	"y":{"type":"number"},"e":{"enum":["a","b\n\"c\u00e9"]},"tags":{"type":"array","items":{"type":"string","maxLength":3}},
	"inner":{"$ref":"#/$defs/inner"},"s":{"type":"string"}},
	"$defs":{"inner":{"type":"object","properties":{"n":{"type":"integer"},"s":{"pattern":"^a"}}}}}`

// FuzzShape checks that a tool whose schema reads the content of no
// string, or of some, judges every input as the full parse does, and words
// its errors alike.
func FuzzShape(f *testing.F) {
	for _, s := range shapeSeeds {
		f.Add(s)
	}
	for _, s := range []string{`{"e": "a", "s": "zz"}`, `{"e": "c", "s": "a"}`, `{"e": "b\n\"c\u00e9"}`, `{"tags": ["abcd"]}`,
		`{"inner": {"s": "b", "n": "s"}, "s": 1}`, `{"inner": {"s": "a"}, "q": "x"}`} {
		f.Add(s)
	}
	point := Must(New("point", "Echo a point.", func(ctx context.Context, in pointInput) (string, error) { return "ok", nil }))
	scoped := Must(NewRaw("scoped", "", json.RawMessage(scopedSchema), func(context.Context, json.RawMessage) (llm.ToolResult, error) {
		return llm.ToolResult{}, nil
	}))
	fulls := map[*Tool]*Tool{}
	for _, fast := range []*Tool{point, scoped} {
		var top any
		json.Unmarshal([]byte(fast.spec.InputSchema), &top)
		if stringScopes(top, "", map[string]bool{}) {
			f.Fatalf("%s's schema reads every string; the test needs one that does not", fast.spec.Name)
		}
		full := *fast
		full.decodeOpts = apirules.Lenient
		fulls[fast] = &full
	}
	f.Fuzz(func(t *testing.T, input string) {
		for fast, full := range fulls {
			_, errFast := prepare(fast, json.RawMessage(input))
			_, errFull := prepare(full, json.RawMessage(input))
			if diff := cmp.Diff(fmt.Sprint(errFull), fmt.Sprint(errFast)); diff != "" {
				t.Errorf("%s: prepare(%q): leaving strings unread differs from the full parse (-full +unread):\n%s", fast.spec.Name, input, diff)
			}
		}
	})
}

// TestStringScopes checks which strings' content a schema may read: none,
// those under some properties, or all of them.
func TestStringScopes(t *testing.T) {
	for _, tt := range []struct {
		schema string
		names  []string // nil: none
		all    bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"},"enum":{"type":"string"}}}`, nil, false},
		{`{"properties":{"op":{"enum":["add"]},"n":{"type":"number"}}}`, []string{"op"}, false},
		{`{"properties":{"a":{"properties":{"b":{"pattern":"x"}}},"c":{"items":{"maxLength":2}}}}`, []string{"b", "c"}, false},
		{`{"properties":{"m":{"additionalProperties":{"format":"email"}}}}`, []string{"m"}, false},
		{`{"properties":{"u":{"uniqueItems":true}},"allOf":[{"properties":{"k":{"const":"x"}}}]}`, []string{"k", "u"}, false},
		{`{"properties":{"p":{"$ref":"#/$defs/d"},"r":{"$ref":"#"}},"$defs":{"d":{"properties":{"q":{"minLength":1}}}}}`, []string{"q"}, false},
		{`{"enum":[{}]}`, nil, true},
		{`{"patternProperties":{"^x":{"minLength":1}}}`, nil, true},
		{`{"properties":{"p":{"$ref":"#/$defs/d"}},"$defs":{"d":{"enum":["a"]}}}`, nil, true},
		{`{"properties":{"a":{"type":"string"},"b":{"$ref":"#/properties/a"}}}`, nil, true},
		{`{"properties":{"a":{"$ref":"https://example.com/s.json"}}}`, nil, true},
	} {
		var top any
		if err := json.Unmarshal([]byte(tt.schema), &top); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		all := stringScopes(top, "", names)
		if got := slices.Sorted(maps.Keys(names)); all != tt.all || !tt.all && !slices.Equal(got, tt.names) {
			t.Errorf("stringScopes(%s) = %v, %v; want %v, %v", tt.schema, got, all, tt.names, tt.all)
		}
	}
}

// TestScopedStrings checks that the strings a schema reads are validated
// whole, beside strings left unread.
func TestScopedStrings(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","maxLength":2},
		"e":{"enum":["a"]},"u":{"type":"array","uniqueItems":true}}}`)
	raw := Must(NewRaw("raw", "", schema, func(context.Context, json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil }))
	for input, want := range map[string]string{
		`{"s": "abc", "t": "unread"}`:     `invalid input for tool "raw": field "s": maxLength: got 3, want 2`,
		`{"e": "b", "t": "unread"}`:       `invalid input for tool "raw": field "e": value must be 'a'`,
		`{"u": ["a", "a"], "t": "a\n"}`:   `invalid input for tool "raw": field "u": items at 0 and 1 are equal`,
		`{"u": [{"t": "a"}, {"t": "b"}]}`: "<nil>",
	} {
		if _, err := prepare(raw, json.RawMessage(input)); fmt.Sprint(err) != want {
			t.Errorf("prepare(%s) = %v, want %s", input, err, want)
		}
	}
}

// FuzzDecode checks that a typed tool decodes its input as encoding/json
// does: the same value, or the same error.
func FuzzDecode(f *testing.F) {
	for _, s := range shapeSeeds {
		f.Add(s)
	}
	for _, s := range []string{`{"X": 1, "Y": 2}`, `{"x": null}`, `{"x": 1.5e3, "inner": {"n": 1e30}}`,
		`{"inner": {"n": 1.5}}`, `{"tags": "a"}`, `{"tags": null, "x": "1"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		got, err := decode[pointInput]("point", json.RawMessage(input))
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
