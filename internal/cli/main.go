// Package cli is the agentloop command: flags, the run, rendering, the
// REPL, sessions, MCP servers and built-in tools, and exit statuses. It lives
// outside cmd/agentloop so that a build with more modes (the durable one, in
// its own module) is the same command, not a copy of it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/agentloop/agentloop/llm"
)

// Main runs the command with the process's arguments, standard streams,
// environment and Ctrl-C, and returns its exit status.
func Main() int { return MainWith(nil) }

// A cli is the command with its environment injected, so that tests run it
// in-process with a fake environment, pipes that pretend to be terminals and
// interrupts sent down a channel.
type cli struct {
	// getenv reads an environment variable. This is the only way the
	// command reads the environment.
	getenv func(string) string
	// isTerminal reports whether f (stdin, stdout or stderr as passed to
	// run) is a terminal.
	isTerminal func(f any) bool
	// interrupts delivers Ctrl-C. Nil means no interrupts ever arrive.
	interrupts <-chan os.Signal
	// termSize returns the columns and rows of the terminal f is on, or
	// zeros. Nil means unknown.
	termSize func(f any) (cols, rows int)
	// editor makes the REPL's line editor for the process's own terminal.
	// Nil means plain lines, as tests in-process read them.
	editor func() lineReader
	// durable is the durable mode, nil in the plain build (durable.go).
	durable Durable
}

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// termSize returns the size of the terminal f is on, or zeros.
func termSize(f any) (cols, rows int) {
	if file, ok := f.(*os.File); ok {
		if c, r, err := term.GetSize(int(file.Fd())); err == nil {
			return c, r
		}
	}
	return 0, 0
}

// sameFile reports whether a and b are *os.Files open on the same file or
// pipe, as after 2>&1, where a stderr line must not land mid-answer either.
func sameFile(a, b any) bool {
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	sa, err1 := fa.Stat()
	sb, err2 := fb.Stat()
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// main runs the command and turns its error into a message on stderr and an
// exit status. It is the one place where errors become exit statuses.
func (c *cli) main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Before anything starts a child or reads a secret.
	protectProcess()
	err := c.run(ctx, args, stdin, stdout, stderr)
	reportError(stderr, err)
	return exitCode(err)
}

// The exit statuses, part of the command's contract (see usage).
const (
	exitOK          = 0
	exitFailure     = 1   // an API or runtime error after retries
	exitUsage       = 2   // a usage or configuration error
	exitLimit       = 3   // --max-iterations, --max-duration, --max-total-tokens or --max-budget-usd was reached
	exitInterrupted = 130 // Ctrl-C, as a shell reports SIGINT
)

// An exitError carries the exit status an error should end the command
// with. Errors without one exit with status 1.
type exitError struct {
	code int
	err  error // nil: exit silently
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError returns an error that exits with status 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// errInterrupted ends a run cut short by Ctrl-C. It prints nothing: the
// user knows they pressed it.
var errInterrupted = &exitError{code: exitInterrupted}

// exitCode returns the exit status for err.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitFailure
	}
}

// describeError returns err as a user should read it: an API error alone,
// as [llm.APIError.Error] words it, without the layers that wrapped it.
func describeError(err error) error {
	if ae, ok := errors.AsType[*llm.APIError](err); ok {
		return errors.New("API error " + strings.TrimPrefix(ae.Error(), "llm: "))
	}
	return err
}
