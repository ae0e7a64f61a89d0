package childenv_test

import (
	"fmt"

	"github.com/agentloop/agentloop/internal/childenv"
)

// A server gets the default environment and what the user adds, once the
// additions are checked; the error names a bad entry but never its value.
func Example() {
	add := []string{"GITHUB_TOKEN=ghp_example", "BAD-NAME=secret"}
	if err := childenv.Check(add); err != nil {
		fmt.Println(err)
	}
	env := append(childenv.Default(), add[:1]...)
	fmt.Println(env[len(env)-1])
	// Output:
	// environment entry "BAD-NAME" is not NAME=VALUE
	// GITHUB_TOKEN=ghp_example
}
