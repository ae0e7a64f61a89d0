package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/tools/sandbox"
)

// A command may write in the directories its policy names, and nowhere
// else.
func Example() {
	if err := sandbox.Check(); err != nil {
		fmt.Println(err) // no Landlock: run confined commands in a container instead
		return
	}
	work, _ := os.MkdirTemp("", "work")
	defer os.RemoveAll(work)
	other, _ := os.MkdirTemp("", "other")
	defer os.RemoveAll(other)

	cmd, err := sandbox.Command(sandbox.Policy{Write: []string{work}}, "sh", "-c", "echo inside > notes.txt && echo outside > "+other+"/notes.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd.Dir = work
	fmt.Println("exit:", cmd.Run())
	_, err = os.Stat(filepath.Join(work, "notes.txt"))
	fmt.Println("written inside:", err == nil)
	_, err = os.Stat(filepath.Join(other, "notes.txt"))
	fmt.Println("written outside:", err == nil)
	// Output:
	// exit: exit status 2
	// written inside: true
	// written outside: false
}
