package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentloop/agentloop/llm"
)

// prepare checks a call's input before the handler sees it: JSON, an
// object, and valid against the tool's schema. Its errors are written for
// the model, which reads them and retries with corrected input, so a
// schema violation lists every problem of the call, not only the first.
func prepare(t *Tool, input json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}") // an empty streamed input means {}
	}
	// Most schemas read no string's content: checking the input with its
	// strings left unread spares unquoting and copying a written file's
	// 5 MiB. Only a pass ends here; the full path words what is wrong.
	var v any
	if (t.shapeOnly || t.schema == nil) && json2.Unmarshal(input, &v, lenient, unreadStrings) == nil {
		if _, ok := v.(map[string]any); ok && (t.schema == nil || t.schema.Validate(v) == nil) {
			return input, nil
		}
	}
	// encoding/json words the rare failures of json/v2, which parses in one
	// pass where encoding/json scans first: half the time of a 5 MiB input.
	if v = nil; json2.Unmarshal(input, &v, lenient) != nil {
		if err := json.Unmarshal(input, new(json.RawMessage)); err != nil {
			return nil, fmt.Errorf("invalid input for tool %q: the input is not valid JSON: %v", t.spec.Name, err)
		}
		// Valid JSON that a float64 cannot hold (1e400): keep numbers as
		// written and let the handler judge.
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
	printer = message.NewPrinter(language.English) // words the validator's messages
	// lenient reads JSON as encoding/json does (duplicate names, invalid UTF-8).
	lenient = json2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	// unreadStrings decodes each string value as "", checked but not
	// unquoted; object names are decoded as usual.
	unreadStrings = json2.WithUnmarshalers(json2.UnmarshalFromFunc(func(dec *jsontext.Decoder, _ *string) error {
		if k, n := dec.StackIndex(dec.StackDepth()); k == '{' && n%2 == 0 {
			return errors.ErrUnsupported // a name
		}
		_, err := dec.ReadValue()
		return err
	}))
)

// readsStrings reports whether schema s may read a string's content (or
// compare values whole): whether it has such a keyword anywhere, even as a
// property's name, to err on the safe side.
func readsStrings(s any) bool {
	switch s := s.(type) {
	case map[string]any:
		for k, v := range s {
			if slices.Contains([]string{"minLength", "maxLength", "pattern", "format", "enum", "const", "uniqueItems",
				"contentEncoding", "contentMediaType", "contentSchema"}, k) || readsStrings(v) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(s, readsStrings)
	}
	return false
}

// problems appends what is wrong with input v to out, one line per failed
// keyword, each naming its field. The validator's error is a tree whose
// leaves are the failed keywords; the inner nodes (the root, $ref, allOf)
// only group them.
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
// the model wrote it: tags[1].name. Looking into v tells array indexes from
// property names.
func fieldPath(v any, loc []string) (path string) {
	for _, tok := range loc {
		if a, ok := v.([]any); ok {
			if i, err := strconv.Atoi(tok); err == nil && i < len(a) {
				v = a[i]
			}
			path += "[" + tok + "]"
			continue
		}
		if m, ok := v.(map[string]any); ok {
			v = m[tok]
		}
		if path != "" {
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

// shape makes content fit to send: nil blocks and empty text, which the
// API rejects, are dropped; text beyond MaxOutputBytes is cut, on a UTF-8
// boundary, with a note saying how much was dropped; an error gets a
// message even if the tool gave none. Images are kept and not counted.
func (r *Registry) shape(content []llm.Block, isError bool) []llm.Block {
	limit, total := r.cfg.MaxOutputBytes, 0
	var out []llm.Block // nil if nothing is left
	for _, b := range content {
		t, isText := b.(llm.Text)
		if isText {
			total += len(t.Text)
			if over := total - limit; limit >= 0 && over > 0 { // past the limit: later text is cut whole
				t.Text = t.Text[:runeStart(t.Text, max(len(t.Text)-over, 0))]
			}
			b = t
		}
		if b != nil && !(isText && t.Text == "") {
			out = append(out, b)
		}
	}
	if limit >= 0 && total > limit {
		out = append(out, llm.Text{Text: fmt.Sprintf("[output truncated: the tool returned %d bytes of text; only the first %d are shown]", total, limit)})
	}
	if len(out) == 0 && isError {
		return []llm.Block{llm.Text{Text: "the tool failed without saying why"}}
	}
	return out
}
