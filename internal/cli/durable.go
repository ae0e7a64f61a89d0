package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/permission"
)

// This file is the hook of the durable mode: worker, approve, deny and
// --temporal. The mode itself lives in the durable module, which alone
// imports the Temporal SDK; its build of the command (durable/cmd/agentloop)
// passes a Durable to MainWith. The plain build passes none, and there the
// mode is a usage error that says how to install it.

// Durable is the durable mode of the command, on a Temporal server.
type Durable interface {
	// Serve runs a worker that serves durable runs with w's model and
	// tools until ctx is done.
	Serve(ctx context.Context, t Temporal, w Worker) error
	// Run starts a durable run of p.Prompt, or sends it to the
	// conversation p.Session, and yields its events as agent.Agent.Stream
	// does, ending with the agent.Result. When ctx is done, the run is cancelled,
	// or left running if p.Detach is set, and the stream ends with the
	// state it ended in (Cancelled when detached).
	Run(ctx context.Context, t Temporal, p Prompt) iter.Seq2[agent.Event, error]
	// Decide allows or denies the call callID that waits for approval in
	// session; reason is told to the model when it is denied.
	Decide(ctx context.Context, t Temporal, session, callID string, allow bool, reason string) error
}

// Temporal says where the durable runs are, and where their telemetry goes.
type Temporal struct {
	HostPort, Namespace, TaskQueue string
	// Blobs is a directory that every worker and client shares, for
	// payloads over Temporal's limit; empty for none.
	Blobs     string
	Telemetry llm.Telemetry
	Logger    *slog.Logger
}

// Worker is what a worker offers: the model, and the tools of the usual
// flags with their permissions.
type Worker struct {
	Model    llm.Model
	Registry *tool.Registry
	// Approve is the --allow, --deny and --yes policy: a call it refuses
	// is denied. Nobody is asked on a worker; a call a person approved in
	// the run (approved) is held to the --deny rules alone.
	Approve func(ctx context.Context, call llm.ToolUse, approved bool) error
	// System is the system prompt of the runs that bring none: the
	// default one, naming the worker's tools and working directory, or
	// --system, then --append-system.
	System string
	// AtMostOnce names the tools a worker's death must not run twice.
	AtMostOnce []string
}

// Prompt is one prompt of a durable session, with the limits of the flags.
type Prompt struct {
	Prompt  string
	Session string // the conversation's workflow ID; empty for a new one
	// Detach leaves the run going when ctx is done, instead of
	// cancelling it.
	Detach bool
	// Approve names the tools whose calls wait for `agentloop approve`.
	Approve []string

	Model          string
	MaxTokens      int
	MaxIterations  int
	MaxDuration    time.Duration
	MaxTotalTokens int64
	MaxCostUSD     float64 // --max-budget-usd
	ContextLimit   int
	System         string
	AppendSystem   string // added to System, or to the worker's when System is empty
	Thinking       *llm.ThinkingConfig
	Effort         string
	Compaction     string
	// Started is called with the session's ID once the run has started.
	Started func(session string)
	// Note shows a remark on stderr, such as a call that waits.
	Note func(string)
	// Ask, when there is a terminal to ask on, asks the user whether a
	// call that waits for approval may run: the in-process CLI's
	// question. Nil: the call waits for agentloop approve or deny.
	Ask func(context.Context, llm.ToolUse) (bool, error)
}

// MainWith is Main with the durable mode d; nil is the plain build's.
func MainWith(d Durable) int {
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt)
	c := &cli{
		getenv:     os.Getenv,
		isTerminal: isTerminal,
		interrupts: interrupts,
		editor:     newEditor,
		termSize:   termSize,
		durable:    d,
	}
	return c.main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// RunWith runs the command in process with the durable mode d, the
// environment getenv and the interrupts, as a test of a durable build
// does, and returns its exit status.
func RunWith(ctx context.Context, d Durable, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, interrupts <-chan os.Signal) int {
	c := &cli{getenv: getenv, isTerminal: func(any) bool { return false }, interrupts: interrupts, durable: d}
	return c.main(ctx, args, stdin, stdout, stderr)
}

// durableOptions are the durable mode's flags.
type durableOptions struct {
	temporal, namespace, queue, blobs string
	detach                            bool
	approve, atMostOnce               listFlag
}

func defineDurableFlags(fs *flag.FlagSet, d *durableOptions) {
	fs.StringVar(&d.temporal, "temporal", "", "")
	fs.StringVar(&d.namespace, "namespace", "default", "")
	fs.StringVar(&d.queue, "task-queue", "agentloop", "")
	fs.StringVar(&d.blobs, "blobs", "", "")
	fs.BoolVar(&d.detach, "detach", false, "")
	fs.Var(&d.approve, "approve", "")
	fs.Var(&d.atMostOnce, "at-most-once", "")
}

