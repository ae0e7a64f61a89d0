package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/llm"
)

type pointInput struct {
	X     float64 `json:"x" jsonschema:"the x coordinate"`
	Y     float64 `json:"y"`
	Label string  `json:"label,omitempty"`
	Inner *struct {
		N int `json:"n"`
	} `json:"inner,omitempty"`
	Tags []string `json:"tags,omitempty"`
}

func textResult(id, text string) llm.ToolResult {
	return llm.ToolResult{ToolUseID: id, Content: []llm.Block{llm.Text{Text: text}}}
}

func errorResult(id, text string) llm.ToolResult {
	return llm.ToolResult{ToolUseID: id, Content: []llm.Block{llm.Text{Text: text}}, IsError: true}
}

// tools returns the tools of TestRun. release unblocks the tool that
// ignores its context, so that the bubble can end.
func testTools(release <-chan struct{}) []*Tool {
	point := Must(New("point", "Echo a point.", func(ctx context.Context, in pointInput) (string, error) {
		return fmt.Sprintf("(%v, %v)", in.X, in.Y), nil
	}))
	type sum struct {
		Sum float64 `json:"sum"`
	}
	add := Must(New("add", "Add.", func(ctx context.Context, in pointInput) (sum, error) {
		return sum{in.X + in.Y}, nil
	}))
	fail := Must(New("fail", "Fail.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New("disk full")
	}))
	failEmpty := Must(New("fail_empty", "Fail silently.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New("")
	}))
	empty := Must(New("empty", "Say nothing.", func(ctx context.Context, in struct{}) (string, error) {
		return "", nil
	}))
	boom := Must(New("boom", "Panic.", func(ctx context.Context, in struct{}) (string, error) {
		panic("boom")
	}))
	nilDeref := Must(New("nil_deref", "Crash.", func(ctx context.Context, in struct{}) (string, error) {
		var m map[string]*int
		return fmt.Sprint(*m["x"]), nil
	}))
	image := Must(New("image", "Draw.", func(ctx context.Context, in struct{}) ([]llm.Block, error) {
		return []llm.Block{llm.Text{Text: "a dot"}, llm.Text{}, llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}}, nil
	}))
	soft := Must(New("soft_error", "Report a tool-level error.", func(ctx context.Context, in struct{}) (llm.ToolResult, error) {
		return llm.ToolResult{Content: []llm.Block{llm.Text{Text: "no such file"}}, IsError: true}, nil
	}))
	slow := Must(New("slow", "Honour the context.", func(ctx context.Context, in struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	slow.Timeout = 2 * time.Second
	stubborn := Must(New("stubborn", "Ignore the context.", func(ctx context.Context, in struct{}) (string, error) {
		<-release
		return "too late", nil
	}))
	stubborn.Timeout = time.Second
	patient := Must(New("patient", "Take 90 s, with no timeout.", func(ctx context.Context, in struct{}) (string, error) {
		time.Sleep(90 * time.Second) // longer than the registry's default timeout
		return "done", nil
	}))
	patient.Timeout = -1
	dflt := Must(New("default_timeout", "Wait for the default timeout.", func(ctx context.Context, in struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	big := Must(New("big", "Talk a lot.", func(ctx context.Context, in struct{}) (string, error) {
		return strings.Repeat("ab", 100) + "é" + strings.Repeat("z", 40), nil // é is bytes 200 and 201
	}))
	raw := Must(NewRaw("raw", "Raw echo.", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":2}},"required":["q"]}`),
		func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error) {
			return llm.ToolResult{Content: []llm.Block{llm.Text{Text: string(input)}}}, nil
		}))
	op := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"op": {Type: "string", Enum: []any{"up", "down"}},
	}, Required: []string{"op"}}
	enum := Must(NewWithSchema("enum", "Pick.", op, func(ctx context.Context, in struct {
		Op string `json:"op"`
	}) (string, error) {
		return in.Op, nil
	}))
	return []*Tool{point, add, fail, failEmpty, empty, boom, nilDeref, image, soft, slow, stubborn, patient, dflt, big, raw, enum}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name  string
		input string // the call's input; the tool is named by the case
		tool  string
		want  llm.ToolResult
	}{
		{"text", `{"x": 1, "y": 2.5}`, "point", textResult("id", "(1, 2.5)")},
		{"json", `{"x": 3, "y": 5}`, "add", textResult("id", `{"sum":8}`)},
		{"blocks", `{}`, "image", llm.ToolResult{ToolUseID: "id", Content: []llm.Block{
			llm.Text{Text: "a dot"}, llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}}}},
		{"output is_error", `{}`, "soft_error", errorResult("id", "no such file")},
		{"empty input", ``, "empty", llm.ToolResult{ToolUseID: "id"}},
		{"raw", `{"q": "hi"}`, "raw", textResult("id", `{"q": "hi"}`)},
		{"enum ok", `{"op": "up"}`, "enum", textResult("id", "up")},

		{"error", `{}`, "fail", errorResult("id", "disk full")},
		{"empty error", `{}`, "fail_empty", errorResult("id", "the tool failed without saying why")},
		{"unknown tool", `{}`, "nope", errorResult("id", `unknown tool "nope"; the available tools are: `+
			"add, big, boom, default_timeout, empty, enum, fail, fail_empty, image, nil_deref, patient, point, raw, slow, soft_error, stubborn")},
		{"bad json", `{"x": 1,`, "point", errorResult("id", `invalid input for tool "point": the input is not valid JSON: unexpected end of JSON input`)},
		{"not an object", `[1, 2]`, "point", errorResult("id", `invalid input for tool "point": the input must be a JSON object, got [1, 2]`)},
		{"null", `null`, "point", errorResult("id", `invalid input for tool "point": the input must be a JSON object, got null`)},
		{"missing field", `{"x": 1}`, "point", errorResult("id", `invalid input for tool "point": missing required field "y"`)},
		{"wrong type", `{"x": "one", "y": 2}`, "point", errorResult("id", `invalid input for tool "point": field "x": got string, want number`)},
		{"unknown field", `{"x": 1, "y": 2, "z": 3}`, "point", errorResult("id", `invalid input for tool "point": unknown field "z"; use only the fields in the input schema`)},
		{"nested field", `{"x": 1, "y": 2, "inner": {"n": 1.5}}`, "point", errorResult("id", `invalid input for tool "point": field "inner.n": got number, want integer`)},
		{"nested missing", `{"x": 1, "y": 2, "inner": {}}`, "point", errorResult("id", `invalid input for tool "point": missing required field "inner.n"`)},
		{"array item", `{"x": 1, "y": 2, "tags": ["a", 7]}`, "point", errorResult("id", `invalid input for tool "point": field "tags[1]": got number, want string`)},
		{"enum", `{"op": "left"}`, "enum", errorResult("id", `invalid input for tool "enum": field "op": enum: left does not equal any of: [up down]`)},
		{"raw schema", `{"q": "h"}`, "raw", errorResult("id", `invalid input for tool "raw": field "q": minLength: "h" contains 1 Unicode code points, fewer than 2`)},
		{"panic", `{}`, "boom", errorResult("id", `tool "boom" panicked: boom`)},
		{"runtime panic", `{}`, "nil_deref", errorResult("id", `tool "nil_deref" panicked: runtime error: invalid memory address or nil pointer dereference`)},
		{"timeout", `{}`, "slow", errorResult("id", `tool "slow" timed out after 2s`)},
		{"no timeout", `{}`, "patient", textResult("id", "done")},
		{"default timeout", `{}`, "default_timeout", errorResult("id", `tool "default_timeout" timed out after 1m0s`)},
		{"timeout ignored", `{}`, "stubborn", errorResult("id", `tool "stubborn" timed out after 1s`)},
		{"truncated", `{}`, "big", llm.ToolResult{ToolUseID: "id", Content: []llm.Block{
			llm.Text{Text: strings.Repeat("ab", 100)},
			llm.Text{Text: "[output truncated: the tool returned 242 bytes of text; only the first 201 are shown]"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				r := NewRegistry(Config{MaxOutputBytes: 201})
				if err := r.Register(testTools(release)...); err != nil {
					t.Fatal(err)
				}
				got := r.Run(t.Context(), []llm.ToolUse{{ID: "id", Name: tt.tool, Input: json.RawMessage(tt.input)}})
				if diff := cmp.Diff([]llm.ToolResult{tt.want}, got); diff != "" {
					t.Errorf("Run mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger shared by goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestPanicStackGoesToLogger(t *testing.T) {
	var logs syncBuffer
	r := NewRegistry(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	boom := Must(New("boom", "Panic.", func(ctx context.Context, in struct{}) (string, error) {
		panic(fmt.Errorf("wrapped %w", errors.New("cause")))
	}))
	if err := r.Register(boom); err != nil {
		t.Fatal(err)
	}
	got := r.Run(t.Context(), []llm.ToolUse{{ID: "1", Name: "boom"}})
	if diff := cmp.Diff([]llm.ToolResult{errorResult("1", `tool "boom" panicked: wrapped cause`)}, got); diff != "" {
		t.Errorf("Run mismatch (-want +got):\n%s", diff)
	}
	for _, want := range []string{"tool panicked", "tool=boom", "id=1", "runtime/debug.Stack", "registry_test.go"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(llm.TextOf(got[0].Content), "goroutine") {
		t.Errorf("the stack reached the model: %s", llm.TextOf(got[0].Content))
	}
}

func TestTruncate(t *testing.T) {
	img := llm.Image{MediaType: "image/png", Data: strings.Repeat("A", 1000)}
	note := func(total, max int) llm.Block {
		return llm.Text{Text: fmt.Sprintf("[output truncated: the tool returned %d bytes of text; only the first %d are shown]", total, max)}
	}
	tests := []struct {
		name string
		max  int
		in   []llm.Block
		want []llm.Block
	}{
		{"fits", 5, []llm.Block{llm.Text{Text: "hello"}}, []llm.Block{llm.Text{Text: "hello"}}},
		{"ascii", 3, []llm.Block{llm.Text{Text: "hello"}}, []llm.Block{llm.Text{Text: "hel"}, note(5, 3)}},
		{"no cap", -1, []llm.Block{llm.Text{Text: "hello"}}, []llm.Block{llm.Text{Text: "hello"}}},
		// "é" is 2 bytes and "€" 3: a cut inside either backs up to its start.
		{"inside 2-byte rune", 2, []llm.Block{llm.Text{Text: "aéb"}}, []llm.Block{llm.Text{Text: "a"}, note(4, 2)}},
		{"inside 3-byte rune", 3, []llm.Block{llm.Text{Text: "a€"}}, []llm.Block{llm.Text{Text: "a"}, note(4, 3)}},
		{"at rune end", 3, []llm.Block{llm.Text{Text: "aéb"}}, []llm.Block{llm.Text{Text: "aé"}, note(4, 3)}},
		{"rune at start", 1, []llm.Block{llm.Text{Text: "€uro"}}, []llm.Block{note(6, 1)}},
		{"across blocks", 6, []llm.Block{llm.Text{Text: "abcd"}, img, llm.Text{Text: "efgh"}, llm.Text{Text: "ijkl"}},
			[]llm.Block{llm.Text{Text: "abcd"}, img, llm.Text{Text: "ef"}, note(12, 6)}},
		{"blank text dropped", 10, []llm.Block{llm.Text{Text: " \n\t"}, nil, llm.Text{Text: "ok"}}, []llm.Block{llm.Text{Text: "ok"}}},
		{"images not counted", 4, []llm.Block{img, llm.Text{Text: "abcd"}}, []llm.Block{img, llm.Text{Text: "abcd"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry(Config{MaxOutputBytes: tt.max})
			got := r.shape(tt.in, false)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("shape mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterErrors(t *testing.T) {
	ok := func(name string) *Tool {
		return Must(NewRaw(name, "", json.RawMessage(`{"type":"object"}`), func(context.Context, json.RawMessage) (llm.ToolResult, error) {
			return llm.ToolResult{}, nil
		}))
	}
	tests := []struct {
		name    string
		tools   []*Tool
		wantErr string
	}{
		{"nil", []*Tool{nil}, "tool: a nil *Tool, or one not built with New, NewWithSchema or NewRaw"},
		{"zero Tool", []*Tool{{}}, "tool: a nil *Tool, or one not built with New, NewWithSchema or NewRaw"},
		{"duplicate of registered", []*Tool{ok("taken")}, `tool "taken": duplicate tool name`},
		{"duplicate in batch", []*Tool{ok("x1"), ok("x1")}, `tool "x1": duplicate tool name`},
		{"batch with a bad tool", []*Tool{ok("fine"), nil}, "tool: a nil *Tool, or one not built with New, NewWithSchema or NewRaw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry(Config{})
			if err := r.Register(ok("taken")); err != nil {
				t.Fatal(err)
			}
			err := r.Register(tt.tools...)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Register error = %v, want %q", err, tt.wantErr)
			}
			// Registration is all or nothing.
			if diff := cmp.Diff([]string{"taken"}, names(r.Specs())); diff != "" {
				t.Errorf("registered tools changed (-want +got):\n%s", diff)
			}
		})
	}
}

func names(specs []llm.ToolSpec) []string {
	var ns []string
	for _, s := range specs {
		ns = append(ns, s.Name)
	}
	return ns
}

func TestConstructorErrors(t *testing.T) {
	noop := func(context.Context, json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil }
	raw := func(name, schema string) error {
		_, err := NewRaw(name, "", json.RawMessage(schema), noop)
		return err
	}
	tests := []struct {
		name    string
		err     error
		wantErr string
	}{
		{"empty name", raw("", `{"type":"object"}`), `tool "": invalid name: the API requires 1 to 64 letters, digits, '_' or '-' (^[a-zA-Z0-9_-]{1,64}$)`},
		{"space in name", raw("get weather", `{"type":"object"}`), `tool "get weather": invalid name`},
		{"dot in name", raw("fs.read", `{"type":"object"}`), `tool "fs.read": invalid name`},
		{"65 chars", raw(strings.Repeat("a", 65), `{"type":"object"}`), `invalid name`},
		{"array schema", raw("t", `{"type":"array"}`), `tool "t": the input schema must have type "object", not "array"`},
		{"untyped schema", raw("t", `{"properties":{}}`), `tool "t": the input schema must have type "object", not none`},
		{"schema not JSON", raw("t", `{"type":`), `tool "t": the input schema is not a JSON schema object`},
		{"schema a string", raw("t", `"object"`), `tool "t": the input schema is not a JSON schema object`},
		{"schema null", raw("t", `null`), `tool "t": the input schema is not a JSON schema object: null`},
		{"nil raw func", func() error { _, err := NewRaw("t", "", json.RawMessage(`{"type":"object"}`), nil); return err }(), `tool "t": nil function`},
		{"In not a struct", func() error {
			_, err := New("t", "", func(context.Context, int) (string, error) { return "", nil })
			return err
		}(), `tool "t": the input schema must have type "object", not "integer" (with New, make In a struct)`},
		{"In a pointer", func() error {
			_, err := New("t", "", func(context.Context, *pointInput) (string, error) { return "", nil })
			return err
		}(), `tool "t": the input schema must have type "object", not ["null","object"] (with New, make In a struct)`},
		{"In unsupported", func() error {
			_, err := New("t", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
			return err
		}(), `tool "t": generating the input schema`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want it to contain %q", tt.err, tt.wantErr)
			}
		})
	}
	// 64 characters, all allowed kinds, is fine.
	if err := raw(strings.Repeat("aZ0_-", 12)+"abcd", `{"type":"object"}`); err != nil {
		t.Errorf("valid 64-char name rejected: %v", err)
	}
}

func TestSpecsAndLookup(t *testing.T) {
	r := NewRegistry(Config{})
	var want []string
	for _, n := range []string{"zeta", "alpha", "mid"} {
		want = append(want, n)
		if err := r.Register(Must(New(n, "Tool "+n+".", func(context.Context, pointInput) (string, error) { return "", nil }))); err != nil {
			t.Fatal(err)
		}
	}
	specs := r.Specs()
	if diff := cmp.Diff(want, names(specs)); diff != "" {
		t.Errorf("Specs order (-want +got):\n%s", diff)
	}
	wantSchema := `{"type":"object","properties":{"x":{"type":"number","description":"the x coordinate"},"y":{"type":"number"},` +
		`"label":{"type":"string"},"inner":{"type":["null","object"],"properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false},` +
		`"tags":{"type":["null","array"],"items":{"type":"string"}}},"required":["x","y"],"additionalProperties":false}`
	if got := string(specs[1].InputSchema); got != wantSchema {
		t.Errorf("schema:\n got %s\nwant %s", got, wantSchema)
	}
	if specs[1].Description != "Tool alpha." {
		t.Errorf("description = %q", specs[1].Description)
	}
	tl, ok := r.Lookup("mid")
	if !ok || tl.Spec().Name != "mid" {
		t.Errorf("Lookup(mid) = %v, %v", tl, ok)
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Error("Lookup(nope) found a tool")
	}
}

// TestRawUnvalidatable checks that a raw schema the validator cannot use
// still makes a tool: its input is checked only for being an object, the
// handler sees the rest as sent, and Register logs why.
func TestRawUnvalidatable(t *testing.T) {
	tests := []struct {
		name, schema, reason string
	}{
		{"unknown draft", `{"$schema":"https://example.com/my-draft","type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
			`unknown draft \"https://example.com/my-draft\": the validator reads 2020-12 and 7`},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
			`unknown draft \"http://json-schema.org/draft-04/schema#\"`},
		{"draft-04 boolean exclusiveMinimum without $schema", `{"type":"object","properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true}},"required":["n"]}`,
			"cannot unmarshal bool"},
		{"remote ref", `{"type":"object","properties":{"n":{"$ref":"https://example.com/n.json"}},"required":["n"]}`,
			"loading https://example.com/n.json: cannot resolve remote schemas"},
		{"file ref", `{"type":"object","properties":{"n":{"$ref":"file:///etc/passwd"}},"required":["n"]}`,
			"loading file:///etc/passwd: cannot resolve remote schemas"},
		{"missing local ref", `{"type":"object","properties":{"n":{"$ref":"#/$defs/missing"}},"required":["n"]}`,
			`no key \"missing\"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := Must(NewRaw("odd", "", json.RawMessage(tt.schema), func(ctx context.Context, in json.RawMessage) (llm.ToolResult, error) {
				return llm.ToolResult{Content: []llm.Block{llm.Text{Text: "handler saw " + string(in)}}}, nil
			}))
			var logs bytes.Buffer
			r := NewRegistry(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err := r.Register(tl); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "tool=odd") ||
				!strings.Contains(logs.String(), tt.reason) {
				t.Errorf("Register logged %q, want a warning naming the tool and saying %q", logs.String(), tt.reason)
			}
			got := r.Run(t.Context(), []llm.ToolUse{
				{ID: "1", Name: "odd", Input: json.RawMessage(`{"n": "x"}`)},
				{ID: "2", Name: "odd", Input: json.RawMessage(`[]`)},
			})
			want := []llm.ToolResult{
				textResult("1", `handler saw {"n": "x"}`),
				errorResult("2", `invalid input for tool "odd": the input must be a JSON object, got []`),
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Run mismatch (-want +got):\n%s", diff)
			}
			if string(tl.Spec().InputSchema) != tt.schema {
				t.Errorf("raw schema not kept as given: %s", tl.Spec().InputSchema)
			}
		})
	}

	// A schema the validator can use is validated, and nothing is logged.
	var logs bytes.Buffer
	r := NewRegistry(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	tl := Must(NewRaw("fine", "", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		func(context.Context, json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil }))
	if err := r.Register(tl); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("Register logged %q for a schema it validates", logs.String())
	}
	got := r.Run(t.Context(), []llm.ToolUse{{ID: "1", Name: "fine", Input: json.RawMessage(`{"n": "x"}`)}})
	if !got[0].IsError {
		t.Errorf("input breaking a usable schema was not rejected: %+v", got[0])
	}
}

// TestMust checks that Must passes a good tool through and panics with the
// constructor's error, unchanged, otherwise.
func TestMust(t *testing.T) {
	good := func(context.Context, pointInput) (string, error) { return "", nil }
	if tl := Must(New("good", "Fine.", good)); tl == nil || tl.Spec().Name != "good" {
		t.Errorf("Must(New(good)) = %v, want the tool", tl)
	}
	_, want := New("bad name", "Bad.", good)
	defer func() {
		if got, ok := recover().(error); !ok || got.Error() != want.Error() {
			t.Errorf("Must panicked with %v, want the constructor's error %v", got, want)
		}
	}()
	Must(New("bad name", "Bad.", good))
	t.Error("Must did not panic")
}
