package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/typed"
)

// defineSchemaFlag defines --json-schema, Claude Code's flag: the schema
// the final answer must be valid against, inline or @FILE.
func defineSchemaFlag(fs *flag.FlagSet, o *options) {
	fs.Func("json-schema", "", func(v string) (err error) {
		o.schema, err = parseSchema(v)
		return err
	})
}

// parseSchema reads --json-schema's value: a JSON schema, or @FILE for
// one in a file. Neither JSON nor a schema the validator can use is a
// usage error, before any request.
func parseSchema(v string) (*jsonschema.Schema, error) {
	text, where := []byte(v), "--json-schema"
	if name, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, usageError("--json-schema: %v", err)
		}
		text, where = b, "--json-schema "+v
	}
	var s jsonschema.Schema
	var raw any
	switch err := json.Unmarshal(text, &raw); {
	case err != nil:
		return nil, usageError("%s: not valid JSON: %v", where, err)
	case !isObject(raw):
		return nil, usageError("%s: a JSON schema must be an object, such as {\"type\": \"object\", ...}", where)
	}
	if err := json.Unmarshal(text, &s); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			_, kw, _ := strings.Cut("."+te.Field, ".schemaWithoutMethods.") // the library's inner struct
			err = fmt.Errorf("keyword %q cannot be a JSON %s", cmp.Or(kw, te.Field), te.Value)
		}
		return nil, usageError("%s: not a valid JSON schema: %v", where, err)
	}
	if err := checkTypes(raw); err != nil {
		return nil, usageError("%s: not a valid JSON schema: %v", where, err)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, usageError("%s: not a valid JSON schema: %v", where, err)
	}
	return &s, nil
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

// checkTypes returns an error for a "type" that names no JSON type, which
// the validator takes, and no value would then match.
func checkTypes(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			switch k {
			case "type":
				names, _ := sub.([]any)
				if name, ok := sub.(string); ok {
					names = []any{name}
				}
				for _, n := range names {
					if name, ok := n.(string); !ok || !slices.Contains(schemaTypes, name) {
						return fmt.Errorf("type %v is not a JSON type (%s)", n, strings.Join(schemaTypes, ", "))
					}
				}
			case "enum", "const", "default", "examples": // values, not schemas
			default:
				if err := checkTypes(sub); err != nil {
					return err
				}
			}
		}
	case []any:
		for _, sub := range v {
			if err := checkTypes(sub); err != nil {
				return err
			}
		}
	}
	return nil
}

var schemaTypes = []string{"null", "boolean", "object", "array", "number", "string", "integer"}

// schemaRenderer shows a run with --json-schema and without --json: stdout
// holds only the answer's JSON value, on one line; the rest goes to stderr
// as usual, the answer's text not at all.
type schemaRenderer struct {
	renderer           // a text renderer writing nothing to stdout
	stdout   io.Writer // for the answer
}

func (r schemaRenderer) event(ev agent.Event, err error) {
	r.renderer.event(ev, err)
	if res, ok := ev.(agent.Result); ok {
		var b bytes.Buffer
		if out := typed.Output(res); out != nil && json.Compact(&b, out) == nil {
			b.WriteByte('\n')
			r.stdout.Write(b.Bytes())
		}
	}
}

// answerErr is err, unless it says only that a limit ended a run with
// --json-schema before its answer: then the limit's own exit status tells.
func answerErr(err error) error {
	if oe, ok := errors.AsType[*typed.OutputError](err); ok && (oe.State == agent.IterationLimit || oe.State == agent.TokenLimit) {
		return nil
	}
	return err
}
