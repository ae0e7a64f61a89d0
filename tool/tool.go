package tool

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	json2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/llm"
)

// A Tool is a function the model can call: a name, a description, an input
// schema and a handler. Build one with [New], [NewWithSchema] or [NewRaw],
// set its fields, then [Registry.Register] it; it must not change after.
type Tool struct {
	// Queue, when set, runs the calls of every tool of that Queue one at a
	// time, in the order started, for side effects on shared state: a write
	// and an edit of a file must not mix. A tool alone in its Queue runs its
	// own calls so (a shell session).
	Queue string
	// Timeout bounds each call of this tool. Zero means the registry's
	// [Config.Timeout]; negative means none.
	Timeout time.Duration
	// Deferrable lets an agent with tool search on send this tool's spec
	// with [llm.ToolSpec].DeferLoading, to be loaded only when a search
	// finds it: for the many tools of MCP servers.
	Deferrable bool

	spec        llm.ToolSpec
	schema      *jsonschema.Resolved // nil for a raw schema the validator cannot use,
	unvalidated error                // and why (see NewRaw)
	handler     func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error)
}

// New makes a tool from a typed Go function. Its input schema is generated
// from In, a struct (or a map with string keys): each exported field
// becomes a property named by its json tag, required unless the tag says
// omitempty or omitzero, and described by its jsonschema tag:
//
//	type In struct {
//		City string `json:"city" jsonschema:"the city, for example Paris"`
//		Days int    `json:"days,omitempty" jsonschema:"forecast length in days"`
//	}
//
// Unknown properties are rejected; for what tags cannot say (an enum, a
// minimum), use [NewWithSchema]. fn's result becomes the content: a string
// as text, an [llm.Block], []llm.Block or [llm.ToolResult] (to set IsError)
// as it is, any other value as its JSON; an error, an is_error result of its text.
func New[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) (*Tool, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %q: generating the input schema: %w", name, err)
	}
	return NewWithSchema(name, description, s, fn)
}

// Must returns t, or panics if err is not nil, for a typed tool whose
// schema is known to be good: tool.Must(tool.New("add", "Add.", add)).
func Must(t *Tool, err error) *Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// NewWithSchema is like [New] but takes the input schema, usually one from
// jsonschema.For[In] refined, say with an Enum. Inputs are validated
// against it, then decoded into In as encoding/json does: the two must agree.
func NewWithSchema[In, Out any](name, description string, schema *jsonschema.Schema, fn func(ctx context.Context, in In) (Out, error)) (*Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("tool %q: nil function", name)
	}
	raw, _ := json.Marshal(schema) // nil, or a failure, leaves null or nothing: NewRaw rejects both
	t, err := NewRaw(name, description, raw, func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error) {
		// Decoded as encoding/json does, in json/v2's one pass. As the
		// schema passed, only a value too big for its Go type (1e400), or
		// In and schema at odds, fails.
		var in In
		if err := json2.Unmarshal(input, &in, v1); err != nil {
			return llm.ToolResult{}, fmt.Errorf("invalid input for tool %q: %s", name, unreadable(err))
		}
		return toOutput(fn(ctx, in))
	})
	if err == nil && t.unvalidated != nil {
		return nil, fmt.Errorf("tool %q: %w", name, t.unvalidated) // a typed tool's schema must be usable
	}
	return t, err
}

// NewRaw makes a tool from a hand-written or foreign JSON schema with
// "type": "object", such as an MCP server's, sent to the model as given, and
// a handler of the raw input, whose result's ToolUseID the registry sets.
// Inputs are validated against the schema if the validator can use it; if
// not (a draft other than 2020-12 and 7, a $ref out of the schema), they are
// checked only for being a JSON object, fn must check them itself (as an
// MCP server does), and [Registry.Register] logs why. fn's error becomes an
// is_error result.
func NewRaw(name, description string, schema json.RawMessage, fn func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error)) (*Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("tool %q: nil function", name)
	}
	// Only what the API requires of the name and schema is an error; why
	// the validator cannot use the schema goes in unvalidated.
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("tool %q: invalid name: the API requires 1 to 64 letters, digits, '_' or '-' (%s)", name, namePattern)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil || top == nil {
		return nil, fmt.Errorf("tool %q: the input schema is not a JSON schema object: %.40s", name, schema)
	}
	if typ := cmp.Or(string(top["type"]), "none"); typ != `"object"` {
		return nil, fmt.Errorf("tool %q: the input schema must have type \"object\", not %s (with New, make In a struct)", name, typ)
	}
	t := &Tool{spec: llm.ToolSpec{Name: name, Description: description, InputSchema: append(json.RawMessage(nil), schema...)}, handler: fn}
	// Resolve loads nothing: a $ref to a file or a URL fails.
	drafts := []string{"", "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#"}
	var s jsonschema.Schema
	err := json.Unmarshal(schema, &s)
	if err == nil {
		t.schema, err = s.Resolve(nil)
	}
	if err == nil && !slices.Contains(drafts, s.Schema) {
		err = fmt.Errorf("unknown draft %q: the validator reads 2020-12 and 7", s.Schema)
	}
	if err != nil {
		t.schema, t.unvalidated = nil, fmt.Errorf("the validator cannot use the schema: %w", err)
	}
	return t, nil
}

