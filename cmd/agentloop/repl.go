package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/memory"
)

// replHelp is printed when the REPL starts and on an unknown command.
const replHelp = "/exit ends the session, /clear starts afresh, /usage shows tokens and cost; " +
	"Ctrl-C interrupts a turn, a second Ctrl-C exits"

// repl runs the interactive session: one turn per line of input, the
// conversation carrying across turns. It returns nil on /exit or end of
// input, and errInterrupted on two Ctrl-C in a row with nothing typed in
// between.
//
// Lines are read on their own goroutine, so that an interrupt is noticed
// while the REPL waits at its prompt.
func (s *session) repl(ctx context.Context, stdin io.Reader, interrupts <-chan os.Signal) error {
	lines := make(chan string)
	s.builtins.shareLines(lines) // permission questions read their answers here
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()

	fmt.Fprintf(s.stderr, "agentloop %s · %s\n", s.o.model, replHelp)
	if n := s.agent.History().Len(); n > 0 {
		fmt.Fprintf(s.stderr, "resuming %s: %d messages\n", s.o.session, n)
	}
	strikes := 0 // Ctrl-C presses since the last line typed
	for {
		io.WriteString(s.stderr, "> ")
		var line string
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-interrupts:
			strikes++
			if strikes >= 2 {
				io.WriteString(s.stderr, "\n")
				return errInterrupted
			}
			io.WriteString(s.stderr, "\n(Ctrl-C again or /exit to quit)\n")
			continue
		case l, ok := <-lines:
			if !ok {
				io.WriteString(s.stderr, "\n")
				return nil
			}
			line = strings.TrimSpace(l)
		}
		strikes = 0
		switch {
		case line == "":
			continue
		case line == "/exit" || line == "/quit":
			return nil
		case line == "/clear":
			if err := s.clear(); err != nil {
				reportError(s.stderr, err)
			}
			continue
		case line == "/usage":
			s.showUsage()
			continue
		case strings.HasPrefix(line, "/"):
			fmt.Fprintf(s.stderr, "unknown command %s: %s\n", line, replHelp)
			continue
		}
		err := s.turn(ctx, line, interrupts)
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

// clear starts a new conversation with the same settings.
func (s *session) clear() error {
	cfg := s.cfg
	cfg.History = memory.New(s.memCfg)
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	s.agent = a
	fmt.Fprintln(s.stderr, "(conversation cleared)")
	return s.save()
}

// showUsage prints the session's token use and cost so far.
func (s *session) showUsage() {
	u := s.usage
	fmt.Fprintf(s.stderr, "%d runs: %d input tokens (%d read from cache, %d written to it), %d output tokens, $%.4f\n",
		s.turns, u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens,
		u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, s.costUSD)
	h := s.agent.History()
	fmt.Fprintf(s.stderr, "context: about %d tokens of the %d that trigger compaction\n", h.Tokens(), h.Config().ContextLimit)
}

// reportError prints err as the command's final error would be printed.
func reportError(w io.Writer, err error) {
	if err != nil && err.Error() != "" {
		fmt.Fprintf(w, "agentloop: %v\n", err)
	}
}
