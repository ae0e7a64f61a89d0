// Coder is a small coding agent in the spirit of mini-swe-agent: give it a
// task, and it greps, reads and edits the code in the current directory
// and runs commands until the task is done. It is the library's built-in
// tools (package files and shell) and a permission policy on an agent.
//
//	export ANTHROPIC_API_KEY=sk-ant-...
//	cd your/repository
//	go run github.com/agentloop/agentloop/examples/coder "make the failing test pass"
//
// Each edit and command is shown and asked about first; -yes runs them
// without asking. File tools cannot leave the directory; bash can, which is
// why it asks.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tools/files"
	"github.com/agentloop/agentloop/tools/permission"
	"github.com/agentloop/agentloop/tools/shell"
)

const system = `You are a careful software engineer working in the repository at %s.
Explore with glob, grep and read_file; change files with edit_file; run builds and tests with bash.
Make the smallest change that solves the task, then run the tests. When they pass, say in two sentences what you changed.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "coder:", err)
		os.Exit(1)
	}
}

// run does the task in args. getenv, in and out are injected for tests.
func run(ctx context.Context, args []string, getenv func(string) string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("coder", flag.ContinueOnError)
	yes := fs.Bool("yes", false, "run every edit and command without asking")
	if err := fs.Parse(args); err != nil {
		return err
	}
	task := strings.Join(fs.Args(), " ")
	if task == "" {
		return errors.New(`give a task, such as: coder "make the failing test pass"`)
	}
	ws, err := files.Open(files.Config{}) // the current directory
	if err != nil {
		return err
	}
	defer ws.Close()
	answers := bufio.NewScanner(in)
	policy := &permission.Policy{AllowAll: *yes, Dir: ws.Dir(),
		Ask: func(ctx context.Context, call llm.ToolUse, always permission.Rule) (permission.Answer, error) {
			if diff, ok, err := ws.Preview(call.Name, call.Input); ok && err == nil {
				fmt.Fprint(out, diff)
			}
			fmt.Fprintf(out, "allow %s? [y/N/a(lways %s)] ", call.Name, always)
			if !answers.Scan() {
				return permission.No, io.EOF
			}
			return map[string]permission.Answer{"y": permission.Yes, "a": permission.Always}[strings.TrimSpace(answers.Text())], nil
		}}
	a, err := agent.New(agent.Config{
		Model:         llm.New(llm.Config{APIKey: getenv("ANTHROPIC_API_KEY"), BaseURL: getenv("ANTHROPIC_BASE_URL")}),
		History:       memory.New(memory.Config{Model: getenv("ANTHROPIC_MODEL")}),
		System:        fmt.Sprintf(system, ws.Dir()),
		Tools:         append(ws.Tools(), shell.New(shell.Config{Dir: ws.Dir()})),
		Hooks:         []agent.Hook{agent.ToolGate(policy.Approve)},
		MaxIterations: 50,
	})
	if err != nil {
		return err
	}
	for ev, err := range a.Stream(ctx, task) {
		switch ev := ev.(type) {
		case agent.TextDelta:
			fmt.Fprint(out, ev.Text)
		case agent.ToolCall:
			var in struct{ Command string }
			if json.Unmarshal(ev.Input, &in); ev.Name == "bash" {
				fmt.Fprintf(out, "\n$ %s\n", in.Command)
			} else {
				fmt.Fprintf(out, "\n→ %s %s\n", ev.Name, ev.Input)
			}
		case agent.ToolDone:
			fmt.Fprintf(out, "%s\n", firstLines(ev.Content, 8))
		case agent.Result:
			fmt.Fprintf(out, "\n\n[%s after %d model calls, $%.4f]\n", ev.State, ev.Iterations, ev.CostUSD)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// firstLines returns the first n lines of s, indented, saying how many
// more there are.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… %d more lines", len(lines)-n))
	}
	return "  " + strings.Join(lines, "\n  ")
}
