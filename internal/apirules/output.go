package apirules

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The structured outputs page's subset of JSON Schema: the keywords the API
// takes in output_config.format's schema, and the string formats.
var (
	formatKeywords = []string{"$ref", "$defs", "definitions", "type", "properties", "required", "additionalProperties",
		"items", "enum", "const", "anyOf", "allOf", "description", "title", "default", "format", "minItems", "pattern"}
	stringFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
	// badPattern finds what the API's regular expressions lack:
	// lookaround, backreferences, word boundaries.
	badPattern = regexp.MustCompile(`\(\?<?[=!]|\\[1-9bBk]`)
)

// OutputSchema returns schema, a JSON schema, as output_config.format
// takes it, transformed as the official SDKs do: each keyword the API does
// not take (a minimum, a pattern with lookaround, an unknown format) moves
// into its schema's description, oneOf and a list of types become anyOf,
// and every object gets additionalProperties false. The transform only
// loosens: the answer is still validated against the original. A schema
// that allows properties it does not name has no such form:
// [ErrOpenObject].
func OutputSchema(schema []byte) ([]byte, error) {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the schema is not a JSON object: %w", err)
	}
	open := false
	out := transform(s, &open)
	if open {
		return nil, ErrOpenObject
	}
	return json.Marshal(out)
}

// ErrOpenObject says a schema allows properties it does not name (a Go
// map, an any): output_config.format cannot, since the API takes only
// additionalProperties false, which would hold the answer to {}.
var ErrOpenObject = errors.New("the schema allows properties it does not name, which output_config.format cannot")

// transform is OutputSchema's, for one schema; it sets open for a schema
// that allows properties it does not name.
func transform(s map[string]any, open *bool) map[string]any {
	if types, ok := s["type"].([]any); ok && len(types) > 1 {
		return transform(union(s, types), open)
	}
	out := make(map[string]any, len(s))
	var moved []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		sub, isSchema := v.(map[string]any)
		switch {
		case k == "$schema" || k == "$id" || k == "$comment":
		case k == "properties" || k == "$defs" || k == "definitions":
			m, _ := v.(map[string]any)
			t := make(map[string]any, len(m))
			for name, p := range m {
				if p, ok := p.(map[string]any); ok {
					t[name] = transform(p, open)
				}
			}
			out[k] = t
		case k == "items" && isSchema:
			out[k] = transform(sub, open)
		case k == "anyOf" || k == "oneOf" || k == "allOf":
			list, _ := v.([]any)
			t := make([]any, 0, len(list))
			for _, p := range list {
				if p, ok := p.(map[string]any); ok {
					t = append(t, transform(p, open))
				}
			}
			out[replaced(k, "oneOf", "anyOf")] = t
		case k == "additionalProperties" && v == false:
		case k == "additionalProperties":
			*open = true
		case k == "format" && !slices.Contains(stringFormats, fmt.Sprint(v)),
			k == "minItems" && v != 0.0 && v != 1.0,
			k == "pattern" && badPattern.MatchString(fmt.Sprint(v)),
			!slices.Contains(formatKeywords, k):
			b, _ := json.Marshal(v)
			moved = append(moved, k+": "+string(b))
		default:
			out[k] = v
		}
	}
	if _, ok := s["properties"]; ok || isType(s, "object") {
		out["additionalProperties"] = false
	}
	if len(moved) > 0 {
		d, _ := out["description"].(string)
		out["description"] = strings.TrimSpace(d + "\n\n{" + strings.Join(moved, ", ") + "}")
	}
	return out
}

// union returns s, whose type lists several, as the anyOf of one schema
// per type, each with s's keywords, the null one bare; s's description
// stays on the whole.
func union(s map[string]any, types []any) map[string]any {
	out := map[string]any{}
	var variants []any
	for _, t := range types {
		v := map[string]any{"type": t}
		for k, x := range s {
			switch {
			case k == "description" || k == "title" || k == "default":
				out[k] = x
			case k != "type" && t != "null":
				v[k] = x
			}
		}
		variants = append(variants, v)
	}
	out["anyOf"] = variants
	return out
}

// replaced returns to if k is from, else k.
func replaced(k, from, to string) string {
	if k == from {
		return to
	}
	return k
}

// isType reports whether schema s allows JSON type typ.
func isType(s map[string]any, typ string) bool {
	switch t := s["type"].(type) {
	case string:
		return t == typ
	case []any:
		return slices.Contains(t, any(typ))
	}
	return false
}

// FormatProblems returns each way schema, output_config.format's, breaks
// the API's rules for it, naming its JSON pointer: a keyword it does not
// take, an object without additionalProperties false, a string format it
// does not know, a minItems above 1, a pattern it cannot match.
func FormatProblems(schema any) []string {
	return formatProblems(schema, "", nil)
}

func formatProblems(v any, at string, out []string) []string {
	s, ok := v.(map[string]any)
	if !ok {
		return append(out, fmt.Sprintf("%s: a schema must be a JSON object", replaced(at, "", "/")))
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		switch k {
		case "properties", "$defs", "definitions":
			m, _ := v.(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(m)) {
				out = formatProblems(m[name], at+"/"+k+"/"+name, out)
			}
		case "items":
			out = formatProblems(v, at+"/items", out)
		case "anyOf", "allOf":
			list, _ := v.([]any)
			for i, p := range list {
				out = formatProblems(p, fmt.Sprintf("%s/%s/%d", at, k, i), out)
			}
		case "format":
			if !slices.Contains(stringFormats, fmt.Sprint(v)) {
				out = append(out, fmt.Sprintf("%s/format: format %v is not supported (supported: %s)", at, v, strings.Join(stringFormats, ", ")))
			}
		case "pattern":
			if badPattern.MatchString(fmt.Sprint(v)) {
				out = append(out, fmt.Sprintf("%s/pattern: lookaround, backreferences and word boundaries are not supported: %v", at, v))
			}
		case "minItems":
			if v != 0.0 && v != 1.0 {
				out = append(out, fmt.Sprintf("%s/minItems: only 0 and 1 are supported, not %v", at, v))
			}
		case "additionalProperties":
			if v != false {
				out = append(out, fmt.Sprintf("%s/additionalProperties: must be false", at))
			}
		default:
			if !slices.Contains(formatKeywords, k) && k != "$schema" {
				out = append(out, fmt.Sprintf("%s/%s: keyword %q is not supported in output_config.format", at, k, k))
			}
		}
	}
	if _, has := s["additionalProperties"]; !has && (isType(s, "object") || s["properties"] != nil) {
		out = append(out, fmt.Sprintf("%s: an object schema must set additionalProperties to false", replaced(at, "", "/")))
	}
	return out
}
