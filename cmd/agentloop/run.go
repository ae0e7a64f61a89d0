package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/mcptool"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

// Defaults shown in --help. They are the library's own, so that the CLI
// and a program using the packages behave alike.
const (
	defaultModel         = agent.DefaultModel
	defaultMaxTokens     = llm.DefaultMaxTokens
	defaultMaxIterations = agent.DefaultMaxIterations
)

// defaultContextLimit is memory's default threshold for the default
// max-tokens: the context window less room for the reply and a margin.
var defaultContextLimit = memory.New(memory.Config{MaxTokens: defaultMaxTokens}).Config().ContextLimit

// run is the whole command. Its error decides the exit status (see
// exitCode); main prints it.
func (c *cli) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, c.getenv)
	if err != nil {
		return err
	}
	switch {
	case o.help:
		_, err := io.WriteString(stdout, helpText())
		return err
	case o.version:
		_, err := fmt.Fprintln(stdout, versionString())
		return err
	case o.demo:
		return c.demo(ctx, o, stdout, stderr)
	}

	key, token := c.getenv("ANTHROPIC_API_KEY"), c.getenv("ANTHROPIC_AUTH_TOKEN")
	if key == "" && token == "" {
		return usageError("no API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-...), " +
			"or ANTHROPIC_AUTH_TOKEN for a bearer token; `agentloop demo` runs without one")
	}
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
		return s.repl(ctx, stdin, c.interrupts)
	}
	return s.turn(ctx, o.prompt, c.interrupts)
}

// setup reads the prompt, if it comes on stdin, and builds the session.
func (c *cli) setup(ctx context.Context, o *options, key, token string, stdin io.Reader, stdout, stderr io.Writer) (*session, error) {
	// The prompt is read before connecting to anything, so that a missing
	// prompt fails fast.
	interactive := !o.promptGiven && c.isTerminal(stdin)
	if !o.promptGiven && !interactive {
		b, err := readAll(ctx, stdin)
		if err != nil {
			return nil, fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		o.prompt = strings.TrimSpace(string(b))
		if o.prompt == "" {
			return nil, usageError("no prompt: pass it as arguments or on stdin (see agentloop --help)")
		}
	}
	o.attachTerminal(stdin, stderr, c.isTerminal(stdin) && c.isTerminal(stderr), interactive)
	logger := newLogger(stderr, o.verbose, key, token)
	client := llm.New(llm.Config{
		APIKey:     key,
		AuthToken:  token,
		BaseURL:    c.getenv("ANTHROPIC_BASE_URL"),
		HTTPClient: httpClient(logger, o.verbose),
		Logger:     logger,
	})
	s, err := c.newSession(ctx, o, client, logger, stdout, stderr, false)
	if err != nil {
		return nil, err
	}
	s.interactive = interactive
	return s, nil
}

// watchInterrupts returns a context cancelled by the first interrupt, and
// a function that stops watching and reports whether one came. After it,
// the interrupts are free for the turn or the REPL to read.
func (c *cli) watchInterrupts(ctx context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	stop, got := make(chan struct{}), make(chan bool, 1)
	go func() {
		select {
		case <-c.interrupts:
			cancel()
			got <- true
		case <-stop:
			got <- false
		}
	}()
	return ctx, func() bool {
		close(stop)
		// The handshakes this context bounded are over; cancelling it
		// now releases it without touching the connections.
		defer cancel()
		return <-got
	}
}

// readAll is io.ReadAll that gives up when ctx is done. The read itself
// cannot be stopped; its goroutine ends with the process.
func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	c := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		c <- result{b, err}
	}()
	select {
	case res := <-c:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
	log     *slog.Logger
	// interactive is whether the session is a REPL.
	interactive bool

	// Totals over the session's runs, for /usage.
	usage   llm.Usage
	costUSD float64
	turns   int
}

