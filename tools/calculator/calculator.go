// Package calculator defines the seed's calculator tool: four-function
// arithmetic on two numbers. It is the tool of the calculator example and of
// the CLI's --tools calculator.
//
//	reg := tool.NewRegistry(tool.Config{})
//	reg.Register(calculator.New())
//	// The model calls calculator with {"a": 3, "b": 5, "operation": "add"}
//	// and reads back the text "8".
package calculator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/tool"
)

// Name is the tool's name, as the model calls it.
const Name = "calculator"

// Input is the calculator's input. All three fields are required.
type Input struct {
	A         float64 `json:"a" jsonschema:"the first operand"`
	B         float64 `json:"b" jsonschema:"the second operand"`
	Operation string  `json:"operation" jsonschema:"the operation to apply to a and b: add, subtract, multiply or divide"`
}

// Operations lists the values Input.Operation accepts.
var Operations = []string{"add", "subtract", "multiply", "divide"}

// ErrDivisionByZero is returned by [Calculate] for a division by zero.
var ErrDivisionByZero = errors.New("division by zero")

// New returns the calculator tool. Its result is the number as text, in the
// shortest form that reads back exactly: 3 + 5 gives "8", not "8.000000".
// Division by zero, an unknown operation, a missing or ill-typed field, or a
// result too large for a float64 give an is_error result saying so.
func New() *tool.Tool {
	s, err := jsonschema.For[Input](nil)
	if err != nil {
		panic("calculator: " + err.Error()) // Input is fixed: this cannot happen
	}
	ops := make([]any, len(Operations))
	for i, op := range Operations {
		ops[i] = op
	}
	s.Properties["operation"].Enum = ops
	t, err := tool.NewWithSchema(Name, "Perform basic arithmetic on two numbers: add, subtract, multiply or divide a by b.", s,
		func(ctx context.Context, in Input) (string, error) {
			x, err := Calculate(in)
			if err != nil {
				return "", err
			}
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		})
	if err != nil {
		panic("calculator: " + err.Error())
	}
	return t
}

// Calculate applies in.Operation to in.A and in.B.
func Calculate(in Input) (float64, error) {
	var x float64
	switch in.Operation {
	case "add":
		x = in.A + in.B
	case "subtract":
		x = in.A - in.B
	case "multiply":
		x = in.A * in.B
	case "divide":
		if in.B == 0 {
			return 0, ErrDivisionByZero
		}
		x = in.A / in.B
	default:
		return 0, fmt.Errorf("unknown operation %q: use add, subtract, multiply or divide", in.Operation)
	}
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, fmt.Errorf("the result of %s on %v and %v is too large for a 64-bit float", in.Operation, in.A, in.B)
	}
	return x, nil
}
