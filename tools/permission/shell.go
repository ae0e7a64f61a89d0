package permission

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// dyn stands for a word whose value is known only when bash runs: an
// expansion, a substitution or a glob. It may become any number of words.
// No word bash can pass contains a NUL, so no literal word is dyn.
const dyn = "\x00"

// maxDepth bounds how deep sh -c and eval nest before a command is taken
// as unknown.
const maxDepth = 8

// A line is a bash command line as the rules see it: every simple command
// in it, in every branch, loop, function, pipeline and substitution.
type line struct {
	cmds []command
	// plain reports that allow rules may decide the line: no expansion,
	// substitution, arithmetic, assignment, test clause or redirection to
	// a file anywhere in it, and no command run by sudo, xargs or env
	// with options. Otherwise only a whole-line exact rule, a rule for
	// the whole tool or a person can allow it.
	plain bool
}

// A command is one simple command. layers are its words as written, then
// as each wrapper (nice, env, timeout…) runs them: nice git push is
// [[nice git push] [git push]]. Deny rules look at every layer, allow
// rules at the last, the program that runs.
type command struct {
	layers [][]string
	// known is false when the program cannot be known from the text: an
	// expansion in its place, a script read from a file or stdin, or a
	// line bash would not parse.
	known bool
	// denyOnly marks a shell or eval whose code is checked as commands
	// of its own: allow rules need not match the shell itself.
	denyOnly bool
}

// argv returns the words of the program that runs.
func (c command) argv() []string {
	if len(c.layers) == 0 {
		return nil
	}
	return c.layers[len(c.layers)-1]
}

// parseLine parses src as bash does.
func parseLine(src string) line {
	l := line{plain: true}
	l.add(src, 0)
	return l
}

// add adds the commands of src, code at nesting depth depth.
func (l *line) add(src string, depth int) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil || depth > maxDepth {
		l.cmds = append(l.cmds, command{})
		l.plain = false
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			l.call(n, depth)
		case *syntax.Redirect:
			l.plain = l.plain && harmless(n)
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause,
			*syntax.ProcSubst, *syntax.ExtGlob, *syntax.TestClause, *syntax.DeclClause, *syntax.Assign:
			// Values bash computes, and arithmetic, which can run a
			// command hidden in a variable's value (a[$(cmd)]).
			l.plain = false
		}
		return true
	})
}

// call adds a simple command. Its substitutions are walked separately.
func (l *line) call(n *syntax.CallExpr, depth int) {
	if len(n.Args) == 0 {
		return // assignments alone, which make the line not plain
	}
	var words []string
	for _, w := range n.Args {
		ws, ok := literal(w)
		if !ok {
			ws = []string{dyn}
			l.plain = false
		}
		words = append(words, ws...)
	}
	l.command(words, depth)
}

// command adds the command words runs, and those it runs in turn.
func (l *line) command(words []string, depth int) {
	layers, known, plain := unwrap(words)
	l.plain = l.plain && plain && known
	c := command{layers: layers, known: known}
	if known {
		switch code, kind := innerCode(c.argv()); kind {
		case codeUnknown:
			c.known = false
			l.plain = false
		case codeLine:
			c.denyOnly = true
			l.add(code, depth+1)
		}
		for _, sub := range findExecs(c.argv()) {
			l.command(sub, depth)
		}
	}
	l.cmds = append(l.cmds, c)
}

