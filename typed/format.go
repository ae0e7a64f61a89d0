package typed

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/outputformat"
)

// outputSchema returns schema, a JSON schema, as output_config.format
// takes it, transformed as the official SDKs do: each keyword the API does
// not take (a minimum, a pattern with lookaround, an unknown format) moves
// into its schema's description, oneOf and a list of types become anyOf,
// and every object gets additionalProperties false. The transform only
// loosens: the answer is still validated against the original. A schema
// that allows properties it does not name has no such form:
// [errOpenObject].
func outputSchema(schema []byte) ([]byte, error) {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the schema is not a JSON object: %w", err)
	}
	open := false
	out := transform(s, &open)
	if open {
		return nil, errOpenObject
	}
	return json.Marshal(out)
}

// errOpenObject says a schema allows properties it does not name (a Go
// map, an any): output_config.format cannot, since the API takes only
// additionalProperties false, which would hold the answer to {}.
var errOpenObject = errors.New("the schema allows properties it does not name, which output_config.format cannot")

// transform is outputSchema's, for one schema; it sets open for a schema
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
		case k == "format" && !slices.Contains(outputformat.StringFormats, fmt.Sprint(v)),
			k == "minItems" && v != 0.0 && v != 1.0,
			k == "pattern" && outputformat.BadPattern.MatchString(fmt.Sprint(v)),
			!slices.Contains(outputformat.Keywords, k):
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
