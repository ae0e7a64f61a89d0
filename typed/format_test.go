package typed

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/anthropictest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

type (
	address struct {
		Street string `json:"street"`
		City   string `json:"city" jsonschema:"the city"`
	}
	person struct {
		Name   string   `json:"name"`
		Home   address  `json:"home"`
		Work   *address `json:"work,omitempty" jsonschema:"absent for the retired"`
		Emails []string `json:"emails"`
	}
	inventory struct { // slices and pointers
		Tags []string `json:"tags,omitempty"`
		Note *string  `json:"note,omitempty"`
	}
	reading struct {
		Unit  string  `json:"unit"`
		Value float64 `json:"value"`
		When  string  `json:"when"`
	}
)

// schemaOf is jsonschema.For[T]'s schema, refined by edit.
func schemaOf[T any](t *testing.T, edit func(*jsonschema.Schema)) []byte {
	t.Helper()
	s, err := jsonschema.For[T](nil)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOutputSchema holds outputSchema's transform of generated schemas to
// golden files, and each result to CheckRequest's rules for
// output_config.format.
func TestOutputSchema(t *testing.T) {
	tests := []struct {
		name   string
		schema []byte
	}{
		{"nested", schemaOf[person](t, nil)},
		{"slice_pointer", schemaOf[inventory](t, nil)},
		{"enum_bounds_format", schemaOf[reading](t, func(s *jsonschema.Schema) {
			s.Properties["unit"].Enum = []any{"celsius", "fahrenheit"}
			s.Properties["value"].Minimum, s.Properties["value"].Maximum = ptr(-90.0), ptr(60.0)
			s.Properties["when"].Format = "date-time"
			s.Properties["when"].Pattern = `^2(?!0)`
		})},
		{"list", schemaOf[[]reading](t, func(s *jsonschema.Schema) { s.MinItems, s.MaxItems = ptr(2), ptr(5) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := outputSchema(tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			golden := filepath.Join("testdata", "format", tt.name+".json")
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), pretty.String()); diff != "" {
				t.Errorf("transform of %s (-golden +got):\n%s", tt.schema, diff)
			}
			if err := anthropictest.CheckRequest(request(got)); err != nil {
				t.Errorf("the API would reject the transformed schema: %v", err)
			}
			// Transforming twice changes nothing more.
			again, err := outputSchema(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("transform is not idempotent:\n%s\n%s", got, again)
			}
		})
	}
}

// TestOpenObject checks that a schema whose answer could only be {} under
// additionalProperties false is not transformed.
func TestOpenObject(t *testing.T) {
	type counts struct {
		Counts map[string]int `json:"counts"`
	}
	for _, schema := range [][]byte{schemaOf[counts](t, nil), []byte(`{"type":"object","additionalProperties":true}`)} {
		if _, err := outputSchema(schema); !errors.Is(err, errOpenObject) {
			t.Errorf("outputSchema(%s) = %v, want errOpenObject", schema, err)
		}
	}
}

// request is a Messages API request with schema as output_config.format.
func request(schema []byte) []byte {
	return []byte(`{"model":"claude-sonnet-5-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}],` +
		`"output_config":{"format":{"type":"json_schema","schema":` + string(schema) + `}}}`)
}

func ptr[T any](v T) *T { return &v }
