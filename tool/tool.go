package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/google/jsonschema-go/jsonschema"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// A Tool is a function the model can call: a name, a description, an input
// schema and a handler. Build one with [New], [NewWithSchema] or [NewRaw],
// set its fields, then [Registry.Register] it; it must not change after.
type Tool struct {
	// Sequential makes this tool's calls run one at a time, in the order
	// started, for side effects on shared state (a shell session).
	Sequential bool
	// Queue, when set, runs the calls of every tool of that Queue one at a
	// time, in the order started: a write and an edit of a file must not mix.
	Queue string
	// Timeout bounds each call of this tool. Zero means the registry's
	// [Config.Timeout]; negative means none.
	Timeout time.Duration

	spec        llm.ToolSpec
	schema      *jsv.Schema   // nil for a raw schema the validator cannot use,
	unvalidated error         // and why (see NewRaw)
	decodeOpts  json2.Options // how prepare reads the input (see stringScopes)
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
	raw, _ := json.Marshal(schema) // nil, or a failure, leaves null or nothing: newTool rejects both
	t, err := newTool(name, description, raw, fn == nil, func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error) {
		in, err := decode[In](name, input)
		if err != nil {
			return llm.ToolResult{}, err
		}
		return toOutput(fn(ctx, in))
	})
	if err == nil && t.unvalidated != nil {
		return nil, fmt.Errorf("tool %q: %w", name, t.unvalidated) // a typed tool's schema must be usable
	}
	return t, err
}

// decode decodes input into an In as encoding/json does, with its errors,
// but in json/v2's one pass: a third less time on 5 MiB. As the schema passed,
// only a value too big for its Go type (1e400), or In and schema at odds, fails.
func decode[In any](tool string, input json.RawMessage) (in In, err error) {
	if json2.Unmarshal(input, &in, jsonv1.DefaultOptionsV1()) == nil {
		return in, nil
	}
	in = *new(In)
	var te *json.UnmarshalTypeError
	if err = json.Unmarshal(input, &in); errors.As(err, &te) {
		err = fmt.Errorf("invalid input for tool %q: field %q: %s does not fit in a Go %s", tool, te.Field, te.Value, te.Type)
	} else if err != nil {
		err = fmt.Errorf("invalid input for tool %q: %v", tool, err)
	}
	return in, err
}

// NewRaw makes a tool from a hand-written or foreign JSON schema with
// "type": "object", such as an MCP server's, sent to the model as given, and
// a handler of the raw input, whose result's ToolUseID the registry sets.
// Inputs are validated against the schema if the validator can use it; if
// not (an unknown draft, a $ref out of the schema), they are checked only
// for being a JSON object, fn must check them itself (as an MCP server
// does), and [Registry.Register] logs why. fn's error becomes an is_error result.
func NewRaw(name, description string, schema json.RawMessage, fn func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error)) (*Tool, error) {
	return newTool(name, description, append(json.RawMessage(nil), schema...), fn == nil, fn)
}

// newTool makes a tool, unless its constructor got a nil function. Only what
// the API requires of the name and schema is an error; why the validator
// cannot use the schema goes in unvalidated.
func newTool(name, description string, schema json.RawMessage, nilFn bool, handler func(context.Context, json.RawMessage) (llm.ToolResult, error)) (*Tool, error) {
	if nilFn {
		return nil, fmt.Errorf("tool %q: nil function", name)
	}
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("tool %q: invalid name: the API requires 1 to 64 letters, digits, '_' or '-' (%s)", name, namePattern)
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(schema))
	top, _ := doc.(map[string]any)
	if err != nil || top == nil {
		return nil, fmt.Errorf("tool %q: the input schema is not a JSON schema object: %.40s", name, schema)
	}
	if typ, ok := top["type"]; typ != "object" {
		b, _ := json.Marshal(typ)
		if !ok {
			b = []byte("none")
		}
		return nil, fmt.Errorf("tool %q: the input schema must have type \"object\", not %s (with New, make In a struct)", name, b)
	}
	t := &Tool{spec: llm.ToolSpec{Name: name, Description: description, InputSchema: schema}, handler: handler}
	// The compiler loads nothing: a $ref to a file or a URL fails to compile.
	const url = "https://agentloop.invalid/input.json" // a name for the schema; never fetched
	c := jsv.NewCompiler()
	c.UseLoader(noLoader{})
	if err = c.AddResource(url, doc); err == nil {
		t.schema, err = c.Compile(url)
	}
	if err != nil {
		t.unvalidated = fmt.Errorf("the validator cannot use the schema: %w", err)
	}
	t.decodeOpts = apirules.Lenient
	if names := map[string]bool{}; t.schema == nil || !stringScopes(top, "", names) {
		t.decodeOpts = json2.JoinOptions(apirules.Lenient, unreadStrings(names)) // without a schema, only the object is checked
	}
	return t, nil
}

// noLoader refuses every schema the compiler would fetch.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("not loading %s: a tool's schema must be self-contained", url)
}

// Spec returns the tool's description for the model, to send in
// [llm.Request.Tools]. The schema bytes are shared; do not modify them.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// Truncate returns s cut to about n bytes, on a UTF-8 boundary, with a note
// of the bytes cut, so that one long text cannot crowd out the rest.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = runeStart(s, n)
	return s[:n] + fmt.Sprintf("… [%d more bytes]", len(s)-n)
}

