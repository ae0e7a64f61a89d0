package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// Numbers stay json.Number, so that a number no float64 holds, such as
	// 1e400, is valid JSON here; whether it fits is the handler's business.
	v, err := jsv.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("invalid input for tool %q: the input is not valid JSON: %v", t.spec.Name, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("invalid input for tool %q: the input must be a JSON object, not %s", t.spec.Name, jsonKind(v))
	}
	if t.schema == nil {
		return input, nil
	}
	var verr *jsv.ValidationError
	if err := t.schema.Validate(v); errors.As(err, &verr) {
		ps := problems(v, verr)
		if len(ps) == 1 {
			return nil, fmt.Errorf("invalid input for tool %q: %s", t.spec.Name, ps[0])
		}
		return nil, fmt.Errorf("invalid input for tool %q (%d problems):\n- %s", t.spec.Name, len(ps), strings.Join(ps, "\n- "))
	} else if err != nil {
		return nil, fmt.Errorf("invalid input for tool %q: %v", t.spec.Name, err)
	}
	return input, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// printer words the validator's messages.
var printer = message.NewPrinter(language.English)

// problems lists what is wrong with input v, one line per failed keyword,
// each naming the field, in a stable order. The validator's error is a
// tree whose leaves are the failed keywords; the inner nodes (the root,
// $ref, allOf) only group them.
func problems(v any, err *jsv.ValidationError) []string {
	var out []string
	var walk func(e *jsv.ValidationError)
	walk = func(e *jsv.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		if len(e.Causes) > 0 {
			return
		}
		at := fieldPath(v, e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			out = append(out, "missing required "+fields(at, k.Missing))
		case *kind.AdditionalProperties:
			out = append(out, "unknown "+fields(at, k.Properties)+"; use only the fields in the input schema")
		default:
			msg := k.LocalizedString(printer)
			if at != "" {
				msg = fmt.Sprintf("field %q: %s", at, msg)
			}
			out = append(out, msg)
		}
	}
	walk(err)
	slices.Sort(out)
	return slices.Compact(out)
}

// fieldPath names the value at loc, a JSON pointer's tokens, within v as
// the model wrote it: tags[1].name. Looking into v tells array indexes from
// property names.
func fieldPath(v any, loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		if a, ok := v.([]any); ok {
			fmt.Fprintf(&b, "[%s]", tok)
			if i, err := strconv.Atoi(tok); err == nil && i < len(a) {
				v = a[i]
			}
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
		if m, ok := v.(map[string]any); ok {
			v = m[tok]
		}
	}
	return b.String()
}

// fields names the properties names of the object at path at: field "a",
// or fields "at.a", "at.b".
func fields(at string, names []string) string {
	names = slices.Sorted(slices.Values(names))
	for i, n := range names {
		if at != "" {
			n = at + "." + n
		}
		names[i] = strconv.Quote(n)
	}
	if len(names) == 1 {
		return "field " + names[0]
	}
	return "fields " + strings.Join(names, ", ")
}

// shape makes content fit to send: empty text blocks, which the API
// rejects, are dropped; text beyond MaxOutputBytes is cut with a note; an
// error gets a message even if the tool gave none.
func (r *Registry) shape(content []llm.Block, isError bool) []llm.Block {
	if fits(content, r.cfg.MaxOutputBytes) {
		return content // the common case: nothing to change, nothing to copy
	}
	out := make([]llm.Block, 0, len(content)+1)
	total := 0
	for _, b := range content {
		if t, ok := b.(llm.Text); ok {
			if t.Text == "" {
				continue
			}
			total += len(t.Text)
		}
		if b != nil {
			out = append(out, b)
		}
	}
	if max := r.cfg.MaxOutputBytes; max > 0 && total > max {
		out = truncate(out, max, total)
	}
	if len(out) == 0 {
		if isError {
			return []llm.Block{llm.Text{Text: "the tool failed without saying why"}}
		}
		return nil
	}
	return out
}

// fits reports whether content can be sent as it is: non-empty, with no
// nil block or empty text, and text within max bytes.
func fits(content []llm.Block, max int) bool {
	total := 0
	for _, b := range content {
		switch b := b.(type) {
		case nil:
			return false
		case llm.Text:
			if b.Text == "" {
				return false
			}
			total += len(b.Text)
		}
	}
	return len(content) > 0 && (max < 0 || total <= max)
}

// truncate keeps the first max bytes of text in blocks, cut on a UTF-8
// boundary, and appends a note saying how much was dropped. Non-text blocks
// are kept.
func truncate(blocks []llm.Block, max, total int) []llm.Block {
	out := blocks[:0]
	budget := max
	for _, b := range blocks {
		t, ok := b.(llm.Text)
		if !ok {
			out = append(out, b)
			continue
		}
		if budget == 0 {
			continue
		}
		if len(t.Text) > budget {
			cut := budget
			for cut > 0 && !utf8.RuneStart(t.Text[cut]) {
				cut--
			}
			t.Text = t.Text[:cut]
			budget = 0
		} else {
			budget -= len(t.Text)
		}
		if t.Text != "" {
			out = append(out, t)
		}
	}
	note := fmt.Sprintf("[output truncated: the tool returned %d bytes of text; only the first %d are shown]", total, max)
	return append(out, llm.Text{Text: note})
}
