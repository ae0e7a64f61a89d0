package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/toolsearch"
)

// This file is the hook of the durable mode: worker, approve, deny and
// --temporal. The mode itself lives in the durable module, which alone
// imports the Temporal SDK; its build of the command (durable/cmd/agentloop)
// passes a Durable to MainWith. The plain build passes none, and there the
// mode is a usage error that says how to install it. A prompt with
// --temporal is run and shown by durableprompt.go.

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
	// Server runs a development Temporal server until ctx is done, and
	// then stops it.
	Server(ctx context.Context, s DevServer) error
}

// DevServer is what agentloop server runs: a Temporal server for
// development, in one process, with nothing else to install.
type DevServer struct {
	// HostPort is where the frontend listens; port 0 picks a free one.
	HostPort string
	// Namespace is created if it does not exist.
	Namespace string
	// DB is the SQLite file that keeps the server's runs across restarts;
	// empty keeps them in memory, lost when the server stops.
	DB     string
	Logger *slog.Logger
	// Ready is called with the frontend's address once it serves.
	Ready func(hostPort string)
}

// Temporal says where the durable runs are, and where their telemetry goes.
type Temporal struct {
	HostPort, Namespace, TaskQueue string
	// Blobs is a directory that every worker and client shares, for
	// payloads over Temporal's limit; empty for none.
	Blobs     string
	Telemetry telemetry.Config
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
	// Agents are the subagents of --agents and the agent files, whose
	// runs are child workflows (durable.Config.Agents). One that names no
	// model has no History here: it takes its parent run's model.
	Agents []subagent.Agent
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
	Schema         *jsonschema.Schema // --json-schema
	// Started is called with the session's ID once the run has started.
	Started func(session string)
	// Note shows a remark on stderr, such as a call that waits.
	Note func(string)
	// Ask, when there is a terminal to ask on, asks the user whether a
	// call that waits for approval may run: the in-process CLI's
	// question, whose "always" means what it means in process. It returns
	// nil to allow the call, or an error whose text the model is told. An
	// error after ctx ended is no answer: the caller withdraws a question
	// by ending its ctx when the run shows the call decided elsewhere.
	// Nil: the call waits for agentloop approve or deny.
	Ask func(context.Context, llm.ToolUse) error
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
	temporal, namespace, queue, blobs, db string
	detach                                bool
	approve, atMostOnce                   listFlag
}

func defineDurableFlags(fs *flag.FlagSet, d *durableOptions) {
	fs.StringVar(&d.temporal, "temporal", "", "")
	fs.StringVar(&d.namespace, "namespace", "default", "")
	fs.StringVar(&d.queue, "task-queue", "agentloop", "")
	fs.StringVar(&d.blobs, "blobs", "", "")
	fs.StringVar(&d.db, "db", "", "")
	fs.BoolVar(&d.detach, "detach", false, "")
	fs.Var(&d.approve, "approve", "")
	fs.Var(&d.atMostOnce, "at-most-once", "")
}