// findExecs returns the commands a find runs with -exec, -execdir, -ok and
// -okdir, each file name ({}) an expansion.
func findExecs(argv []string) [][]string {
	if len(argv) == 0 || path.Base(argv[0]) != "find" {
		return nil
	}
	var cmds [][]string
	for i := 1; i < len(argv); i++ {
		if !slices.Contains([]string{"-exec", "-execdir", "-ok", "-okdir"}, argv[i]) {
			continue
		}
		var cmd []string
		for i++; i < len(argv) && argv[i] != ";" && argv[i] != "+"; i++ {
			w := argv[i]
			if strings.Contains(w, "{}") {
				w = dyn
			}
			cmd = append(cmd, w)
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// errGlob stops expand at a glob, whose words depend on the files there.
var errGlob = errors.New("glob")

// expandConfig is how literal expands a word: with ~ and ~user left as
// written, nothing looked up, and a glob an error. A new one each time,
// since expand keeps state in it.
func expandConfig() *expand.Config {
	return &expand.Config{
		Env: expand.FuncEnviron(func(name string) string {
			if user, ok := strings.CutPrefix(name, "HOME"); ok {
				return "~" + strings.TrimPrefix(user, " ")
			}
			return ""
		}),
		ReadDir2: func(string) ([]fs.DirEntry, error) { return nil, errGlob },
	}
}

// literal returns the words w becomes, if the text alone decides them:
// quotes removed and escapes resolved, as bash does. A brace expansion
// counts as not literal: {1..9999999} would take the memory of its words.
func literal(w *syntax.Word) ([]string, bool) {
	braces := *w // SplitBraces changes the word it is given
	if !static(w.Parts, true) || syntax.SplitBraces(&braces) {
		return nil, false
	}
	fields, err := expand.Fields(expandConfig(), w)
	return fields, err == nil
}

// static reports whether parts are all quoted or literal text with no
// unquoted glob characters.
func static(parts []syntax.WordPart, unquoted bool) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if unquoted && pattern.HasMeta(p.Value, 0) {
				return false
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if !static(p.Parts, false) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// harmless reports whether a redirection writes no file: input, a here
// document, a copy of a descriptor, or /dev/null.
func harmless(r *syntax.Redirect) bool {
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return true
	}
	ws, ok := literal(r.Word)
	if !ok || len(ws) != 1 {
		return false
	}
	if r.Op == syntax.DplIn || r.Op == syntax.DplOut {
		return ws[0] == "-" || strings.Trim(ws[0], "0123456789") == ""
	}
	return ws[0] == "/dev/null"
}

// A wrapper is a program that runs the command in its arguments. An
// option it does not list makes the command unknown: it might take the
// next word, or run something else (env -S, sudo -s).
type wrapper struct {
	values    string   // its short options that take a value, as -n 5 or -n5
	optional  string   // its short options whose value can only be attached, as xargs's -i[R]
	flags     string   // its short options that take none
	long      []string // its long options that take a value, as --signal KILL or --signal=KILL
	longFlags []string // its long options that take none, or only with =
	operands  int      // the operands before the command, as timeout's DURATION
	assigns   bool     // it takes NAME=VALUE operands before the command (env)
	// plain reports that the command runs as written, so that an allow
	// rule may match it: not as root, nor with words of xargs's, nor, if
	// optsChange, when an option or assignment is given (env -u, time -o).
	plain, optsChange bool
	appends           bool // it adds words of its own to the command (xargs)
}

var wrappers = map[string]wrapper{
	"builtin": {plain: true},
	"command": {flags: "pvV", plain: true},
	"exec":    {values: "a", flags: "cl", plain: true},
	"nice":    {values: "n", flags: "0123456789", long: []string{"--adjustment"}, plain: true},
	"nohup":   {plain: true},
	"timeout": {values: "sk", flags: "v", long: []string{"--signal", "--kill-after"},
		longFlags: []string{"--preserve-status", "--foreground", "--verbose"}, operands: 1, plain: true},
	"time": {values: "fo", flags: "apqvV", long: []string{"--format", "--output"},
		longFlags: []string{"--append", "--portability", "--quiet", "--verbose"}, plain: true, optsChange: true},
	"env": {values: "uC", flags: "i0v", long: []string{"--unset", "--chdir"},
		longFlags: []string{"--ignore-environment", "--null", "--debug"}, assigns: true, plain: true, optsChange: true},
	"xargs": {values: "adEILnPs", optional: "eil", flags: "0prtxo",
		long:      []string{"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"},
		longFlags: []string{"--null", "--interactive", "--no-run-if-empty", "--verbose", "--exit", "--open-tty", "--eof", "--replace", "--max-lines"},
		appends:   true},
	"sudo": {values: "ugCDhprtUT", flags: "AbEHknPS",
		long: []string{"--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user",
			"--close-from", "--command-timeout", "--chroot"},
		longFlags: []string{"--askpass", "--background", "--preserve-env", "--set-home", "--non-interactive", "--stdin"}},
	"doas":   {values: "uC", flags: "n"},
	"setsid": {flags: "cfw", plain: true},
	"stdbuf": {values: "ioe", long: []string{"--input", "--output", "--error"}, plain: true},
}

// unwrap strips the wrappers off words. known is false when an expansion
// stands where a program or a wrapper's option is, or a wrapper's option
// is one it does not list; plain is false when a wrapper changes what
// runs.
func unwrap(words []string) (layers [][]string, known, plain bool) {
	plain = true
	for {
		layers = append(layers, words)
		if len(words) == 0 {
			return layers, true, plain
		}
		if words[0] == dyn {
			return layers, false, false
		}
		w, ok := wrappers[path.Base(words[0])]
		if !ok {
			return layers, true, plain
		}
		rest, used, ok := w.skip(words[1:])
		// xargs -I R puts its input in place of R, wherever R is.
		if !ok || w.appends && slices.ContainsFunc(words[1:len(words)-len(rest)], func(a string) bool {
			return strings.HasPrefix(a, "--replace") || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "Ii")
		}) {
			return layers, false, false
		}
		plain = plain && w.plain && !(used && w.optsChange)
		if w.appends {
			if len(rest) == 0 {
				rest = []string{"echo"}
			}
			rest = append(slices.Clone(rest), dyn)
		}
		words = rest
	}
}

// skip returns args without w's options and operands, and whether there
// were any options or assignments. ok is false if it meets an expansion
// or an option w does not list.
func (w wrapper) skip(args []string) (rest []string, used, ok bool) {
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == dyn:
			return nil, false, false
		case a == "--":
			i++
			break options
		case w.assigns && isAssign(a):
		case len(a) < 2 || a[0] != '-':
			break options
		case strings.HasPrefix(a, "--"):
			name, _, eq := strings.Cut(a, "=")
			switch {
			case slices.Contains(w.long, name):
				if !eq {
					i++
				}
			case !slices.Contains(w.longFlags, name):
				return nil, false, false
			}
		default:
			for j := 1; j < len(a); j++ {
				switch c := a[j]; {
				case strings.IndexByte(w.values, c) >= 0:
					if j == len(a)-1 {
						i++ // the value is the next word
					}
					j = len(a)
				case strings.IndexByte(w.optional, c) >= 0:
					j = len(a)
				case strings.IndexByte(w.flags, c) < 0:
					return nil, false, false
				}
			}
		}
		used = true
	}
	if i+w.operands > len(args) || slices.Contains(args[:i+w.operands], dyn) {
		return nil, false, false
	}
	return args[i+w.operands:], used, true
}