// newSession builds the agent: tools, MCP servers, history.
//
// lesson turns on the demo's commentary in the renderer.
func (c *cli) newSession(ctx context.Context, o *options, model llm.Model, logger *slog.Logger, stdout, stderr io.Writer, lesson bool) (*session, error) {
	s := &session{o: o, stderr: stderr, log: logger}
	s.render = c.newRenderer(o, stdout, stderr, lesson)

	reg := tool.NewRegistry(tool.Config{Logger: logger})
	for _, name := range o.tools {
		switch name {
		case "calculator":
			if err := reg.Register(calculator.New()); err != nil {
				return nil, err
			}
		}
	}
	s.connectMCP(ctx, o, reg, model)

	s.memCfg = memory.Config{
		Model:        o.model,
		MaxTokens:    o.maxTokens,
		ContextLimit: o.contextLimit,
		Logger:       logger,
	}
	if tc, ok := model.(memory.TokenCounter); ok {
		s.memCfg.Counter = tc
	}
	history, err := s.loadHistory()
	if err != nil {
		s.close()
		return nil, err
	}
	s.cfg = agent.Config{
		Model:          model,
		ModelName:      o.model,
		System:         o.system,
		MaxTokens:      o.maxTokens,
		Tools:          reg,
		History:        history,
		MaxIterations:  o.maxIterations,
		MaxDuration:    o.maxDuration,
		MaxTotalTokens: o.maxTotal,
		Logger:         logger,
	}
	if o.verbose {
		s.cfg.Middleware = logModel(logger)
	}
	if o.thinking > 0 {
		s.cfg.Thinking = &llm.ThinkingConfig{BudgetTokens: o.thinking}
	}
	s.agent, err = agent.New(s.cfg)
	if err != nil {
		s.close()
		return nil, usageError("%v", err)
	}
	return s, nil
}

// loadHistory loads the --session file if it exists, else starts afresh.
func (s *session) loadHistory() (*memory.History, error) {
	if s.o.session == "" {
		return memory.New(s.memCfg), nil
	}
	h, err := memory.Load(s.o.session, s.memCfg)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return memory.New(s.memCfg), nil
	case err != nil:
		// Starting afresh would overwrite the file at the first save, so a
		// damaged transcript stops the command instead.
		return nil, usageError("cannot resume session %s: %s; move it aside, or pass another --session, to start afresh",
			s.o.session, describeLoadError(err))
	}
	return h, nil
}

// describeLoadError says what is wrong with a session file: the first bad
// line and how many more there are, rather than every one of them.
func describeLoadError(err error) string {
	var le *memory.LineError
	if !errors.As(err, &le) {
		return err.Error()
	}
	msg := fmt.Sprintf("line %d is not a valid message (%v)", le.Line, le.Err)
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 1 {
		msg += fmt.Sprintf(", nor are %d more lines", len(j.Unwrap())-1)
	}
	return msg
}

// save writes the --session file, if there is one.
func (s *session) save() error {
	if s.o.session == "" {
		return nil
	}
	if err := s.agent.History().Save(s.o.session); err != nil {
		return fmt.Errorf("saving session: %w", err)
	}
	return nil
}

// close shuts the MCP servers down and stops the renderer.
func (s *session) close() {
	for _, srv := range s.servers {
		if err := srv.Close(); err != nil {
			s.log.Debug("closing MCP server", "server", srv.Name(), "err", err)
		}
	}
	s.servers = nil
	s.render.close()
}

// errForceExit ends the command when a second Ctrl-C arrives before an
// interrupted turn has wound down.
var errForceExit = &exitError{code: exitInterrupted}