// durableUsage is the --help text of the durable mode.
const durableUsage = `
Durable mode (the build of durable/cmd/agentloop, in its own module: from a
clone of the repository, cd durable && go install ./cmd/agentloop):
  agentloop worker --temporal HOST:PORT [flags]
  agentloop --temporal HOST:PORT [--session ID] [flags] [prompt...]
  agentloop approve|deny --temporal HOST:PORT --session ID CALL_ID [reason...]

A worker serves durable runs on Temporal, with the tools, MCP servers and
system prompt of the usual flags and their --allow, --deny and --yes rules.
Nobody is asked on a worker, so a call that would ask is denied, unless a
person approved it in the run: then only --deny stops it. A prompt with
--temporal runs on the workers and survives their deaths: --session names
the conversation (a workflow ID; a new one is printed on stderr), and the
answer streams, with the exit statuses above. A call named by --approve
waits in the run, and is asked about on a terminal. Ctrl-C cancels the run;
with --detach it only detaches, and the run goes on.

  --temporal HOST:PORT  the Temporal frontend; turns the durable mode on
  --namespace N       the Temporal namespace (default default)
  --task-queue Q      the workers' task queue (default agentloop)
  --blobs DIR         a directory every worker and client shares, for
                      payloads over Temporal's 2 MB limit
  --detach            Ctrl-C detaches from the run instead of cancelling it
  --approve TOOL      calls of TOOL ("*" for all) wait, for days if need
                      be, until agentloop approve or deny answers them
                      (repeatable)
  --at-most-once TOOL a worker's flag: a call of TOOL whose worker dies is
                      not run again, and the model is told it may or may
                      not have run (repeatable; other calls are at least
                      once)
`

// durableCommand strips the durable mode's subcommand off args.
func durableCommand(args []string) (string, []string) {
	if len(args) > 0 && (args[0] == "worker" || args[0] == "approve" || args[0] == "deny") {
		return args[0], args[1:]
	}
	return "", args
}

// runDurable runs the durable mode: a worker, a decision, or a prompt.
func (c *cli) runDurable(ctx context.Context, sub string, o *options, stdin io.Reader, stdout, stderr io.Writer) error {
	if c.durable == nil {
		return usageError("this build of agentloop has no durable mode (worker, approve, deny, --temporal): " +
			"install the one that has from a clone of the repository, with (cd durable && go install ./cmd/agentloop)")
	}
	d := o.durable
	if d.temporal == "" {
		return usageError("%s needs --temporal HOST:PORT, the Temporal frontend", cmp.Or(sub, "the durable mode"))
	}
	tel, flush, err := c.startTelemetry(ctx, stderr)
	if err != nil {
		return err
	}
	defer flush()
	o.telemetry = tel
	t := Temporal{HostPort: d.temporal, Namespace: d.namespace, TaskQueue: d.queue, Blobs: d.blobs, Telemetry: tel,
		Logger: newLogger(stderr, o.verbose, "", "")}
	switch sub {
	case "worker", "approve", "deny":
		// Ctrl-C stops a worker, or gives up on a decision.
		var stop func() bool
		ctx, stop = c.watchInterrupts(ctx)
		defer stop()
	}
	switch sub {
	case "worker":
		return c.serve(ctx, o, t, stdout, stderr)
	case "approve", "deny":
		id, reason, _ := strings.Cut(o.prompt, " ")
		if o.session == "" || id == "" || sub == "approve" && reason != "" {
			return usageError("usage: agentloop approve|deny --temporal HOST:PORT --session ID CALL_ID (deny takes a reason after it)")
		}
		return c.durable.Decide(ctx, t, o.session, id, sub == "approve", strings.TrimSpace(reason))
	}
	return c.durablePrompt(ctx, o, t, stdin, stdout, stderr)
}

