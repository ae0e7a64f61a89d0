package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/files"
	"github.com/agentloop/agentloop/tools/permission"
)

// terminalAsker asks on the terminal whether a tool call may run, showing
// the exact command, or the diff of a file change.
type terminalAsker struct {
	w      io.Writer // stderr
	render renderer  // stopped while asking, so that no spinner overwrites the question
	style  style
	stdin  io.Reader
	ws     *files.Workspace // for the diffs; nil without file tools
	dir    string

	// readLine shows prompt and returns the next line typed. Default: a
	// reader of its own on stdin, started at the first question. The REPL
	// replaces it with one that reads through the REPL's own line reader
	// (see shareLines), since two readers of one terminal would race for
	// each line.
	readLine func(ctx context.Context, prompt string) (string, error)
	once     sync.Once
}

// fromLines returns a readLine that receives from lines, closed at the end
// of input.
func fromLines(w io.Writer, lines <-chan string) func(context.Context, string) (string, error) {
	return func(ctx context.Context, prompt string) (string, error) {
		io.WriteString(w, prompt)
		select {
		case l, ok := <-lines:
			if !ok {
				return "", io.EOF
			}
			return l, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// next shows prompt and returns the next line typed.
func (a *terminalAsker) next(ctx context.Context, prompt string) (string, error) {
	a.once.Do(func() {
		if a.readLine != nil {
			return
		}
		ch := make(chan string)
		a.readLine = fromLines(a.w, ch)
		// This reader lives as long as stdin is open: a read from a
		// terminal cannot be abandoned, only left to end with the process.
		go func() {
			defer close(ch)
			sc := bufio.NewScanner(a.stdin)
			for sc.Scan() {
				ch <- sc.Text()
			}
		}()
	})
	return a.readLine(ctx, prompt)
}

// ask is the policy's AskFunc.
func (a *terminalAsker) ask(ctx context.Context, call llm.ToolUse, always permission.Rule) (permission.Answer, error) {
	what, body := a.describe(call)
	// The spinner must not draw over the question while it waits.
	a.render.pause()
	io.WriteString(a.w, a.style.warn(what)+"\n"+body)
	scope := alwaysScope(always)
	for {
		// Plain text: a line editor measures its prompt, and colour codes would
		// throw that off.
		line, err := a.next(ctx, fmt.Sprintf("Allow? [y]es, [n]o, [a]lways (%s, for the rest of this session): ", scope))
		if err != nil {
			io.WriteString(a.w, "\n")
			return permission.No, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return permission.Yes, nil
		case "a", "always":
			return permission.Always, nil
		case "n", "no", "":
			return permission.No, nil
		}
	}
}

// describe returns the question's heading and what the call would do.
func (a *terminalAsker) describe(call llm.ToolUse) (string, string) {
	var in struct {
		Command string `json:"command"`
		URL     string `json:"url"`
		Path    string `json:"path"`
	}
	json.Unmarshal(call.Input, &in)
	// What the model wrote is shown escaped, so that no control sequence in
	// it can redraw the question into something else.
	in.Command, in.URL, in.Path = printable(in.Command), printable(in.URL), printable(in.Path)
	switch {
	case call.Name == "bash":
		return fmt.Sprintf("bash wants to run a command in %s:", a.dir), "  $ " + strings.ReplaceAll(in.Command, "\n", "\n    ") + "\n"
	case call.Name == "web_fetch":
		return "web_fetch wants to fetch " + in.URL, ""
	case a.ws != nil:
		if diff, ok, err := a.ws.Preview(call.Name, call.Input); ok {
			if err != nil {
				return fmt.Sprintf("%s wants to change %s, but it will fail: %s", call.Name, in.Path, printable(err.Error())), ""
			}
			return fmt.Sprintf("%s wants to change %s:", call.Name, in.Path), a.colorDiff(printable(diff))
		}
	}
	return fmt.Sprintf("%s wants to run with input %s", call.Name, compactJSON(call.Input, 500)), ""
}

// printable returns s with every control character but newline and tab,
// and every bidirectional override, written as an escape such as \x1b.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Bidi_Control, r) {
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// colorDiff colours a unified diff's added and removed lines.
func (a *terminalAsker) colorDiff(diff string) string {
	if !a.style.color {
		return diff
	}
	var b strings.Builder
	for line := range strings.SplitAfterSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			b.WriteString(a.style.wrap("1", strings.TrimSuffix(line, "\n")) + "\n")
		case strings.HasPrefix(line, "+"):
			b.WriteString(a.style.wrap("32", strings.TrimSuffix(line, "\n")) + "\n")
		case strings.HasPrefix(line, "-"):
			b.WriteString(a.style.err(strings.TrimSuffix(line, "\n")) + "\n")
		case strings.HasPrefix(line, "@@"):
			b.WriteString(a.style.tool(strings.TrimSuffix(line, "\n")) + "\n")
		default:
			b.WriteString(line)
		}
	}
	return b.String()
}