// turn runs the agent on input, shows it, saves the session and returns the
// run's outcome as an error carrying its exit status. The first interrupt
// cancels the run; a second one returns at once.
func (s *session) turn(ctx context.Context, input string, interrupts <-chan os.Signal) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.drive(ctx, input) }()
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
func (s *session) drive(ctx context.Context, input string) error {
	var res agent.Result
	var runErr error
	for ev, err := range s.agent.Stream(ctx, input) {
		if ev != nil {
			s.render.event(ev)
		}
		if d, ok := ev.(agent.Done); ok {
			res = d.Result
		}
		if err != nil {
			runErr = err
		}
	}
	s.usage = s.usage.Add(res.Usage)
	s.costUSD += res.CostUSD
	s.turns++
	outcome := s.outcome(res, runErr)
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

// outcome maps how a run ended to an error with its exit status: every
// state the agent can end in is named here, and exitCode turns the error
// into the status.
func (s *session) outcome(res agent.Result, err error) error {
	switch {
	case res.State == agent.Cancelled || errors.Is(err, context.Canceled):
		return errInterrupted
	case err != nil:
		// Failed, with the error. agent.ErrBusy lands here too, though the
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
	case agent.MaxTokens:
		s.render.note("the answer was cut off at --max-tokens %d", s.o.maxTokens)
		return nil
	// The three limits stop a run that has not produced a final answer, so
	// a script must be able to tell them from one that has: each exits 3.
	case agent.MaxIterations:
		return limitError("iteration limit reached: %d model turns without a final answer (raise --max-iterations)",
			res.Iterations)
	case agent.Timeout:
		return limitError("time limit reached: no final answer within --max-duration %v (%d model turns)",
			s.o.maxDuration, res.Iterations)
	case agent.TokenLimit:
		return limitError("token limit reached: %d tokens used of --max-total-tokens %d, without a final answer",
			res.Usage.Context(), s.o.maxTotal)
	default:
		// A state a later version of package agent adds.
		return &exitError{code: exitFailure, err: fmt.Errorf("the run ended with state %q", res.State)}
	}
}

// limitError returns an error that exits with status 3.
func limitError(format string, args ...any) error {
	return &exitError{code: exitLimit, err: fmt.Errorf(format, args...)}
}

// describeError returns err as a user should read it: for an API error,
// the API's own message, its type and status, and the request id that
// support will ask for.
func describeError(err error) error {
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		return err
	}
	var b strings.Builder
	b.WriteString("API error")
	if apiErr.StatusCode != 0 {
		fmt.Fprintf(&b, " %d", apiErr.StatusCode)
	}
	if apiErr.Type != "" {
		fmt.Fprintf(&b, " %s", apiErr.Type)
	}
	if apiErr.Message != "" {
		fmt.Fprintf(&b, ": %s", apiErr.Message)
	}
	if apiErr.RequestID != "" {
		fmt.Fprintf(&b, " (request id %s)", apiErr.RequestID)
	} else {
		b.WriteString(" (no request id)")
	}
	return errors.New(b.String())
}

// errorRecord is the JSON line --json writes for the error that ended a
// run.
func errorRecord(err error) map[string]any {
	rec := map[string]any{"type": "error", "message": err.Error()}
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) {
		rec["message"] = apiErr.Message
		rec["status"] = apiErr.StatusCode
		rec["error_type"] = apiErr.Type
		rec["request_id"] = apiErr.RequestID
	}
	return rec
}

// newRenderer picks the renderer for the flags and the terminals at hand.
func (c *cli) newRenderer(o *options, stdout, stderr io.Writer, lesson bool) renderer {
	if o.json {
		return newJSONRenderer(stdout, stderr)
	}
	outTerm, errTerm := c.isTerminal(stdout), c.isTerminal(stderr)
	return newTextRenderer(stdout, stderr, c.newStyle(stderr), errTerm, (outTerm && errTerm) || sameFile(stdout, stderr), lesson)
}

// newStyle returns the colours for w: none unless w is a terminal, and
// none when NO_COLOR is set (https://no-color.org) or TERM is dumb.
func (c *cli) newStyle(w io.Writer) style {
	return style{color: c.isTerminal(w) && c.getenv("NO_COLOR") == "" && c.getenv("TERM") != "dumb"}
}