// Spec returns the tool's description for the model, to send in
// [llm.Request.Tools]. The schema bytes are shared; do not modify them.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// toOutput turns what a typed tool's function returned into its result.
func toOutput(v any, err error) (llm.ToolResult, error) {
	if err != nil {
		return llm.ToolResult{}, err
	}
	switch v := v.(type) {
	case string:
		return llm.ToolResult{Content: []llm.Block{llm.Text{Text: v}}}, nil
	case llm.ToolResult: // before llm.Block, which it is
		return v, nil
	case []llm.Block:
		return llm.ToolResult{Content: v}, nil
	case llm.Block: // a nil Block arrives as a nil any, encoded below
		return llm.ToolResult{Content: []llm.Block{v}}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return llm.ToolResult{}, fmt.Errorf("encoding the result as JSON: %v", err)
	}
	return llm.ToolResult{Content: []llm.Block{llm.Text{Text: string(b)}}}, nil
}

// prepare checks a call's input before the handler sees it: JSON, an
// object, and valid against the tool's schema. Its errors are for the model
// to retry with, so a schema violation lists every problem, not the first.
func prepare(t *Tool, input json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}") // an empty streamed input means {}
	}
	var v any
	if err := json2.Unmarshal(input, &v, v1); err != nil {
		return nil, fmt.Errorf("invalid input for tool %q: %s", t.spec.Name, unreadable(err))
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("invalid input for tool %q: the input must be a JSON object, got %.40s", t.spec.Name, bytes.TrimSpace(input))
	}
	if t.schema == nil {
		return input, nil
	}
	switch ps := report(t.schema, v); len(ps) {
	case 0:
		return input, nil
	case 1:
		return nil, fmt.Errorf("invalid input for tool %q: %s", t.spec.Name, ps[0])
	default:
		return nil, fmt.Errorf("invalid input for tool %q: %d problems:\n- %s", t.spec.Name, len(ps), strings.Join(ps, "\n- "))
	}
}

// report returns each way v breaks s, sorted; none if v is valid. The
// validator stops at the first, so [problems] walks v part by part, against
// the parts of s with its definitions, if s's $refs are all to them: one
// elsewhere would point out of the part.
func report(s *jsonschema.Resolved, v any) []string {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	raw, _ := json.Marshal(s.Schema()) // compact: "$ref":"…"
	local := bytes.Count(raw, []byte(`"$ref":"#/$defs/`)) + bytes.Count(raw, []byte(`"$ref":"#/definitions/`))
	var ps []string
	if !bytes.Contains(raw, []byte(`"$dynamicRef"`)) && bytes.Count(raw, []byte(`"$ref":`)) == local {
		ps = problems(v, s.Schema(), s.Schema(), "", nil)
	}
	if len(ps) == 0 { // not walked, or the walk missed what the validator found: never call v valid
		return []string{violation("", err)}
	}
	return slices.Compact(slices.Sorted(slices.Values(ps)))
}

// Violations checks data, JSON the model wrote other than a tool's input
// (such as a typed final answer), as a tool's input is checked: it returns
// each way data breaks schema, naming its path as a tool's input error
// does, or why data is not JSON; none if data is valid.
func Violations(schema *jsonschema.Resolved, data []byte) []string {
	var v any
	if err := json2.Unmarshal(data, &v, v1); err != nil {
		return []string{"not valid JSON: " + err.Error()}
	}
	return report(schema, v)
}

// unreadable words why input could not be decoded: not JSON, or a value
// its Go type cannot hold.
func unreadable(err error) string {
	if te, ok := errors.AsType[*jsonv1.UnmarshalTypeError](err); ok && te.Field != "" {
		return fmt.Sprintf("field %q: %s does not fit in a Go %s", te.Field, te.Value, te.Type)
	}
	return "the input is not valid JSON: " + err.Error()
}