// durableUsage is the --help text of the durable mode.
const durableUsage = `
Durable mode (the build of durable/cmd/agentloop, in its own module: from a
clone of the repository, cd durable/cmd/agentloop && go install .):
  agentloop server [--temporal HOST:PORT] [--namespace N] [--db FILE]
  agentloop worker --temporal HOST:PORT [flags]
  agentloop --temporal HOST:PORT [--session ID] [flags] [prompt...]
  agentloop approve|deny --temporal HOST:PORT --session ID CALL_ID [reason...]

The server is a Temporal server for development, in one process: it
listens on --temporal (default ` + defaultServer + `; port 0 picks one),
prints its address, and keeps its runs in memory, or in the SQLite file
--db, until Ctrl-C. A worker serves durable runs on Temporal, with the
tools, MCP servers and system prompt of the usual flags and their --allow,
--deny and --yes rules. Nobody is asked on a worker, so a call that would
ask is denied, unless a person approved it in the run: then only --deny
stops it. A prompt with --temporal runs on the workers and survives their
deaths: --session names the conversation (a workflow ID; a new one is
printed on stderr), and the answer streams, with the exit statuses above.
A call named by --approve waits in the run, and is asked about on a
terminal as in process; a call answered elsewhere first is no longer
asked about. Ctrl-C cancels the run; with --detach it only detaches, and
the run goes on.

  --temporal HOST:PORT  the Temporal frontend; turns the durable mode on
  --namespace N       the Temporal namespace (default default)
  --task-queue Q      the workers' task queue (default agentloop)
  --db FILE           the server's SQLite file, created if need be; its
                      runs outlive the server
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
	if len(args) > 0 && (args[0] == "server" || args[0] == "worker" || args[0] == "approve" || args[0] == "deny") {
		return args[0], args[1:]
	}
	return "", args
}

// runDurable runs the durable mode: a worker, a decision, or a prompt.
func (c *cli) runDurable(ctx context.Context, sub string, o *options, stdin io.Reader, stdout, stderr io.Writer) error {
	if c.durable == nil {
		return usageError("this build of agentloop has no durable mode (server, worker, approve, deny, --temporal): " +
			"install the one that has from a clone of the repository, with (cd durable/cmd/agentloop && go install .)")
	}
	d := o.durable
	switch {
	case sub == "server":
		return c.devServer(ctx, o, stdout, stderr)
	case d.temporal == "":
		return usageError("%s needs --temporal HOST:PORT, the Temporal frontend (agentloop server starts one)", cmp.Or(sub, "the durable mode"))
	case d.db != "":
		return usageError("--db is a flag of agentloop server")
	case sub == "worker" && o.maxBudget > 0:
		// A run's budget is in its workflow's input, which every worker
		// that replays the run must read alike: a worker's own would not be.
		return usageError("--max-budget-usd goes with the prompt in the durable mode (agentloop --temporal HOST:PORT --max-budget-usd N \"…\"): each run carries its own budget, which every worker that serves it keeps")
	case o.agents != "" && sub != "worker":
		// The prompt would drop them: the worker's tools are the run's.
		return usageError("--agents is a flag of agentloop worker in the durable mode: its task tool runs the subagents")
	case len(o.server.names) > 0 || o.server.toolSearch != toolsearch.Auto:
		return usageError("--server-tools and --tool-search are not in the durable mode yet: its runs search the tools when they take over a tenth of the context window")
	}
	tel, flush, err := c.startTelemetry(ctx, stderr)
	if err != nil {
		return err
	}
	defer flush()
	o.telemetry = telemetry.New(tel)
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

// defaultServer is where agentloop server listens by default: Temporal's
// usual port, on loopback only.
const defaultServer = "127.0.0.1:7233"

// devServer runs agentloop server until Ctrl-C.
func (c *cli) devServer(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	d := o.durable
	addr := cmp.Or(d.temporal, defaultServer)
	switch host, port, err := net.SplitHostPort(addr); {
	case err != nil || host == "":
		return usageError("server: --temporal %q: want HOST:PORT, such as %s (0.0.0.0:7233 for every interface)", addr, defaultServer)
	case o.promptGiven:
		return usageError("server takes no prompt, got %q", o.prompt)
	case o.session != "":
		return usageError("server takes no --session")
	default:
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return usageError("server: --temporal %q: the port must be a number from 0 to 65535", addr)
		}
	}
	if d.db != "" {
		if info, err := os.Stat(filepath.Dir(d.db)); err != nil || !info.IsDir() {
			return usageError("server: --db %s: its directory %s does not exist", d.db, filepath.Dir(d.db))
		}
	}
	ctx, stop := c.watchInterrupts(ctx)
	defer stop()
	err := c.durable.Server(ctx, DevServer{HostPort: addr, Namespace: d.namespace, DB: d.db,
		Logger: newLogger(stderr, o.verbose, "", ""),
		Ready: func(addr string) {
			kept := "in memory, lost when it stops (--db FILE keeps them)"
			if d.db != "" {
				kept = "in " + d.db
			}
			flags := "--temporal " + addr
			if d.namespace != "default" {
				flags += " --namespace " + d.namespace
			}
			fmt.Fprintf(stdout, "Temporal development server on %s, namespace %s; runs kept %s.\n"+
				"Ctrl-C stops it. In another terminal:\n"+
				"  agentloop worker %s\n"+
				"  agentloop %s \"a prompt\"\n", addr, d.namespace, kept, flags, flags)
		}})
	if ctx.Err() != nil && err == nil {
		return nil // stopped on purpose
	}
	return err
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
		HTTPClient: httpClient(logger, o.verbose), Logger: logger,
		Observe: o.telemetry.Observe(c.getenv("ANTHROPIC_BASE_URL"))})
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
	// The PreToolUse hooks and the policy, as in process (toolGate); a hook's
	// rewritten input cannot reach a durable run's call, so it denies it.
	gate, denyOnly := s.toolGate(s.builtins.approve(s.cfg.Registry)), s.builtins.policy.DenyOnly()
	approve := func(ctx context.Context, call llm.ToolUse, approved bool) error {
		if approved {
			return denyOnly.Approve(ctx, call)
		}
		switch d, _ := gate(ctx, agent.HookEvent{Point: agent.BeforeTool, Call: &call}); {
		case d.Deny != "":
			return errors.New(d.Deny)
		case d.Input != nil:
			return errors.New("a PreToolUse hook rewrote the input, which a durable worker cannot run")
		}
		return nil
	}
	err = c.durable.Serve(ctx, t, Worker{Model: client, Registry: s.cfg.Registry, Approve: approve,
		System: s.cfg.System, AtMostOnce: o.durable.atMostOnce, Agents: s.workerAgents})
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
