package calculator_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

func TestCalculator(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    string
		isError bool
	}{
		{"add", `{"a": 3, "b": 5, "operation": "add"}`, "8", false},
		{"subtract", `{"a": 3, "b": 5, "operation": "subtract"}`, "-2", false},
		{"multiply", `{"a": 2.5, "b": 4, "operation": "multiply"}`, "10", false},
		{"divide", `{"a": 1, "b": 4, "operation": "divide"}`, "0.25", false},
		{"divide repeating", `{"a": 1, "b": 3, "operation": "divide"}`, "0.3333333333333333", false},
		{"float sum", `{"a": 0.1, "b": 0.2, "operation": "add"}`, "0.30000000000000004", false},
		{"large", `{"a": 1e20, "b": 10, "operation": "multiply"}`, "1e+21", false},
		{"negative zero", `{"a": 0, "b": -1, "operation": "multiply"}`, "-0", false},
		{"field order", `{"operation": "divide", "b": 2, "a": 7}`, "3.5", false},

		{"division by zero", `{"a": 1, "b": 0, "operation": "divide"}`, "division by zero", true},
		{"overflow", `{"a": 1e308, "b": 10, "operation": "multiply"}`, "the result of multiply on 1e+308 and 10 is too large for a 64-bit float", true},
		{"unknown operation", `{"a": 1, "b": 2, "operation": "power"}`,
			`invalid input for tool "calculator": field "operation": enum: power does not equal any of: [add subtract multiply divide]`, true},
		{"missing b", `{"a": 1, "operation": "add"}`, `invalid input for tool "calculator": missing required field "b"`, true},
		{"missing all", `{}`, `invalid input for tool "calculator": 3 problems:` +
			"\n- missing required field \"a\"\n- missing required field \"b\"\n- missing required field \"operation\"", true},
		{"a is a string", `{"a": "3", "b": 5, "operation": "add"}`, `invalid input for tool "calculator": field "a": got string, want number`, true},
		{"operation is a number", `{"a": 3, "b": 5, "operation": 1}`, `invalid input for tool "calculator": field "operation": got number, want string`, true},
		{"extra field", `{"a": 3, "b": 5, "operation": "add", "c": 1}`, `invalid input for tool "calculator": unknown field "c"; use only the fields in the input schema`, true},
		{"not JSON", `{"a": 3,`, `invalid input for tool "calculator": the input is not valid JSON: unexpected end of JSON input`, true},
	}
	r := tool.NewRegistry(tool.Config{})
	if err := r.Register(calculator.New()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Run(t.Context(), []llm.ToolUse{{ID: "toolu_1", Name: "calculator", Input: json.RawMessage(tt.input)}})
			want := []llm.ToolResult{{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: tt.want}}, IsError: tt.isError}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("calculator %s (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}

func TestSpec(t *testing.T) {
	spec := calculator.New().Spec()
	if spec.Name != "calculator" || spec.Description == "" {
		t.Errorf("spec = %q, %q", spec.Name, spec.Description)
	}
	var got, want any
	if err := json.Unmarshal(spec.InputSchema, &got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(`{
		"type": "object",
		"properties": {
			"a": {"type": "number", "description": "the first operand"},
			"b": {"type": "number", "description": "the second operand"},
			"operation": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"],
				"description": "the operation to apply to a and b: add, subtract, multiply or divide"}
		},
		"required": ["a", "b", "operation"],
		"additionalProperties": false
	}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("input schema (-want +got):\n%s", diff)
	}
}

func TestCalculateUnknownOperation(t *testing.T) {
	// The schema stops this before Calculate runs; Calculate checks anyway.
	_, err := calculator.Calculate(calculator.Input{A: 1, B: 2, Operation: "modulo"})
	if err == nil || err.Error() != `unknown operation "modulo": use add, subtract, multiply or divide` {
		t.Errorf("err = %v", err)
	}
	if _, err := calculator.Calculate(calculator.Input{A: 1, Operation: "divide"}); !errors.Is(err, calculator.ErrDivisionByZero) {
		t.Errorf("1/0: err = %v, want ErrDivisionByZero", err)
	}
}
