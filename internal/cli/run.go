package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/mcptool"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/shell"
)

// Defaults shown in --help. They are the library's own, so that the CLI
// and a program using the packages behave alike.
const (
	defaultModel         = llm.DefaultModel
	defaultMaxTokens     = llm.DefaultMaxTokens
	defaultMaxIterations = agent.DefaultMaxIterations
)

// defaultContextLimit is memory's default threshold for the default model
// and max-tokens: the model's context window in the model table (llm.LookupModel), less room for
// the reply and a margin.
var defaultContextLimit = memory.New(memory.Config{Model: defaultModel, MaxTokens: defaultMaxTokens}).Config().ContextLimit

// run is the whole command. Its error decides the exit status (see
// exitCode); main prints it.
func (c *cli) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	sub, rest := durableCommand(args) // durable hook
	if sub != "" && isCommand(args) {
		args = rest
	} else {
		sub = ""
	}
	o, err := parseFlags(args, c.getenv)
	if err != nil {
		return err
	}
	if !o.help && !o.version {
		for _, w := range o.warnings {
			fmt.Fprintln(stderr, "agentloop: "+w)
		}
	}
	switch {
	case o.help:
		_, err := io.WriteString(stdout, helpText())
		return err
	case o.version:
		_, err := fmt.Fprintln(stdout, versionString())
		return err
	case sub != "" || o.durable.temporal != "": // durable hook
		return c.runDurable(ctx, sub, o, stdin, stdout, stderr)
	case o.demo:
		return c.demo(ctx, o, stdout, stderr)
	case o.sessions.list:
		return listCommand(&o.sessions, stdout, stderr)
	}

	tel, flush, err := c.startTelemetry(ctx, stderr) // otel hook
	if err != nil {
		return err
	}
	defer flush()
	o.telemetry = telemetry.New(tel) // one for the client, the agent and the subagents

	key, token := c.getenv("ANTHROPIC_API_KEY"), c.getenv("ANTHROPIC_AUTH_TOKEN")
	platform, baseURL, err := c.platform(ctx, o) // provider.go
	switch {
	case err != nil:
		return err
	case platform != nil:
	case key == "" && token == "":
		return usageError("no API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-...), " +
			"or ANTHROPIC_AUTH_TOKEN for a bearer token, or choose a cloud platform (--provider); `agentloop demo` runs without one")
	default:
		baseURL = c.getenv("ANTHROPIC_BASE_URL")
		if err := checkBaseURL(baseURL); err != nil {
			return err
		}
	}
	o.baseURL = baseURL
	// Until the first turn starts, Ctrl-C abandons the setup: reading the
	// prompt and starting MCP servers may both hang.
	setupCtx, endSetup := c.watchInterrupts(ctx)
	s, err := c.setup(setupCtx, o, key, token, stdin, stdout, stderr)
	if endSetup() {
		if s != nil {
			s.close()
		}
		return errInterrupted
	}
	if err != nil {
		return err
	}
	defer s.close()
	if s.interactive {
		lr := c.lineReader(stdin, stdout, stderr)
		defer lr.close()
		return s.repl(ctx, lr, c.interrupts)
	}
	return s.turn(ctx, o.prompt, c.interrupts)
}

