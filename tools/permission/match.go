package permission

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

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
	v := no
	for _, argv := range c.layers {
		if len(argv) == 0 || !strings.EqualFold(path.Base(argv[0]), path.Base(rule[0])) {
			continue
		}
		v = max(v, denyArgs(rule, prefix, argv))
	}
	if v != yes && !c.known {
		return maybe
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
	"git":  {"output", "upload-pack", "receive-pack", "exec", "x", "extcmd", "ext-diff", "textconv"},
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
// command of literal words, as written.
func ruleWords(arg string) ([]string, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(arg), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(st.Redirs) > 0 || st.Negated || st.Background || st.Coprocess {
		return nil, false
	}
	var words []string
	for _, w := range call.Args {
		ws, ok := literal(w)
		if !ok {
			return nil, false
		}
		words = append(words, ws...)
	}
	return words, len(words) > 0
}