var (
	namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)            // the Messages API's rule for tool names
	v1          = jsonv1.DefaultOptionsV1()                              // encoding/json's grammar and errors, json/v2's speed
	number      = regexp.MustCompile(`(\d)/1\b|(\.\d*[1-9])0+\b|\.0+\b`) // the zeros a bound's number is printed with
	falseSchema = &jsonschema.Schema{Not: &jsonschema.Schema{}}          // the schema false, as the validator reads it
	// jsonTypes names the JSON type of a value as json/v2 decodes it into any; nil, of no kind, is null.
	jsonTypes = map[reflect.Kind]string{
		reflect.Bool: "boolean", reflect.Float64: "number", reflect.String: "string", reflect.Slice: "array", reflect.Map: "object",
	}
)

// problems appends to out a line for each way v, at path at, breaks schema
// s, a part of root whose $refs are to root's definitions. The validator
// stops at the first problem, so an object or array whose schema only types
// it and shapes its members is checked member by member, and each member's
// own problem is reported.
func problems(v any, s, root *jsonschema.Schema, at string, out []string) []string {
	want := s.Types // the JSON types s allows; none means any
	if s.Type != "" {
		want = []string{s.Type}
	}
	got := cmp.Or(jsonTypes[reflect.ValueOf(v).Kind()], "null") // as the model wrote it: a number
	if n, ok := v.(float64); ok && n == math.Trunc(n) && slices.Contains(want, "integer") {
		got = "integer" // which a number may be
	}
	if len(want) > 0 && !slices.Contains(want, got) {
		return append(out, field(at)+fmt.Sprintf("got %s, want %s", got, strings.Join(want, " or ")))
	}
	if !shapeOnly(s) {
		part := *s // read in root's draft, with its definitions
		part.Schema, part.Defs, part.Definitions = root.Schema, root.Defs, root.Definitions
		rs, err := part.Resolve(nil)
		if err == nil {
			err = rs.Validate(v)
		}
		if err != nil {
			out = append(out, violation(at, err))
		}
		return out
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := v[name]; !ok {
				out = append(out, fmt.Sprintf("missing required field %q", join(at, name)))
			}
		}
		for name, x := range v {
			switch sub, ok := s.Properties[name]; {
			case ok:
				out = problems(x, sub, root, join(at, name), out)
			case reflect.DeepEqual(s.AdditionalProperties, falseSchema):
				out = append(out, fmt.Sprintf("unknown field %q; use only the fields in the input schema", join(at, name)))
			case s.AdditionalProperties != nil:
				out = problems(x, s.AdditionalProperties, root, join(at, name), out)
			}
		}
	case []any:
		for i, item := range v {
			if s.Items != nil {
				out = problems(item, s.Items, root, fmt.Sprintf("%s[%d]", at, i), out)
			}
		}
	}
	return out
}

// shapeOnly reports whether s says no more of a value than its type, its
// properties, which are required, whether others may be there, and its
// items: what [problems] checks member by member.
func shapeOnly(s *jsonschema.Schema) bool {
	c := *s
	c.Type, c.Types, c.Properties, c.Required, c.AdditionalProperties, c.Items = "", nil, nil, nil, nil, nil
	c.ID, c.Schema, c.Comment, c.Defs, c.Definitions, c.Extra, c.PropertyOrder = "", "", "", nil, nil, nil, nil
	c.Title, c.Description, c.Default, c.Examples, c.Deprecated, c.ReadOnly, c.WriteOnly = "", "", nil, nil, false, false, false
	return reflect.ValueOf(c).IsZero()
}

// violation words the validator's error at path at: its innermost cause,
// which names the keyword, cut short, lest it quote a long value whole,
// and a bound's numbers as written (255, not 255.000000; 300, not 300/1).
func violation(at string, err error) string {
	for errors.Unwrap(err) != nil {
		err = errors.Unwrap(err)
	}
	msg := err.Error()
	if kw, _, _ := strings.Cut(msg, ":"); slices.Contains([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}, kw) {
		msg = number.ReplaceAllString(msg, "$1$2")
	}
	return field(at) + llm.Truncate(msg, 300)
}

func field(at string) string {
	if at == "" {
		return ""
	}
	return fmt.Sprintf("field %q: ", at)
}

func join(at, name string) string { return strings.TrimPrefix(at+"."+name, ".") }
