package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// replHelp is what /help prints.
const replHelp = `/help            this list
/model [name]    show the model, or switch to another: opus, sonnet, haiku or a model's id
/compact         compact the conversation now, to free context
/cost            the tokens and cost so far, and how full the context is (also /usage)
/resume [N|ID]   list this directory's sessions (with --session, the transcripts beside it), or go on with one
/clear           start a new conversation (with --session, the old transcript is kept)
/exit            end the session (also /quit, or Ctrl-D)
@path            attach a file, relative to the working directory: it goes with the
                 prompt, labelled with its path (Tab completes the path)
!command         run a shell command, asking as the bash tool would; the command and
                 its output go with the next prompt
A line that ends in \ goes on to the next, and so does Alt-Enter; a paste is one
prompt, its newlines kept. Shift-Tab cycles the permission mode: default,
acceptEdits, plan, bypassPermissions. Up and Down recall earlier prompts, Ctrl-R
searches them. Ctrl-C interrupts a turn; a second Ctrl-C exits.
`

// errPromptInterrupt is a lineReader's answer to Ctrl-C at the prompt.
var errPromptInterrupt = errors.New("interrupted at the prompt")

// A lineReader reads the REPL's input, a line at a time.
type lineReader interface {
	// readLine shows prompt and returns the line typed, without its end.
	// It returns errPromptInterrupt on Ctrl-C and io.EOF at the end of
	// the input.
	readLine(prompt string) (string, error)
	// remember adds line to the history that Up and Ctrl-R recall.
	remember(line string)
	// close gives the terminal back as it was.
	close()
}

// scanner is the lineReader of anything else: plain lines, the prompt on
// stderr. Ctrl-C at its prompt arrives as an interrupt, not from here.
type scanner struct {
	sc     *bufio.Scanner
	prompt io.Writer
	// typed is set when a person types the lines on a terminal without
	// line editing (stdout is piped): arrow keys then arrive as escape
	// codes, which must not reach the model as if they were the prompt.
	typed bool
}

func newScanner(stdin io.Reader, stderr io.Writer, typed bool) lineReader {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	return &scanner{sc: sc, prompt: stderr, typed: typed}
}

