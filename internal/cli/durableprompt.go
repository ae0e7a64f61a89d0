package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/permission"
)

// This file is the client side of the durable mode (durable.go): a prompt
// run on the workers, and the questions a terminal answers for it.

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
		a := &terminalAsker{w: stderr, render: s.render, style: c.newStyle(stderr), stdin: stdin, dir: dir,
			readLine: questionLines(stderr, stdin)}
		// The in-process policy, every tool asking, so that "always" adds
		// the rule it adds in process: the exact command for bash.
		policy := &permission.Policy{ReadOnly: []string{}, Ask: a.ask}
		turn := make(chan struct{}, 1) // one question at a time, which a withdrawn one stops waiting for
		p.Ask = func(ctx context.Context, call llm.ToolUse) error {
			select {
			case turn <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			defer func() { <-turn }()
			return policy.Approve(ctx, call)
		}
	}
	p.AppendSystem = o.builtin.appendSystem // the worker's default system prompt is the worker's to add to
	p.Thinking, p.Effort, p.Compaction, p.Schema = o.thinkingConfig(), o.effort, o.compaction, o.schema
	var res agent.Result
	err := s.interruptible(ctx, c.interrupts, func(ctx context.Context) error {
		r, err := s.show(c.durable.Run(ctx, t, p))
		res = r
		return s.outcome(r, err)
	})
	if err != errForceExit { // else the run may still be writing res
		s.render.done(ending{res: res, outcome: err, oneShot: true})
	}
	if exitCode(err) == exitInterrupted && o.durable.detach && o.session != "" {
		s.render.note("detached: the run goes on in session %s (agentloop --temporal %s --session %s continues it)", o.session, t.HostPort, o.session)
	}
	return err
}

// questionLines returns the durable mode's terminalAsker.readLine. A
// question there may be withdrawn, when the call is decided elsewhere, so
// stdin is read only while a question is open, and a line that comes after
// its question was withdrawn is dropped: it was typed for that question,
// not for the next one.
func questionLines(w io.Writer, stdin io.Reader) func(context.Context, string) (string, error) {
	sc := bufio.NewScanner(stdin)
	var (
		mu      sync.Mutex
		open    chan string // the open question's; nil when none is; closed at the end of input
		reading bool        // a goroutine waits in sc.Scan
		eof     bool
	)
	read := func() {
		ok := sc.Scan()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case open == nil: // dropped
		case ok:
			open <- sc.Text()
		default:
			close(open)
		}
		open, reading, eof = nil, false, !ok
	}
	return func(ctx context.Context, prompt string) (string, error) {
		io.WriteString(w, prompt)
		ch := make(chan string, 1)
		mu.Lock()
		if eof {
			mu.Unlock()
			return "", io.EOF
		}
		open = ch
		if !reading {
			// A read of a terminal cannot be abandoned: it ends with a
			// line, or with the process.
			reading = true
			go read()
		}
		mu.Unlock()
		select {
		case l, ok := <-ch:
			if !ok {
				return "", io.EOF
			}
			return l, nil
		case <-ctx.Done():
			mu.Lock()
			if open == ch {
				open = nil
			}
			mu.Unlock()
			return "", ctx.Err()
		}
	}
}
