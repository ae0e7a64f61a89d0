// Command agentloop-durable runs the agentloop agent loop durably, on
// Temporal: "agentloop-durable worker" serves runs, and
// "agentloop-durable PROMPT" starts one, or continues a session, and
// streams it as agentloop does, with agentloop's exit codes.
//
// It is a separate command, in the durable module, so that the agentloop
// CLI and every user of the core packages never pull in the Temporal SDK
// or server.
//
//	agentloop-durable worker --temporal HOST:PORT [--namespace N] [--task-queue Q] [--tools calculator]
//	agentloop-durable --temporal HOST:PORT [--session ID] [--detach] [--approve TOOLS] "prompt"
//	agentloop-durable approve --temporal HOST:PORT --session ID [--deny REASON] CALL_ID
//
// Ctrl-C cancels the run, as in agentloop; with --detach it only detaches,
// and the run goes on: continue the session later with --session.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

// Exit codes, agentloop's.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitLimit       = 3
	exitInterrupted = 130
)

// An exitError carries its exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode returns the exit status for err: the one place it is decided.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailure
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if msg := err; msg != nil && msg.Error() != "" {
		fmt.Fprintln(os.Stderr, "agentloop-durable:", msg)
	}
	os.Exit(exitCode(err))
}

// options are the flags both modes share.
type options struct {
	temporal, namespace, queue, blobs, model string
}

func (o *options) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.temporal, "temporal", "", "the Temporal frontend, HOST:PORT (required)")
	fs.StringVar(&o.namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&o.queue, "task-queue", "agentloop", "the task queue of the workers")
	fs.StringVar(&o.blobs, "blobs", "", "a directory every worker and caller shares, for payloads over Temporal's limit")
	fs.StringVar(&o.model, "model", "", "the model (default $ANTHROPIC_MODEL, else "+llm.DefaultModel+")")
}

func (o *options) dial(getenv func(string) string) (client.Client, error) {
	if o.temporal == "" {
		return nil, usageError("--temporal HOST:PORT is required")
	}
	if o.model == "" {
		o.model = getenv("ANTHROPIC_MODEL")
	}
	return client.Dial(client.Options{HostPort: o.temporal, Namespace: o.namespace, DataConverter: o.converter()})
}

// converter is the data converter of the workers and callers, with the
// blob store when --blobs names one.
func (o *options) converter() converter.DataConverter {
	var store durable.BlobStore
	if o.blobs != "" {
		store = durable.DirStore(o.blobs)
	}
	return durable.DataConverter(store)
}

// run runs the command on args. getenv is the environment, read here only.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "worker" {
		return runWorker(ctx, args[1:], getenv, stderr)
	}
	if len(args) > 0 && args[0] == "approve" {
		return runApprove(ctx, args[1:], getenv, stderr)
	}
	return runPrompt(ctx, args, getenv, stdout, stderr)
}

// runWorker serves runs until ctx is cancelled.
func runWorker(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop-durable worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.flags(fs)
	toolList := fs.String("tools", "", "comma-separated built-in tools to offer: calculator")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: exitUsage}
	}
	reg := tool.NewRegistry(tool.Config{})
	for _, name := range strings.FieldsFunc(*toolList, func(r rune) bool { return r == ',' }) {
		switch name {
		case "calculator":
			if err := reg.Register(calculator.New()); err != nil {
				return err
			}
		default:
			return usageError("--tools: unknown tool %q (this command offers calculator)", name)
		}
	}
	c, err := o.dial(getenv)
	if err != nil {
		return err
	}
	defer c.Close()
	model := llm.New(llm.Config{APIKey: getenv("ANTHROPIC_API_KEY"), AuthToken: getenv("ANTHROPIC_AUTH_TOKEN"), BaseURL: getenv("ANTHROPIC_BASE_URL")})
	w := worker.New(c, o.queue, worker.Options{})
	if err := durable.Register(w, durable.Config{Model: model, Registry: reg}); err != nil {
		return err
	}
	stop := make(chan any)
	go func() { <-ctx.Done(); close(stop) }()
	return w.Run(stop)
}