func (s *scanner) readLine(prompt string) (string, error) {
	io.WriteString(s.prompt, prompt)
	for s.sc.Scan() {
		if s.typed && strings.Contains(s.sc.Text(), "\x1b") {
			io.WriteString(s.prompt, "(that line holds terminal escape codes, such as arrow keys: line editing needs stdout on the terminal too; type it again without them)\n"+prompt)
			continue
		}
		return s.sc.Text(), nil
	}
	if err := s.sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

func (s *scanner) remember(string) {}
func (s *scanner) close()          {}

// lineReader returns the REPL's line reader: the editor when the command
// runs on the process's own terminal, else a scanner of stdin.
func (c *cli) lineReader(stdin io.Reader, stdout, stderr io.Writer) lineReader {
	if c.editor != nil && stdin == os.Stdin && stdout == os.Stdout && c.isTerminal(stdin) && c.isTerminal(stdout) {
		return c.editor()
	}
	return newScanner(stdin, stderr, c.isTerminal(stdin))
}

// read is a line read, or the error that ended the read.
type read struct {
	line string
	err  error
}

// lines hands out the lines of one lineReader to the REPL, between turns,
// and to the permission questions asked during a turn, so that only one
// read of the terminal is ever in progress: a read a question gave up on
// is the one the next prompt takes.
type lines struct {
	lr      lineReader
	pending chan read // the read in progress, if any
	modeKey func()    // Shift-Tab's; nil: the key does nothing
}

// start begins reading a line, showing prompt, unless a read is already in
// progress, and returns the channel its result comes on.
func (l *lines) start(prompt string) <-chan read {
	if l.pending == nil {
		c := make(chan read, 1)
		go func() {
			line, err := readInput(l.lr, prompt, l.modeKey)
			c <- read{line, err}
		}()
		l.pending = c
	}
	return l.pending
}

// answer reads the answer to a permission question asked with prompt.
func (l *lines) answer(ctx context.Context, prompt string) (string, error) {
	select {
	case r := <-l.start(prompt):
		l.pending = nil
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// repl runs the interactive session: one turn per line of input, the
// conversation carrying across turns. It returns nil on /exit or end of
// input, and errInterrupted on two Ctrl-C in a row with nothing typed in
// between.
//
// Each line is read on its own goroutine, so that an interrupt is noticed
// while the REPL waits at its prompt; none is read during a turn, when the
// terminal is the turn's.
func (s *session) repl(ctx context.Context, lr lineReader, interrupts <-chan os.Signal) error {
	fmt.Fprintf(s.stderr, "agentloop %s · /help for the commands · Ctrl-C interrupts a turn\n", s.o.model)
	if m := s.builtins.currentMode(); m != modeDefault {
		fmt.Fprintf(s.stderr, "permission mode: %s: %s (Shift-Tab for the next)\n", m, modeNotes[m])
	}
	if msgs := s.cfg.History.Messages(); len(msgs) > 0 {
		fmt.Fprintf(s.stderr, "resuming %s: %s\n", s.name(), plural(len(msgs), "message", "messages"))
		for _, m := range msgs {
			// The earlier prompts, for Up to recall as if typed here.
			if t := llm.TextOf(m.Content); m.Role == llm.User && t != "" && !strings.Contains(t, "\n") {
				lr.remember(t)
			}
		}
	}
	in := &lines{lr: lr, modeKey: s.nextMode}
	s.builtins.shareLines(in) // permission questions read their answers here
	strikes := 0              // Ctrl-C presses since the last line typed
	strike := func() bool {
		strikes++
		if strikes >= 2 {
			io.WriteString(s.stderr, "\n")
			return true
		}
		io.WriteString(s.stderr, "\n(Ctrl-C again or /exit to quit)\n")
		return false
	}
	for {
		var r read
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-interrupts:
			// The read goes on; the scanner's prompt is shown again.
			if strike() {
				return errInterrupted
			}
			io.WriteString(s.stderr, "> ")
			continue
		case r = <-in.start("> "):
			in.pending = nil
		}
		switch {
		case errors.Is(r.err, errPromptInterrupt):
			if strike() {
				return errInterrupted
			}
			continue
		case errors.Is(r.err, io.EOF):
			io.WriteString(s.stderr, "\n")
			return nil
		case r.err != nil:
			return fmt.Errorf("reading the prompt: %w", r.err)
		}
		strikes = 0
		line := strings.TrimSpace(r.line)
		if line == "" {
			continue
		}
		if !strings.Contains(line, "\n") { // liner edits one line
			lr.remember(line)
		}
		if strings.HasPrefix(line, "/") && !strings.Contains(line, "\n") {
			if s.command(ctx, line, interrupts) {
				return nil
			}
			continue
		}
		if cmd, ok := strings.CutPrefix(line, "!"); ok {
			err := s.interruptible(ctx, interrupts, func(ctx context.Context) error { return s.bang(ctx, strings.TrimSpace(cmd)) })
			if err == errForceExit {
				return errInterrupted
			}
			reportError(s.stderr, err)
			continue
		}
		err := s.interruptible(ctx, interrupts, func(ctx context.Context) error {
			prompt, err := s.attach(ctx, line)
			if err != nil {
				return err // nothing is sent
			}
			if err := s.syncSystem(); err != nil {
				return err
			}
			err = s.drive(ctx, s.context+prompt)
			if exitCode(err) != exitFailure { // a failed turn changed nothing
				s.context = ""
			}
			return err
		})
		switch {
		case err == errForceExit:
			return errInterrupted
		case err == errInterrupted:
			strikes = 1
			io.WriteString(s.stderr, "(interrupted)\n")
		case err != nil:
			// The session goes on: the history is intact, and the user
			// can retry or rephrase.
			reportError(s.stderr, err)
		}
	}
}

// command runs the slash command line, and reports whether it ends the
// session.
func (s *session) command(ctx context.Context, line string, interrupts <-chan os.Signal) (exit bool) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	var err error
	switch name {
	case "/exit", "/quit":
		return true
	case "/help":
		io.WriteString(s.stderr, replHelp)
	case "/clear":
		if err = s.clear(); err == nil {
			s.context = ""
			s.sessionStart(ctx, "clear")
			err = s.reconfigure(s.cfg)
		}
	case "/usage", "/cost":
		s.showUsage()
	case "/model":
		err = s.model(arg)
	case "/compact":
		err = s.interruptible(ctx, interrupts, s.compact)
		if err == errForceExit {
			return true
		}
	case "/resume":
		err = s.resume(arg)
	default:
		err = fmt.Errorf("unknown command %s; /help lists the commands", visible(name))
	}
	reportError(s.stderr, err)
	return false
}

// showUsage prints the session's token use and cost so far.
func (s *session) showUsage() {
	u := s.usage
	_, priced := llm.LookupModel(s.o.model)
	cost := costText(s.costUSD, priced)
	fmt.Fprintf(s.stderr, "%s: %d input tokens (%d read from cache, %d written to it), %d output tokens, %s\n",
		plural(s.turns, "run", "runs"), u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens,
		u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, cost)
	h := s.cfg.History
	fmt.Fprintf(s.stderr, "context: about %d tokens of the %d that trigger compaction\n", h.Tokens(), h.Config().ContextLimit)
}

// reportError prints err as the command's final error would be printed.
func reportError(w io.Writer, err error) {
	if err != nil && err.Error() != "" {
		io.WriteString(w, "agentloop: "+visible(err.Error())+"\n")
	}
}
