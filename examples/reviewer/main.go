// Reviewer is a main agent that hands code review to a reviewer subagent:
// the reviewer has its own instructions, only the read-only file tools
// and a cheaper model, and reports back; the main agent reads its report
// as the result of its task call. It is package subagent on package agent.
//
//	export ANTHROPIC_API_KEY=sk-ant-...
//	cd your/repository
//	go run github.com/agentloop/agentloop/examples/reviewer "review main.go"
//
// Without a key it runs offline, against a fake API (package
// anthropictest) that plays both models, so that the flow can be seen.
// The subagent's tool calls are printed indented under the task call.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/files"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reviewer:", err)
		os.Exit(1)
	}
}

// run asks for the review in args, or of main.go, in the working
// directory, and prints the run. getenv is os.Getenv, injected for tests.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	task := "Review main.go."
	if len(args) > 0 {
		task = strings.Join(args, " ")
	}
	key, base := getenv("ANTHROPIC_API_KEY"), getenv("ANTHROPIC_BASE_URL")
	if key == "" && base == "" {
		srv := offline()
		defer srv.Close()
		base = srv.URL
		fmt.Fprintln(out, "(no ANTHROPIC_API_KEY: a fake API plays both models)")
	}
	client := llm.New(llm.Config{APIKey: key, BaseURL: base})

	ws, err := files.Open(files.Config{})
	if err != nil {
		return err
	}
	defer ws.Close()

	// The subagent: its own prompt, read-only tools and model. Each task
	// call is a fresh run of it, whose only message is the task's prompt.
	reviewer := subagent.Agent{
		Name:        "reviewer",
		Description: "Reviews code for bugs and says what to fix. Give it the files to read.",
		Config: agent.Config{
			Model:   client,
			System:  "You are a code reviewer. Read the files you are given and report real bugs only, each with its line and a fix. Be brief.",
			Tools:   []*tool.Tool{ws.ReadFile(), ws.Grep()},
			History: memory.New(memory.Config{Model: "claude-haiku-5-5"}),
		},
	}
	taskTool, err := subagent.Tool(reviewer)
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{
		Model:  client,
		System: "You help with code. Delegate reviews to the reviewer, then tell the user what it found.",
		Tools:  []*tool.Tool{taskTool},
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "> %s\n", task)
	var res agent.Result
	for ev, err := range a.Stream(ctx, task) {
		switch ev := ev.(type) {
		case agent.TextDelta:
			fmt.Fprint(out, ev.Text)
		case agent.ToolCall:
			fmt.Fprintf(out, "\n→ %s %s\n", ev.Name, ev.Input)
		case agent.ToolDone:
			fmt.Fprintf(out, "← %s: %s\n", ev.Name, firstLine(ev.Content))
		case agent.Nested: // the reviewer at work, under the task call
			switch e := ev.Event.(type) {
			case agent.ToolCall:
				fmt.Fprintf(out, "    %s → %s %s\n", ev.Agent, e.Name, e.Input)
			case agent.ToolDone:
				fmt.Fprintf(out, "    %s ← %s: %s\n", ev.Agent, e.Name, firstLine(e.Content))
			}
		case agent.Result:
			res = ev
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\n\n%s; %d tokens in all, the reviewer's included, $%.4f\n", res.State, res.Usage.Context(), res.CostUSD)
	return nil
}

func firstLine(s string) string {
	line, _, cut := strings.Cut(s, "\n")
	if cut {
		line += " …"
	}
	return line
}

// offline is a fake API that plays the main model, which delegates, and
// the reviewer, which reads main.go and reports. Requests come one at a
// time here, so one script serves both.
func offline() *anthropictest.Server {
	return anthropictest.NewServer(
		anthropictest.NewStream().Text("I'll ask the reviewer.").
			ToolUse("toolu_1", "task", `{"description": "review main.go", "prompt": "Review main.go for bugs.", "subagent_type": "reviewer"}`).
			Stop("tool_use"),
		anthropictest.NewStream().ToolUse("toolu_2", "read_file", `{"path": "main.go"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("No bugs found in main.go.").Stop("end_turn"),
		anthropictest.NewStream().Text("The reviewer found no bugs in main.go.").Stop("end_turn"),
	)
}
