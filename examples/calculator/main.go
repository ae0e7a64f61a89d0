// Calculator is the seed's examples/calculator.py in Go: an agent with one
// tool, a four-function calculator, answering a question that takes several
// calculations. It uses the library directly, the way a program would.
//
//	export ANTHROPIC_API_KEY=sk-ant-...
//	go run ./examples/calculator
//	go run ./examples/calculator "What is 1234 × 5678, minus 9?"
//
// The answer streams to stdout; each tool call and its result are printed
// as they happen, so the think → act → observe loop is visible.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

// question is asked when the command line gives none.
const question = "What is (3 + 5) × 12, divided by 4? Use the calculator for each step."

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "calculator:", err)
		os.Exit(1)
	}
}

// run asks the question in args, or the default one, and prints the run.
// getenv is os.Getenv, injected so that a test can point the client at a
// fake server.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	key, token := getenv("ANTHROPIC_API_KEY"), getenv("ANTHROPIC_AUTH_TOKEN")
	if key == "" && token == "" {
		return errors.New("set ANTHROPIC_API_KEY to run this example (or try `go run ./cmd/agentloop demo`, which needs no key)")
	}

	// The reasoning engine: one streamed model turn at a time, with retries.
	client := llm.New(llm.Config{APIKey: key, AuthToken: token, BaseURL: getenv("ANTHROPIC_BASE_URL")})

	// The orchestrator: think → act → observe until the model answers. The
	// action system is the calculator, a typed Go function whose JSON
	// schema is generated from its input struct. The memory is a history
	// with the model to call (empty: llm.DefaultModel).
	a, err := agent.New(agent.Config{
		Model:   client,
		History: memory.New(memory.Config{Model: getenv("ANTHROPIC_MODEL")}),
		System:  "You are a careful assistant. Use the calculator for all arithmetic.",
		Tools:   []*tool.Tool{calculator.New()},
	})
	if err != nil {
		return err
	}

	q := question
	if len(args) > 0 {
		q = strings.Join(args, " ")
	}
	fmt.Fprintf(out, "Q: %s\n\n", q)

	var res agent.Result
	inputs := map[string]string{} // call ID → input, to label its result
	midLine := false              // the answer's last line is unfinished
	newline := func() {
		if midLine {
			fmt.Fprintln(out)
			midLine = false
		}
	}
	for ev, err := range a.Stream(ctx, q) {
		switch ev := ev.(type) {
		case agent.TextDelta: // think: the model's words, as they stream
			fmt.Fprint(out, ev.Text)
			if ev.Text != "" {
				midLine = !strings.HasSuffix(ev.Text, "\n")
			}
		case agent.ToolCall: // act: the input is assembled; the tool runs
			newline()
			inputs[ev.ID] = string(ev.Input)
			fmt.Fprintf(out, "  act:     %s %s\n", ev.Name, ev.Input)
		case agent.ToolDone: // observe: the result goes back to the model
			// Parallel calls finish in any order, so each result line
			// names its call.
			newline()
			verb := "="
			if ev.IsError {
				verb = "error:"
			}
			fmt.Fprintf(out, "  observe: %s %s %s %s\n", ev.Name, inputs[ev.ID], verb, ev.Content)
		case agent.Result:
			res = ev
		}
		if err != nil {
			return err
		}
	}
	newline()
	u := res.Usage
	fmt.Fprintf(out, "\n%s after %d model calls; %d input tokens (%d of them read from the cache) and %d output tokens, $%.4f\n",
		res.State, res.Iterations, u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens,
		u.CacheReadInputTokens, u.OutputTokens, res.CostUSD)
	if res.State != agent.Finished {
		return fmt.Errorf("the run ended with state %q", res.State)
	}
	return nil
}
