package apirules_test

import (
	"fmt"

	"github.com/agentloop/agentloop/internal/apirules"
)

// A tool_use block whose input the model cut short cannot go back as it
// is: MarkInvalid wraps the text, and InvalidInput reads it back, so the
// model can be told its call was malformed.
func ExampleMarkInvalid() {
	in := apirules.MarkInvalid([]byte(`{"path": "/tmp/x`))
	ok, _ := apirules.IsObject(in)
	text, marked := apirules.InvalidInput(in)
	fmt.Println(string(in), ok)
	fmt.Println(text, marked)
	// Output:
	// {"INVALID_JSON":"{\"path\": \"/tmp/x"} true
	// {"path": "/tmp/x true
}
