package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
)

// prepare checks a call's input before the handler sees it: JSON, an
// object, and valid against the tool's schema. Its errors are written for
// the model, which reads them and retries with corrected input.
func prepare(t *Tool, input json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}") // an empty streamed input means {}
	}
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return nil, fmt.Errorf("invalid input for tool %q: the input is not valid JSON: %v", t.spec.Name, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("invalid input for tool %q: the input must be a JSON object, not %s", t.spec.Name, jsonKind(v))
	}
	if t.schema != nil {
		if err := t.schema.Validate(v); err != nil {
			return nil, fmt.Errorf("invalid input for tool %q: %s", t.spec.Name, describeValidation(err))
		}
	}
	return input, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// describeValidation rewrites a jsonschema-go validation error so that it
// names the input field rather than the schema location. The library
// reports, for example,
//
//	validating root: validating /properties/a: type: x has type "string", want "number"
//
// which becomes
//
//	field "a": type: x has type "string", want "number"
//
// An error of another shape is returned as it is, which is still readable.
func describeValidation(err error) string {
	msg := err.Error()
	path := ""
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		loc, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		path, msg = loc, tail
	}
	field := fieldOf(path)
	if missing, ok := strings.CutPrefix(msg, "required: missing properties: "); ok {
		msg = "missing required field(s) " + qualify(field, missing)
		return msg
	}
	if extra, ok := strings.CutPrefix(msg, "unexpected additional properties "); ok {
		msg = "unknown field(s) " + qualify(field, extra) + "; use only the fields in the input schema"
		return msg
	}
	if field == "" {
		return msg
	}
	return fmt.Sprintf("field %q: %s", field, msg)
}

// qualify rewrites a list of names as the library prints it, Go-quoted as
// in ["a" "b"], into "a", "b", each prefixed with the field path of the
// object that holds them: "x" becomes "obj.x".
func qualify(field, list string) string {
	rest, ok := strings.CutPrefix(list, "[")
	if !ok {
		return list
	}
	var names []string
	for {
		rest = strings.TrimLeft(rest, " ")
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			break
		}
		name, _ := strconv.Unquote(q)
		if field != "" {
			name = field + "." + name
		}
		names = append(names, strconv.Quote(name))
		rest = rest[len(q):]
	}
	if rest != "]" || len(names) == 0 {
		return list // not the expected shape: show it as it is
	}
	return strings.Join(names, ", ")
}

// fieldOf turns a schema location such as /properties/a/items/properties/b
// into the input path a[].b. Keywords that do not name a field (allOf/0,
// $defs/x) are skipped.
func fieldOf(loc string) string {
	if loc == "root" || !strings.HasPrefix(loc, "/") {
		return ""
	}
	parts := strings.Split(loc[1:], "/")
	var b strings.Builder
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties":
			if i+1 < len(parts) {
				i++
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(strings.NewReplacer("~1", "/", "~0", "~").Replace(parts[i]))
			}
		case "items", "prefixItems", "additionalItems":
			b.WriteString("[]")
		case "additionalProperties", "patternProperties":
			b.WriteString(".*")
		}
	}
	return b.String()
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