// serve runs a worker with the tools of the usual flags, built as a
// session builds them.
func (c *cli) serve(ctx context.Context, o *options, t Temporal, stdout, stderr io.Writer) error {
	key, token := c.getenv("ANTHROPIC_API_KEY"), c.getenv("ANTHROPIC_AUTH_TOKEN")
	switch {
	case key == "" && token == "":
		return usageError("no API key: a worker calls the model, so set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)")
	case o.promptGiven:
		return usageError("worker takes no prompt, got %q", o.prompt)
	case o.session != "":
		return usageError("worker takes no --session: a prompt names its session")
	}
	if err := checkBaseURL(c.getenv("ANTHROPIC_BASE_URL")); err != nil {
		return err
	}
	logger := newLogger(stderr, o.verbose, key, token)
	t.Logger = logger
	// MaxAttempts 1: Temporal retries the model activity (durable.Config.Model).
	client := llm.New(llm.Config{APIKey: key, AuthToken: token, BaseURL: c.getenv("ANTHROPIC_BASE_URL"), MaxAttempts: 1,
		HTTPClient: httpClient(logger, o.verbose), Logger: logger, Telemetry: o.telemetry})
	s, err := c.newSession(ctx, o, client, logger, stdout, stderr, false)
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintf(stderr, "agentloop: worker on %s, task queue %s, tools: %s\n", t.HostPort, t.TaskQueue,
		strings.Join(specNames(s.cfg.Registry), ", "))
	if t.Blobs == "" {
		fmt.Fprintln(stderr, "agentloop: no --blobs store: a tool result over Temporal's 2 MiB payload limit reaches the model as an error, not the result")
	}
	rules, denyOnly := s.builtins.approve(s.cfg.Registry), s.builtins.policy.DenyOnly()
	approve := func(ctx context.Context, call llm.ToolUse, approved bool) error {
		if approved {
			return denyOnly.Approve(ctx, call)
		}
		return rules(ctx, call)
	}
	err = c.durable.Serve(ctx, t, Worker{Model: client, Registry: s.cfg.Registry, Approve: approve,
		System: s.cfg.System, AtMostOnce: o.durable.atMostOnce})
	if ctx.Err() != nil {
		return nil // stopped on purpose
	}
	return err
}

func specNames(reg *tool.Registry) []string {
	var names []string
	for _, s := range reg.Specs() {
		names = append(names, s.Name)
	}
	return names
}

// durablePrompt runs one prompt durably and shows it as a session's turn:
// the same renderer, the same --json events, the same exit statuses and
// the same Ctrl-C, which cancels, or detaches with --detach.
func (c *cli) durablePrompt(ctx context.Context, o *options, t Temporal, stdin io.Reader, stdout, stderr io.Writer) error {
	switch {
	case !o.promptGiven && c.isTerminal(stdin):
		return usageError("the durable mode takes one prompt, as arguments or on stdin; it has no interactive session")
	case !o.promptGiven || c.piped(stdin):
		b, err := readAll(ctx, stdin)
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
		if o.prompt = attachStdin(o.prompt, string(b)); strings.TrimSpace(o.prompt) == "" {
			return usageError("no prompt: pass it as arguments or on stdin (see agentloop --help)")
		}
	}
	s := &session{o: o, stderr: stderr, log: t.Logger, render: c.newRenderer(o, stdout, stderr, false)}
	defer s.render.close()
	p := Prompt{Prompt: o.prompt, Session: o.session, Detach: o.durable.detach, Approve: o.durable.approve,
		Model: o.model, MaxTokens: o.maxTokens, MaxIterations: o.maxIterations, MaxDuration: o.maxDuration,
		MaxTotalTokens: o.maxTotal, MaxCostUSD: o.maxBudget, ContextLimit: o.contextLimit, System: o.system,
		Started: func(id string) {
			if o.session == "" {
				s.render.note("session %s", id)
			}
			o.session = id
		},
		Note: func(msg string) { s.render.note("%s", msg) }}
	if c.isTerminal(stdin) && c.isTerminal(stderr) {
		dir, _ := os.Getwd()
		a := &terminalAsker{w: stderr, render: s.render, style: c.newStyle(stderr), stdin: stdin, dir: dir}
		always := map[string]bool{} // tools answered "always", for the rest of the run
		p.Ask = func(ctx context.Context, call llm.ToolUse) (bool, error) {
			if always[call.Name] {
				return true, nil
			}
			ans, err := a.ask(ctx, call, permission.Rule{Tool: call.Name})
			always[call.Name] = err == nil && ans == permission.Always
			return err == nil && ans != permission.No, err
		}
	}
	p.AppendSystem = o.builtin.appendSystem // the worker's default system prompt is the worker's to add to
	p.Thinking, p.Effort, p.Compaction = o.thinkingConfig(), o.effort, o.compaction
	err := s.interruptible(ctx, c.interrupts, func(ctx context.Context) error {
		res, err := s.show(c.durable.Run(ctx, t, p))
		return s.outcome(res, err)
	})
	if exitCode(err) == exitInterrupted && o.durable.detach && o.session != "" {
		s.render.note("detached: the run goes on in session %s (agentloop --temporal %s --session %s continues it)", o.session, t.HostPort, o.session)
	}
	return err
}
