package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/files"
	"github.com/agentloop/agentloop/tools/permission"
)

// The --permission-mode values, Claude Code's.
const (
	modeDefault     = "default"           // ask about each mutating call
	modeAcceptEdits = "acceptEdits"       // run file edits without asking
	modePlan        = "plan"              // offer only read-only tools, and ask for a plan
	modeBypass      = "bypassPermissions" // --yes
)

// planPrompt tells the model what plan mode wants of it.
const planPrompt = "Plan mode is on: the user wants a plan, not changes. Investigate with the read-only tools you " +
	"have, change nothing, and end with a concrete, numbered plan of the changes you would make and how you would " +
	"check them, for the user to approve."

// permissionModes are the modes in the order Shift-Tab cycles them, as in
// Claude Code.
var permissionModes = []string{modeDefault, modeAcceptEdits, modePlan, modeBypass}

// checkMode checks --permission-mode. --yes is bypassPermissions. Each
// mode's rules are registerBuiltins' (see builtins.policies); plan mode's
// tools and prompt are registerBuiltins' and system's.
func (b *builtinOptions) checkMode() error {
	switch b.mode {
	case "", modeDefault, modeAcceptEdits:
		if b.mode == "" {
			b.mode = modeDefault
		}
		if b.yes {
			b.mode = modeBypass
		}
	case modeBypass:
		b.yes = true
	case modePlan:
		if b.yes {
			return usageError("--permission-mode plan changes nothing, and --yes would let every call run: give one of them")
		}
	default:
		return usageError("--permission-mode %q: want default, acceptEdits, plan or bypassPermissions", b.mode)
	}
	return nil
}

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
	d := a.describe(call)
	// The spinner must not draw over the question while it waits.
	a.render.pause()
	io.WriteString(a.w, a.style.warn(d.heading)+"\n"+d.body)
	if d.body != "" {
		// A long command or diff scrolls its start away: what matters is
		// said again right above the question.
		io.WriteString(a.w, a.style.wrap("1", d.summary)+"\n")
	}
	scope := alwaysScope(always)
	for {
		// Plain text: a line editor measures its prompt, and colour codes would
		// throw that off.
		line, err := a.next(ctx, fmt.Sprintf("Allow? [y/N] (or a: always allow %s, for the rest of this session) ", scope))
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

// A question is what the terminal shows of a call before asking about it:
// a heading, the body (the command, the diff) in full, and a summary of
// one line (the tool, its target, the size of what it runs or writes).
type question struct{ heading, body, summary string }

// summaryTarget is how many runes of a call's target the summary shows.
const summaryTarget = 60

// describe returns the question for call. Everything the model wrote is
// shown visible (see visible), so that no control sequence can redraw the
// question into something else and nothing can hide in it.
func (a *terminalAsker) describe(call llm.ToolUse) question {
	var in struct {
		Command   string `json:"command"`
		URL       string `json:"url"`
		Path      string `json:"path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	json.Unmarshal(call.Input, &in)
	name := visible(call.Name)
	path := shorten(in.Path, summaryTarget)
	switch {
	case call.Name == "bash":
		return question{
			heading: fmt.Sprintf("bash wants to run a command in %s:", visible(a.dir)),
			body:    "  $ " + strings.ReplaceAll(visible(in.Command), "\n", "\n    ") + "\n",
			summary: "bash: " + shorten(firstLine(in.Command), summaryTarget) + " (" + size(in.Command) + ")",
		}
	case call.Name == "web_fetch":
		u, idn := asciiHost(in.URL)
		h := "web_fetch wants to fetch " + visible(u)
		if idn {
			h += " (an internationalized host, shown in punycode)"
		}
		return question{heading: h}
	case a.ws != nil:
		diff, ok, err := a.ws.Preview(call.Name, call.Input)
		switch {
		case ok && err != nil:
			return question{heading: fmt.Sprintf("%s wants to change %s, but it will fail: %s", name, visible(in.Path), visible(err.Error()))}
		case ok && call.Name == "edit_file":
			return question{
				heading: fmt.Sprintf("%s wants to change %s:", name, visible(in.Path)),
				body:    a.colorDiff(visible(diff)),
				summary: fmt.Sprintf("%s: %s (%s in place of %s)", name, path, size(in.NewString), plural(countLines(in.OldString), "line", "lines")),
			}
		case ok:
			return question{
				heading: fmt.Sprintf("%s wants to change %s:", name, visible(in.Path)),
				body:    a.colorDiff(visible(diff)),
				summary: fmt.Sprintf("%s: %s (%s)", name, path, size(in.Content)),
			}
		}
	}
	return question{heading: fmt.Sprintf("%s wants to run with input %s", name, compactJSON(call.Input, 500))}
}

// firstLine returns the first line of s that is not blank.
func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// countLines returns how many lines s has, a last one without a newline
// included.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// size says how long s is, in lines and bytes.
func size(s string) string {
	return plural(countLines(s), "line", "lines") + ", " + plural(len(s), "byte", "bytes")
}

// asciiHost returns raw with its host in punycode, as the connection will
// name it, and whether the host was not ASCII: one that mixes in another
// script (a Cyrillic о for a Latin o) then shows as what it is. A URL that
// does not parse is returned as it is.
func asciiHost(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, false
	}
	host := u.Hostname()
	if !strings.ContainsFunc(host, func(r rune) bool { return r >= utf8.RuneSelf }) {
		return raw, false
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		// Not a valid name: the fetch will fail, but the question must
		// not show it as one it resembles.
		ascii, _ = idna.Punycode.ToASCII(host)
	}
	if port := u.Port(); port != "" {
		ascii = net.JoinHostPort(ascii, port)
	}
	u.Host = ascii
	return u.String(), true
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