// isAssign reports whether a is NAME=VALUE.
func isAssign(a string) bool {
	name, _, ok := strings.Cut(a, "=")
	return ok && syntax.ValidName(name)
}

// The kinds of code a command runs besides its own.
const (
	codeNone    = iota
	codeLine    // a command line, from sh -c, eval or trap
	codeUnknown // a script from a file or stdin, or code an expansion makes
)

// shells are the programs that take a command line with -c.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"}

// innerCode returns the code argv runs as bash code of its own. A shell
// running a script file is a program like any other, whose code rules do
// not see; but one reading stdin (… | sh, bash <<< "…", bash /dev/stdin)
// runs code that may be in the line, unseen.
func innerCode(argv []string) (string, int) {
	if len(argv) == 0 {
		return "", codeNone
	}
	args := argv[1:]
	script := func(a string) (string, int) {
		if a == dyn || strings.HasPrefix(a, "/dev/") || strings.HasPrefix(a, "/proc/") {
			return "", codeUnknown
		}
		return "", codeNone
	}
	switch prog := path.Base(argv[0]); {
	case prog == "eval":
		if slices.Contains(args, dyn) {
			return "", codeUnknown
		}
		return strings.Join(args, " "), codeLine
	case prog == "trap":
		for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
			args = args[1:]
		}
		switch {
		case len(args) < 2: // a listing, or a signal reset
			return "", codeNone
		case args[0] == dyn:
			return "", codeUnknown
		}
		return args[0], codeLine
	case prog == "alias": // runs its values where the names are used
		var code []string
		for _, a := range args {
			if _, value, ok := strings.Cut(a, "="); ok {
				code = append(code, value)
			}
		}
		return strings.Join(code, "\n"), codeLine
	case prog == "source" || prog == ".":
		if len(args) == 0 {
			return "", codeNone
		}
		return script(args[0])
	case slices.Contains(shells, prog):
		c := false
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == dyn:
				return "", codeUnknown
			case a == "--rcfile" || a == "--init-file":
				i++
			case a == "--" || a == "-":
			case strings.HasPrefix(a, "--"):
			case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
				c = c || strings.ContainsRune(a, 'c')
				if strings.ContainsAny(a, "oO") {
					i++
				}
				if strings.ContainsRune(a, 's') {
					return "", codeUnknown // reads stdin
				}
			case c:
				return a, codeLine
			default:
				return script(a)
			}
		}
		if c {
			return "", codeNone // bash -c with no code fails
		}
		return "", codeUnknown // reads stdin
	}
	return "", codeNone
}
