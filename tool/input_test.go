package tool

import (
	"errors"
	"testing"
)

func TestDescribeValidation(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`validating root: required: missing properties: ["a" "b"]`, `missing required field(s) "a", "b"`},
		{`validating root: validating /properties/o: required: missing properties: ["x"]`, `missing required field(s) "o.x"`},
		{`validating root: unexpected additional properties ["c" "d e"]`, `unknown field(s) "c", "d e"; use only the fields in the input schema`},
		{`validating root: validating /properties/a~1b/items/properties/c~0: type: x has type "string", want "number"`,
			`field "a/b[].c~": type: x has type "string", want "number"`},
		{`validating root: validating /properties/m/additionalProperties: type: 1 has type "integer", want "string"`,
			`field "m.*": type: 1 has type "integer", want "string"`},
		{`validating root: validating /allOf/0: minProperties: 0 < 1`, `minProperties: 0 < 1`},
		{`validating root: type: [] has type "array", want "object"`, `type: [] has type "array", want "object"`},
		// Shapes the rewrite does not know pass through unchanged.
		{`some future message`, `some future message`},
		{`validating root: required: missing properties: {a}`, `missing required field(s) {a}`},
	}
	for _, tt := range tests {
		if got := describeValidation(errors.New(tt.in)); got != tt.want {
			t.Errorf("describeValidation(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