// runeStart returns the start of the UTF-8 sequence at s[n], n < len(s).
func runeStart(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

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
	// The validator gets the input as Go values, each string left unread
	// unless the schema may read it: a written file's 5 MiB is then
	// checked, not unquoted and copied. json/v2 parses in one pass, where
	// encoding/json scans first; encoding/json words its rare failures.
	var v any
	if json2.Unmarshal(input, &v, t.decodeOpts) != nil {
		if err := json.Unmarshal(input, new(json.RawMessage)); err != nil {
			return nil, fmt.Errorf("invalid input for tool %q: the input is not valid JSON: %v", t.spec.Name, err)
		}
		// Valid JSON a float64 cannot hold (1e400): keep numbers as written.
		v, _ = jsv.UnmarshalJSON(bytes.NewReader(input))
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("invalid input for tool %q: the input must be a JSON object, got %.40s", t.spec.Name, bytes.TrimSpace(input))
	}
	var verr *jsv.ValidationError
	if t.schema == nil || !errors.As(t.schema.Validate(v), &verr) {
		return input, nil
	}
	ps := slices.Compact(slices.Sorted(slices.Values(problems(v, verr, nil))))
	msg := ps[0]
	if len(ps) > 1 {
		msg = fmt.Sprintf("%d problems:\n- %s", len(ps), strings.Join(ps, "\n- "))
	}
	return nil, fmt.Errorf("invalid input for tool %q: %s", t.spec.Name, msg)
}

var (
	namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)             // the Messages API's rule for tool names
	printer     = message.NewPrinter(language.English)                    // words the validator's messages
	localRef    = regexp.MustCompile(`^#(/(\$defs|definitions)/[^/]+)?$`) // the $refs stringScopes follows
)

// unreadStrings decodes each string value as "", checked but not unquoted,
// unless a name on its path is in read; object names are decoded as usual.
func unreadStrings(read map[string]bool) json2.Options {
	return json2.WithUnmarshalers(json2.UnmarshalFromFunc(func(dec *jsontext.Decoder, _ *string) error {
		k, n := dec.StackIndex(dec.StackDepth())
		if k == '{' && n%2 == 0 || len(read) > 0 && slices.ContainsFunc(slices.Collect(dec.StackPointer().Tokens()), func(name string) bool { return read[name] }) {
			return errors.ErrUnsupported // a name, or a string the schema may read
		}
		_, err := dec.ReadValue()
		return err
	}))
}

// stringScopes reports whether schema s may read any string of an input,
// or compare values whole, and adds to names the properties under
// which it does, as a keyword under properties.p reads only at or below a
// member p (through "$ref": "#" too). It walks values that are data (enum,
// default) too: more reading, never less.
func stringScopes(s any, scope string, names map[string]bool) (all bool) {
	switch s := s.(type) {
	case map[string]any:
		for k, v := range s {
			sub := scope
			switch k {
			case "minLength", "maxLength", "pattern", "format", "enum", "const", "uniqueItems",
				"contentEncoding", "contentMediaType", "contentSchema":
				names[scope], all = true, all || scope == "" // unscoped: at the top, or in a $defs entry
			case "properties":
				if props, ok := v.(map[string]any); ok {
					for name, p := range props {
						all = stringScopes(p, name, names) || all
					}
					continue
				}
			case "$defs", "definitions":
				sub = "" // a $ref may apply them anywhere
			case "$ref", "$dynamicRef", "$recursiveRef":
				all = all || !localRef.MatchString(fmt.Sprint(v))
			}
			all = stringScopes(v, sub, names) || all
		}
	case []any:
		for _, v := range s {
			all = stringScopes(v, scope, names) || all
		}
	}
	return all
}

// problems appends what is wrong with input v to out, one line per failed
// keyword, the leaves of the validator's error tree, each naming its field;
// the inner nodes (the root, $ref, allOf) only group them.
func problems(v any, e *jsv.ValidationError, out []string) []string {
	for _, c := range e.Causes {
		out = problems(v, c, out)
	}
	if len(e.Causes) > 0 {
		return out
	}
	at := fieldPath(v, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		return append(out, "missing required "+fields(at, k.Missing))
	case *kind.AdditionalProperties:
		return append(out, "unknown "+fields(at, k.Properties)+"; use only the fields in the input schema")
	}
	if at == "" {
		return append(out, e.ErrorKind.LocalizedString(printer))
	}
	return append(out, fmt.Sprintf("field %q: %s", at, e.ErrorKind.LocalizedString(printer)))
}

// fieldPath names the value at loc, a JSON pointer's tokens, within v as
// the model wrote it (tags[1].name), looking into v for what is an index.
func fieldPath(v any, loc []string) (path string) {
	for _, tok := range loc {
		if a, ok := v.([]any); ok {
			if i, err := strconv.Atoi(tok); err == nil && i < len(a) {
				v = a[i]
			}
			path += "[" + tok + "]"
			continue
		}
		m, _ := v.(map[string]any)
		if v = m[tok]; path != "" {
			path += "."
		}
		path += tok
	}
	return path
}

// fields names properties of the object at path at: field "a", or fields
// "at.a", "at.b".
func fields(at string, names []string) string {
	names = slices.Sorted(slices.Values(names))
	for i, n := range names {
		names[i] = strconv.Quote(strings.TrimPrefix(at+"."+n, "."))
	}
	if len(names) == 1 {
		return "field " + names[0]
	}
	return "fields " + strings.Join(names, ", ")
}