// setup reads the prompt, if it comes on stdin, and builds the session.
func (c *cli) setup(ctx context.Context, o *options, key, token string, stdin io.Reader, stdout, stderr io.Writer) (*session, error) {
	// The prompt is read before connecting to anything, so that a missing
	// prompt fails fast.
	interactive := !o.promptGiven && c.isTerminal(stdin)
	switch {
	case !o.promptGiven && !interactive:
		b, err := readAll(ctx, stdin)
		if err != nil {
			return nil, fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		o.prompt = strings.TrimSpace(string(b))
		if o.prompt == "" {
			return nil, usageError("no prompt: pass it as arguments or on stdin (see agentloop --help)")
		}
	case o.promptGiven && c.piped(stdin):
		// git diff | agentloop "review this": the argument says what to
		// do, stdin is what to do it to.
		b, err := readAll(ctx, stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		o.prompt = attachStdin(o.prompt, string(b))
	}
	o.attachTerminal(stdin, stderr, c.isTerminal(stdin) && c.isTerminal(stderr), interactive)
	n := &notices{w: stderr}
	logger := slog.New(noticeHandler{newLogger(stderr, o.verbose, append(o.knownSecrets(), key, token)...).Handler(), n})
	client := llm.New(llm.Config{
		APIKey:     key,
		AuthToken:  token,
		BaseURL:    o.baseURL,
		Platform:   o.platform,
		HTTPClient: httpClient(logger, o.verbose),
		Logger:     logger,
		Observe:    o.telemetry.Observe(o.baseURL),
	})
	s, err := c.newSession(ctx, o, client, logger, stdout, stderr, false)
	if err != nil {
		return nil, err
	}
	s.interactive = interactive
	s.secrets = append(o.knownSecrets(), key, token)
	n.setShow(s.render.note)
	s.builtins.ask(c, stdin, stderr, s.render)
	return s, nil
}

// A session is one conversation: the agent, its history, where it is saved
// and how it is shown.
type session struct {
	o       *options
	cfg     agent.Config // the agent's, to make a fresh one on /clear
	memCfg  memory.Config
	agent   *agent.Agent
	render  renderer
	stderr  io.Writer
	servers []*mcptool.Server
	// builtins are the built-in tools and their permissions (builtin.go).
	builtins *builtins
	// gate approves or denies each tool call, the model's and the user's
	// (the REPL's @path and !command).
	gate agent.Hook
	// context is what the REPL's !commands ran and printed, for the next
	// prompt.
	context string
	// startContext is what the SessionStart hooks said for the model,
	// which ends the system prompt.
	startContext string
	hooks        *hookRunner // the settings files' hooks (hooks.go)
	log          *slog.Logger
	// interactive is whether the session is a REPL.
	interactive bool
	// unlock releases the session file's lock (session.go), if it is held.
	unlock func()
	// The conversation's file, its session id and the directory's
	// sessions, and whether it is saved (sessions.go); the values no
	// saved session may hold (write scans its bytes for them with a
	// secretScan, and saves a history that holds one scrubbed).
	path, id, dir string
	persist       bool
	secrets       []string
	// transcripts are the subagents' of the current run (agents.go).
	transcripts *transcripts
	// workerAgents are the subagents as a durable worker offers them
	// (Worker.Agents).
	workerAgents []subagent.Agent

	// Totals over the session's runs, for /usage.
	usage   llm.Usage
	costUSD float64
	turns   int
}

// newSession builds the agent: tools, MCP servers, history.
//
// lesson turns on the demo's commentary in the renderer.
func (c *cli) newSession(ctx context.Context, o *options, client *llm.Client, logger *slog.Logger, stdout, stderr io.Writer, lesson bool) (*session, error) {
	s := &session{o: o, stderr: stderr, log: logger}
	if err := s.pickSession(); err != nil {
		return nil, err
	}
	s.render = c.newRenderer(o, stdout, stderr, lesson)

	if err := s.applySettings(o); err != nil {
		return nil, err
	}
	reg := tool.NewRegistry(tool.Config{Logger: logger})
	var err error
	if s.builtins, err = registerBuiltins(o, reg); err != nil {
		return nil, err
	}
	s.hooks = newHookRunner(o.hooks, s.builtins.dir, o, s.render.note)
	if n := o.builtin.sandboxNotice; n != "" && slices.Contains(s.builtins.names, shell.Name) {
		fmt.Fprintln(stderr, n)
	}
	for _, w := range s.builtins.warnings {
		fmt.Fprintln(stderr, w)
	}
	for _, f := range s.builtins.instructions {
		logger.Info("agentloop: instructions file loaded", "path", f.path, "bytes", len(f.text))
	}
	for _, sk := range s.builtins.skills {
		logger.Info("agentloop: skill offered", "name", sk.Name, "dir", sk.Dir)
	}
	s.connectMCP(ctx, o, reg, client)
	if err := o.builtin.checkRules(reg); err != nil {
		s.close()
		return nil, err
	}

	s.memCfg = memory.Config{
		Model:        o.model,
		MaxTokens:    o.maxTokens,
		ContextLimit: o.contextLimit,
		Compaction:   o.compaction,
		Logger:       logger,
		Counter:      o.counter(client),
	}
	if err := s.addAgents(o, reg, client, logger); err != nil {
		s.close()
		return nil, err
	}
	history, err := s.loadHistory()
	if err != nil {
		s.close()
		return nil, err
	}
	s.gate = s.toolGate(s.builtins.approve(reg))
	s.cfg = s.agentConfig(o, client, "agentloop", s.system(), reg, history)
	s.cfg.Hooks = []agent.Hook{s.gate, s.lifecycle()}
	s.cfg.MaxDuration, s.cfg.MaxTotalTokens, s.cfg.MaxCostUSD = o.maxDuration, o.maxTotal, o.maxBudget
	s.cfg.ServerTools = o.server.decls
	s.sessionStart(ctx, "")
	if err := checkContextLimit(s.memCfg, s.cfg.System, reg.Specs()); err != nil {
		s.close()
		return nil, err
	}
	if err := s.reconfigure(s.cfg); err != nil {
		s.close()
		return nil, usageError("%v", err)
	}
	return s, nil
}

// agentConfig returns what the main agent's configuration and each
// subagent's share, built in this one place so that a setting cannot reach
// the one and miss the others: o's model settings (a subagent's o is its
// model's, see subagentConfig), the iteration cap, tool search, the log,
// the run's telemetry and the conversation. The rest is the main agent's
// alone (newSession): the hooks, which a subagent gets through a gate of
// its own; the time, token and cost limits, which already count a
// subagent's run; the schema of the final answer; and the server tools.
func (s *session) agentConfig(o *options, model llm.Model, name, system string, reg *tool.Registry, h *memory.History) agent.Config {
	cfg := agent.Config{
		Model:          model,
		System:         system,
		Thinking:       o.thinkingConfig(),
		Effort:         o.effort,
		Registry:       reg,
		History:        h,
		MaxIterations:  o.maxIterations,
		Logger:         s.log,
		Name:           name,
		ConversationID: conversationID(s.path),
		Observer:       o.telemetry,
	}
	if o.verbose {
		cfg.Middleware = logModel(s.log)
	}
	return cfg
}

// close shuts the MCP servers down and stops the renderer.
func (s *session) close() {
	for _, srv := range s.servers {
		if err := srv.Close(); err != nil {
			s.log.Debug("closing MCP server", "server", srv.Name(), "err", err)
		}
	}
	s.servers = nil
	s.builtins.close()
	s.render.close()
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}

// errForceExit ends the command when a second Ctrl-C arrives before an
// interrupted turn has wound down.
var errForceExit = &exitError{code: exitInterrupted}

// turn runs the agent on input, shows it, saves the session and returns the
// run's outcome as an error carrying its exit status. The first interrupt
// cancels the run; a second one returns at once.
func (s *session) turn(ctx context.Context, input string, interrupts <-chan os.Signal) error {
	return s.interruptible(ctx, interrupts, func(ctx context.Context) error { return s.drive(ctx, input) })
}

// interruptible runs drive, cancelling its context at the first interrupt
// and returning at once at a second.
func (s *session) interruptible(ctx context.Context, interrupts <-chan os.Signal, drive func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- drive(ctx) }()
	select {
	case err := <-done:
		return err
	case <-interrupts:
		cancel()
	}
	select {
	case err := <-done:
		if err == nil || exitCode(err) == exitInterrupted {
			return errInterrupted
		}
		return err
	case <-interrupts:
		return errForceExit
	}
}

// drive runs one turn to its end.
func (s *session) drive(ctx context.Context, input string) (outcome error) {
	s.transcripts.reset() // a failed run's
	res, runErr := s.show(s.agent.Stream(ctx, input))
	s.usage = s.usage.Add(res.Usage)
	s.costUSD += res.CostUSD
	s.turns++
	outcome = s.outcome(res, runErr)
	defer func() {
		s.render.done(ending{res: res, outcome: outcome, denials: s.builtins.takeDenials(), oneShot: !s.interactive, session: s.sessionID()})
	}()
	// A failed run leaves the history as it was before it (package agent
	// rolls it back), so the file is not rewritten either: a run that
	// failed changes nothing. An interrupted run is saved, with the
	// partial answer the agent kept.
	if exitCode(outcome) == exitFailure {
		return outcome
	}
	if err := s.save(); err != nil {
		s.render.fail(err)
		if outcome == nil {
			outcome = err
		} else {
			s.render.note("%v", err)
		}
	}
	return outcome
}

// show renders a run's events and returns how it ended.
func (s *session) show(evs iter.Seq2[agent.Event, error]) (res agent.Result, runErr error) {
	for ev, err := range evs {
		if ev != nil {
			s.render.event(ev, err)
		}
		if r, ok := ev.(agent.Result); ok {
			res = r
		}
		if err != nil {
			runErr = err
		}
	}
	return res, runErr
}

// outcome maps how a run ended to an error with its exit status: every
// state the agent can end in is named here, and exitCode turns the error
// into the status.
func (s *session) outcome(res agent.Result, err error) error {
	switch err = answerErr(err); {
	case res.State == agent.Cancelled || errors.Is(err, context.Canceled):
		return errInterrupted
	case err != nil:
		// Failed, with the error. A busy Agent's error lands here too, though the
		// command never overlaps two runs of one agent: a turn returns
		// only once its run has ended, or when the command exits.
		s.render.fail(err)
		return &exitError{code: exitFailure, err: describeError(err)}
	}
	switch res.State {
	case agent.Finished:
		return nil
	case agent.Refused:
		s.render.note("the model declined to answer (stop reason: refusal)")
		return nil
	case agent.Truncated:
		s.render.note("the answer was cut off at --max-tokens %d", s.o.maxTokens)
		return nil
	case agent.Blocked:
		return &exitError{code: exitFailure, err: fmt.Errorf("the prompt was blocked: %s", res.Text)}
	// The limits stop a run that has not produced a final answer, so
	// a script must be able to tell them from one that has: each exits 3.
	case agent.IterationLimit:
		return limitError("iteration limit reached: %s without a final answer (raise --max-iterations)",
			plural(res.Iterations, "model turn", "model turns"))
	case agent.TimeLimit:
		return limitError("time limit reached: no final answer within --max-duration %v (%s)",
			s.o.maxDuration, plural(res.Iterations, "model turn", "model turns"))
	case agent.TokenLimit:
		return limitError("token limit reached: %d tokens used of --max-total-tokens %d, without a final answer",
			res.Usage.Context(), s.o.maxTotal)
	case agent.BudgetLimit:
		return limitError("budget limit reached: $%.4f spent of --max-budget-usd %s, without a final answer",
			res.CostUSD, strconv.FormatFloat(s.o.maxBudget, 'f', -1, 64))
	default:
		// A state a later version of package agent adds.
		return &exitError{code: exitFailure, err: fmt.Errorf("the run ended with state %q", res.State)}
	}
}

// limitError returns an error that exits with status 3.
func limitError(format string, args ...any) error {
	return &exitError{code: exitLimit, err: fmt.Errorf(format, args...)}
}

// newRenderer picks the renderer for the flags and the terminals at hand.
func (c *cli) newRenderer(o *options, stdout, stderr io.Writer, lesson bool) renderer {
	_, priced := llm.LookupModel(o.model)
	switch o.outputFormat {
	case formatStreamJSON:
		return newJSONRenderer(stdout, stderr, priced, o.schema != nil)
	case formatJSON:
		return newResultRenderer(stdout, stderr, priced, o.schema != nil)
	}
	if o.schema != nil { // stdout holds only the answer
		return schemaRenderer{newTextRenderer(io.Discard, stderr, c.newStyle(stderr), c.isTerminal(stderr), false, false, nil), stdout}
	}
	outTerm, errTerm := c.isTerminal(stdout), c.isTerminal(stderr)
	var scr *screen
	if outTerm {
		scr = &screen{}
		if c.termSize != nil {
			scr.size = func() (int, int) { return c.termSize(stdout) }
		}
	}
	r := newTextRenderer(stdout, stderr, c.newStyle(stderr), errTerm, (outTerm && errTerm) || sameFile(stdout, stderr), lesson, scr)
	r.finalOnly = !outTerm && !lesson && !o.allTurns
	r.summary, r.priced = errTerm && !lesson, priced
	return r
}

// newStyle returns the colours for w: none unless w is a terminal, and
// none when NO_COLOR is set (https://no-color.org) or TERM is dumb.
func (c *cli) newStyle(w io.Writer) style {
	return style{color: c.isTerminal(w) && c.getenv("NO_COLOR") == "" && c.getenv("TERM") != "dumb"}
}