// runApprove answers a call that waits for approval in a session.
func runApprove(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop-durable approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.flags(fs)
	session := fs.String("session", "", "the session whose call waits (required)")
	deny := fs.String("deny", "", "deny the call, telling the model this reason")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: exitUsage}
	}
	if *session == "" || fs.NArg() != 1 {
		return usageError("usage: agentloop-durable approve --temporal HOST:PORT --session ID [--deny REASON] CALL_ID")
	}
	c, err := o.dial(getenv)
	if err != nil {
		return err
	}
	defer c.Close()
	return durable.Approve(ctx, c, *session, durable.Decision{CallID: fs.Arg(0), Allow: *deny == "", Reason: *deny})
}

// runPrompt starts a run, or continues the session, and streams it.
func runPrompt(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentloop-durable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.flags(fs)
	session := fs.String("session", "", "the session: a run continues its conversation (default: a new session)")
	detach := fs.Bool("detach", false, "Ctrl-C detaches from the run instead of cancelling it")
	maxIter := fs.Int("max-iterations", 0, "cap on the model calls of the run")
	approve := fs.String("approve", "", "comma-separated tools whose calls wait for approval")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: exitUsage}
	}
	prompt := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if prompt == "" {
		return usageError("a prompt is required")
	}
	c, err := o.dial(getenv)
	if err != nil {
		return err
	}
	defer c.Close()

	in := durable.Input{Prompt: prompt, Model: o.model, MaxIterations: *maxIter, Stream: true,
		Approve: strings.FieldsFunc(*approve, func(r rune) bool { return r == ',' })}
	id := *session
	if id == "" {
		id = newID()
		fmt.Fprintf(stderr, "session %s\n", id)
	} else if prev, err := durable.Conversation(ctx, c, o.converter(), id); err != nil {
		if _, none := errors.AsType[*serviceerror.NotFound](err); !none {
			return fmt.Errorf("session %s: %w", id, err)
		}
	} else {
		in.History = prev
	}
	// A session holds one run at a time: a second prompt while one runs
	// fails rather than interleaving.
	wr, err := c.ExecuteWorkflow(context.WithoutCancel(ctx), client.StartWorkflowOptions{
		ID: id, TaskQueue: o.queue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, durable.WorkflowName, in)
	if err != nil {
		if _, busy := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); busy {
			return &exitError{code: exitFailure, err: fmt.Errorf("session %s is running a prompt already", id)}
		}
		return err
	}
	for ev, err := range durable.Stream(ctx, c, id) {
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		switch {
		case ev.Text != "":
			fmt.Fprint(stdout, ev.Text)
		case ev.Discard:
			fmt.Fprintln(stderr, "\n[retrying the turn]")
		case ev.ToolCall != nil && ev.Waiting:
			fmt.Fprintf(stderr, "\n[%s %s waits for approval: agentloop-durable approve --session %s %s]\n",
				ev.ToolCall.Name, ev.ToolCall.Input, id, ev.ToolCall.ID)
		case ev.ToolCall != nil:
			fmt.Fprintf(stderr, "\n[%s %s]\n", ev.ToolCall.Name, ev.ToolCall.Input)
		}
	}
	if ctx.Err() != nil {
		if *detach {
			fmt.Fprintf(stderr, "\ndetached; the run goes on in session %s\n", id)
			return &exitError{code: exitInterrupted}
		}
		if err := c.CancelWorkflow(context.WithoutCancel(ctx), id, wr.GetRunID()); err != nil {
			return err
		}
	}
	var res durable.Result
	err = wr.Get(context.WithoutCancel(ctx), &res)
	fmt.Fprintln(stdout)
	return outcome(res, err)
}

// outcome maps how a run ended to agentloop's exit status.
func outcome(res durable.Result, err error) error {
	switch {
	case err != nil:
		return &exitError{code: exitFailure, err: err}
	case res.State == agent.Cancelled:
		return &exitError{code: exitInterrupted}
	case slices.Contains([]agent.State{agent.IterationLimit, agent.TimeLimit, agent.TokenLimit}, res.State):
		return &exitError{code: exitLimit, err: fmt.Errorf("%s reached without a final answer", strings.ReplaceAll(string(res.State), "_", " "))}
	}
	return nil
}

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "agentloop-" + hex.EncodeToString(b)
}
