package permission

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
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

func (l *line) unknown() {
	l.cmds = append(l.cmds, command{})
	l.plain = false
}

// add adds the commands of src, code at nesting depth depth.
func (l *line) add(src string, depth int) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil || depth > maxDepth {
		l.unknown()
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
	layers, known, plain := unwrap(words)
	l.plain = l.plain && plain
	if !known {
		l.cmds = append(l.cmds, command{layers: layers})
		l.plain = false
		return
	}
	c := command{layers: layers, known: true}
	switch code, kind := innerCode(c.argv()); kind {
	case codeNone:
	case codeUnknown:
		c.known = false
		l.plain = false
	case codeLine:
		c.denyOnly = true
		l.add(code, depth+1)
	}
	l.cmds = append(l.cmds, c)
}

// errGlob stops expand at a glob, whose words depend on the files there.
var errGlob = errors.New("glob")

var expandConfig = &expand.Config{ReadDir2: func(string) ([]fs.DirEntry, error) { return nil, errGlob }}

// literal returns the words w becomes, if the text alone decides them:
// quotes removed, escapes resolved and braces expanded, as bash does.
func literal(w *syntax.Word) ([]string, bool) {
	if !static(w.Parts, true) {
		return nil, false
	}
	fields, err := expand.Fields(expandConfig, w)
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
	"doas": {values: "uC", flags: "n"},
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
		if !ok {
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

// innerCode returns the code argv runs as bash code of its own.
func innerCode(argv []string) (string, int) {
	if len(argv) == 0 {
		return "", codeNone
	}
	args := argv[1:]
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
	case prog == "source" || prog == ".":
		return "", codeUnknown
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
				return "", codeUnknown // a script file
			}
		}
		if c {
			return "", codeNone // bash -c with no code fails
		}
		return "", codeUnknown // reads stdin
	}
	return "", codeNone
}

// globals are, for the programs whose global options come before a
// subcommand, those that take a value written apart.
var globals = map[string][]string{
	"git": {"-C", "-c", "--config-env", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--attr-source"},
	"go":  {"-C"},
}

// split returns argv's global options and the words after them: git -C .
// push is [-C .] and [push]. ok is false if an expansion stands among
// them, where it might be the subcommand.
func split(argv []string) (opts, rest []string, ok bool) {
	takes, has := globals[path.Base(argv[0])]
	if !has {
		return nil, argv[1:], true
	}
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == dyn {
			return nil, nil, false
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		if slices.Contains(takes, a) {
			i++
			if i < len(argv) && argv[i] == dyn {
				return nil, nil, false
			}
		}
	}
	return argv[1:min(i, len(argv))], argv[min(i, len(argv)):], true
}

// A verdict is whether a deny rule matches.
type verdict int

const (
	no verdict = iota
	maybe
	yes
)

// denyCommand matches a bash deny rule's words against every layer of c,
// comparing programs by name, wherever they are: /usr/bin/git is git.
func denyCommand(rule []string, prefix bool, c command) verdict {
	if !c.known {
		return maybe
	}
	v := no
	for _, argv := range c.layers {
		if len(argv) == 0 || !strings.EqualFold(path.Base(argv[0]), path.Base(rule[0])) {
			continue
		}
		v = max(v, denyArgs(rule, prefix, argv))
	}
	return v
}

func denyArgs(rule []string, prefix bool, argv []string) verdict {
	opts, rest, ok := split(argv)
	if !ok {
		return maybe
	}
	// A configuration given on the line can make git run anything, as an
	// alias or a pager.
	for _, o := range opts {
		if o == "-c" || o == "--config-env" || strings.HasPrefix(o, "--config-env=") || strings.HasPrefix(o, "--exec-path=") {
			return maybe
		}
	}
	_, want, _ := split(rule)
	for i, w := range want {
		switch {
		case i >= len(rest):
			return no
		case rest[i] == dyn:
			return maybe
		case rest[i] != w:
			return no
		}
	}
	switch {
	case prefix || len(rest) == len(want):
		return yes
	case slices.Contains(rest[len(want):], dyn): // it may expand to nothing
		return maybe
	}
	return no
}

// risky lists, for the programs users most often allow by prefix, the
// options that run another program or write a file of the model's
// choosing, so that bash(go test:*) does not grant go test -exec or
// -o ~/.bashrc. Go's flags take one dash or two.
var risky = map[string][]string{
	"go": {"exec", "toolexec", "vettool", "o", "ldflags", "gcflags", "asmflags", "gccgoflags", "overlay", "modfile", "pkgdir",
		"coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace", "outputdir"},
	"git":  {"output", "upload-pack", "receive-pack", "exec", "ext-diff", "textconv"},
	"find": {"exec", "execdir", "ok", "okdir", "delete", "fprint", "fprint0", "fprintf", "fls"},
	"rg":   {"pre"},
	// npm exec and npm x run any package's binary; npm explore runs a
	// shell command.
	"npm": {"exec", "x", "explore"},
}

// allowsCommand reports whether a bash allow rule's words match argv, the
// program that runs. The program must be named as the rule names it (a
// ./git the model wrote is not git). An exact rule needs the same words;
// a prefix rule, the same words after the program's global options,
// and then none of its risky options, nor a global option that runs
// code (git -c) or leaves the working directory (git -C /elsewhere).
func (p *Policy) allowsCommand(rule []string, prefix bool, argv []string) bool {
	if len(argv) == 0 || argv[0] != rule[0] {
		return false
	}
	if !prefix {
		return slices.Equal(argv, rule)
	}
	opts, rest, _ := split(argv)
	_, want, _ := split(rule)
	if len(rest) < len(want) || !slices.Equal(rest[:len(want)], want) {
		return false
	}
	for i := 0; i < len(opts); i++ {
		name, val, eq := strings.Cut(opts[i], "=")
		switch name {
		case "-c", "--config-env", "--exec-path":
			return false
		case "-C", "--git-dir", "--work-tree":
			if !eq && i+1 < len(opts) {
				i++
				val = opts[i]
			}
			if !p.inside(val) {
				return false
			}
		}
	}
	prog := path.Base(rule[0])
	bad := risky[prog]
	for _, a := range rest[len(want):] {
		if prog == "npm" && slices.Contains(bad, a) {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains(bad, name) {
			return false
		}
	}
	return true
}

// inside reports whether dir, as bash would take it in the working
// directory, is in it.
func (p *Policy) inside(dir string) bool {
	if dir == "" || strings.HasPrefix(dir, "~") {
		return false
	}
	rel, err := filepath.Rel(p.abs("."), p.abs(dir))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ruleWords parses a bash rule's command into its words: one simple
// command of literal words.
func ruleWords(arg string) ([]string, bool) {
	l := parseLine(arg)
	if !l.plain || len(l.cmds) != 1 || !l.cmds[0].known || l.cmds[0].denyOnly || len(l.cmds[0].layers[0]) == 0 {
		return nil, false
	}
	return l.cmds[0].layers[0], true
}
