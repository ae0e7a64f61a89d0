// Package permission decides which tool calls may run: read-only tools
// freely, others when a rule allows them or a person says yes. Deny rules
// win over everything. [Policy.Approve] is the check of an agent hook:
//
//	allow, _ := permission.ParseRule("bash(go test:*)")
//	p := &permission.Policy{Allow: []permission.Rule{allow}, Ask: askOnTerminal}
//	a, err := agent.New(agent.Config{Model: client, Tools: reg, Hooks: []agent.Hook{agent.ToolGate(p.Approve)}})
//
// # Rules
//
// A rule names a tool, and optionally what the call acts on: its command
// (bash), its URL (web_fetch) or its path (the file tools). Claude Code's
// names (Bash, Read, Edit, Write, Glob, Grep, WebFetch) may stand for ours.
//
//	edit_file              every call of edit_file
//	bash(git status)       exactly the command git status
//	bash(go test:*)        go test, alone or followed by any words
//	edit_file(docs/:*)     any path under docs/ (also written docs/**)
//	web_fetch(https://go.dev/:*)
//	web_fetch(domain:go.dev)
//
// A read_file deny rule covers grep and glob too, and an edit_file deny
// rule write_file, so that a path kept from one is not reached with the
// other; an allow rule allows its own tool alone. Confirm rules, Claude
// Code's ask rules, match as deny rules do, and have the call asked about.
// URLs are compared as [web.NormalizeURL] writes them, paths made absolute
// (see [Policy.Path]).
//
// # Commands
//
// A bash command line is parsed as bash parses it (mvdan.cc/sh), and rules
// match the words of each simple command in it, with quotes and escapes
// removed, in every list, pipeline, branch, loop, function and
// substitution, in the code of sh -c, bash -c, eval, trap and alias, and
// in the commands find -exec runs. A deny rule matches a command whichever
// way it is spelt: behind the wrappers command, env, exec, nice, nohup,
// setsid, stdbuf, time, timeout, xargs, sudo and doas; after git's and
// go's global options (git -C . push); and by the program's name
// (/usr/bin/git is git). Where the text cannot say what
// runs (an expansion as a program or subcommand, git $sub, code a shell
// reads from stdin, a line bash would not parse, git -c, which can alias
// anything), the call is asked about, and denied with nobody to ask. A
// rule may name a wrapper or a shell itself: bash(sudo:*), bash(bash:*).
//
// An allow rule allows a line only if it allows every command in it
// (each may be allowed by another rule), the program is named as the rule
// names it (./go is not go), and the line has no expansion, substitution,
// variable assignment, arithmetic or redirection to a file, so that
// bash(go test:*) does not allow "go test; rm -rf ~", "go test $(…)" or
// "GOFLAGS=-toolexec=x go test". A prefix rule grants everything the
// program can do with any further words, except well-known options that run
// another program or write a file of the caller's choosing, which are asked
// about: go's -exec, -toolexec, -vettool, -o and the profile outputs,
// git's -c, --exec-path and -C outside the working directory, find's
// -exec and -delete, npm exec, rg --pre. Rules match text: they do not see
// into scripts, Makefiles, test code or other interpreters (python -c), so
// a rule is a guard against mistakes, not a sandbox.
package permission

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/web"
	"github.com/go-json-experiment/json"
)

// DefaultReadOnly are the tools that run without asking when
// [Policy.ReadOnly] is nil: they change nothing.
var DefaultReadOnly = []string{"read_file", "glob", "grep", "calculator"}

// covered are the tools that a deny rule of another tool covers too, as
// Claude Code's Read and Edit rules do: a file a rule keeps from
// read_file must not be read with grep.
var covered = map[string][]string{
	"read_file": {"grep", "glob"},
	"edit_file": {"write_file"},
}

// covers reports whether a deny rule of tool applies to a call of name.
func covers(tool, name string) bool {
	return tool == name || slices.Contains(covered[tool], name)
}

// An Answer is a person's reply to a request for permission.
type Answer int

// The answers.
const (
	// No denies the call.
	No Answer = iota
	// Yes allows the call.
	Yes
	// Always allows the call and every later one the same rule matches,
	// for the rest of the Policy's life.
	Always
)

// An UnaskedError denies a call that needs a person's permission when
// there is no one to ask ([Policy.Ask] is nil). Rule is the rule that
// would allow it, such as bash(go test ./...), so that a caller can tell
// the user how to allow it next time.
type UnaskedError struct {
	Tool string
	Rule Rule
}

func (e *UnaskedError) Error() string {
	return fmt.Sprintf("%s needs the user's permission, and there is no one to ask: no terminal. "+
		"Tell the user; they can allow it with a rule such as %s", e.Tool, e.Rule)
}

// An AskFunc asks a person whether call may run. always is the rule that
// the answer Always adds, so that the question can say what it means. It
// may block; a non-nil error (ctx ending) denies the call.
type AskFunc func(ctx context.Context, call llm.ToolUse, always Rule) (Answer, error)

// A Policy approves or denies tool calls. The zero value asks nobody and
// allows only [DefaultReadOnly] tools. A Policy is safe for concurrent
// use; set its fields before the first call.
type Policy struct {
	// Allow lists the rules of calls that run without asking.
	Allow []Rule
	// Deny lists the rules of calls that never run. They win over Allow,
	// ReadOnly and AllowAll.
	Deny []Rule
	// Confirm lists the rules of calls a person is asked about each time,
	// whatever Allow, ReadOnly, AllowAll or an earlier Always answer
	// would let run: Claude Code's ask rules. An Always answer to such a
	// call counts as Yes. Deny wins over Confirm.
	Confirm []Rule
	// ReadOnly names the tools that run without asking. Default nil:
	// [DefaultReadOnly]. An empty, non-nil slice makes every tool ask.
	ReadOnly []string
	// AllowAll allows every call that no deny rule matches (--yes).
	AllowAll bool
	// Ask asks a person about a call no rule decides. Default nil: nobody
	// can be asked, and such calls are denied.
	Ask AskFunc
	// Dir resolves relative paths, in calls and in rules, so that
	// edit_file(docs/:*) matches both docs/a.md and its absolute path.
	// Default "": paths are compared as written.
	Dir string
	// Path, when set, turns each path of a call or a rule into the form
	// they are compared in, instead of Dir. files.Workspace.Resolve
	// resolves symbolic links too, so that a link cannot dodge a deny
	// rule. Default nil.
	Path func(string) string

	askMu   sync.Mutex // one question at a time
	mu      sync.Mutex
	session []Rule // added by Always answers
}

// Approve returns nil if call may run, or an error, which the model
// reads, saying why not. agent.ToolGate makes it a hook.
func (p *Policy) Approve(ctx context.Context, call llm.ToolUse) error {
	readOnly := p.ReadOnly
	if readOnly == nil {
		readOnly = DefaultReadOnly
	}
	free := p.AllowAll || slices.Contains(readOnly, call.Name)
	if free && len(p.Deny) == 0 && len(p.Confirm) == 0 {
		return nil // no rule needs the subject, which costs a parse of the input
	}
	s := p.subject(call)
	var doubt *Rule // a deny rule that may match
	for _, r := range p.Deny {
		switch p.denies(r, s) {
		case yes:
			return fmt.Errorf("the user's rule %s forbids this call; do not try to get around it", r)
		case maybe:
			doubt = &r
		}
	}
	// A call an ask rule may match is asked about, in doubt too.
	var confirm *Rule
	for _, r := range p.Confirm {
		if p.denies(r, s) != no {
			confirm = &r
			break
		}
	}
	// A command that may be one a deny rule forbids is for a person to
	// judge, unless they already allowed this very text.
	always := p.alwaysRule(s)
	switch {
	case confirm != nil && p.Ask == nil:
		return fmt.Errorf("the user's rule %s asks the user about this call, and there is no one to ask: no terminal. "+
			"Tell the user what you wanted to do", confirm)
	case confirm != nil: // asked below, whatever would allow it
	case doubt != nil && p.allowedBy(p.sessionRules(), s, true):
		return nil
	case doubt == nil && (free || p.allowed(s)):
		return nil
	case p.Ask == nil && doubt != nil:
		return fmt.Errorf("this command cannot be checked against the user's rule %s: an expansion, code a "+
			"shell reads from stdin or an option such as git -c stands where a program or its subcommand would "+
			"be. Write the command out plainly, or tell the user what you want to run", doubt)
	case p.Ask == nil:
		return &UnaskedError{Tool: call.Name, Rule: always}
	}
	p.askMu.Lock()
	defer p.askMu.Unlock()
	if confirm == nil && p.allowedBy(p.sessionRules(), s, doubt != nil) { // an Always answered while this call waited
		return nil
	}
	ans, err := p.Ask(ctx, call, always)
	switch {
	case err != nil:
		return fmt.Errorf("not asked: %w", err)
	case ans == Always && confirm != nil:
		return nil
	case ans == Always:
		p.mu.Lock()
		p.session = append(p.session, always)
		p.mu.Unlock()
		return nil
	case ans == Yes:
		return nil
	}
	return errors.New("the user said no to this call. Do not retry it; ask the user what to do instead, or take another approach")
}

// DenyOnly returns a policy that holds calls to p's deny rules alone, with
// p's way of resolving paths: it allows every call that no Deny rule
// matches, and asks nobody. It suits a call a person has approved
// elsewhere, such as in a durable run's workflow, which p's Allow,
// ReadOnly and Ask no longer decide; so a command that a deny rule only
// may match, which p would ask about, is taken as approved.
func (p *Policy) DenyOnly() *Policy {
	approved := func(context.Context, llm.ToolUse, Rule) (Answer, error) { return Yes, nil }
	return &Policy{Deny: slices.Clone(p.Deny), AllowAll: true, Ask: approved, Dir: p.Dir, Path: p.Path}
}

// A subject is what a call acts on, parsed for the rules.
type subject struct {
	name string   // the tool
	key  string   // the input field: command, url or path; "" for none
	raw  string   // its value
	line line     // a command, parsed
	url  *url.URL // a URL, normalised; nil if it is not a valid one
	path string   // a path, in the form rules are compared in
}

func (p *Policy) subject(call llm.ToolUse) subject {
	s := subject{name: call.Name}
	s.key, s.raw = inputSubject(call)
	switch s.key {
	case "command":
		s.line = parseLine(s.raw)
	case "url":
		s.url, _ = web.NormalizeURL(s.raw)
	case "path":
		s.path = p.abs(s.raw)
	}
	return s
}

// alwaysRule is the rule an Always answer adds: the exact command for
// bash, since one command says little about the next; the host for a
// URL; and the whole tool for the others.
func (p *Policy) alwaysRule(s subject) Rule {
	switch {
	case s.key == "command":
		return Rule{Tool: s.name, Arg: strings.TrimSpace(s.raw)}
	case s.key == "url" && s.url != nil:
		return Rule{Tool: s.name, Arg: domainPrefix + s.url.Hostname()}
	case s.key == "url":
		return Rule{Tool: s.name, Arg: s.raw}
	}
	return Rule{Tool: s.name}
}

func (p *Policy) sessionRules() []Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.session)
}

func (p *Policy) allowed(s subject) bool {
	return p.allowedBy(append(p.sessionRules(), p.Allow...), s, false)
}

// allowedBy reports whether rules allow the call, all of them together:
// each command of a line may be allowed by another rule. exactOnly limits
// a command to a rule that names its whole text.
func (p *Policy) allowedBy(rules []Rule, s subject, exactOnly bool) bool {
	rules = slices.DeleteFunc(slices.Clone(rules), func(r Rule) bool { return r.Tool != s.name })
	for _, r := range rules {
		switch {
		case r.Arg == "" && !exactOnly:
			return true
		case s.key == "command" && !r.Prefix && r.Arg == strings.TrimSpace(s.raw):
			return true
		case s.key != "command" && !exactOnly && p.argMatches(r, s):
			return true
		}
	}
	if s.key != "command" || exactOnly || !s.line.plain || len(s.line.cmds) == 0 {
		return false
	}
	for _, c := range s.line.cmds {
		if !c.denyOnly && !slices.ContainsFunc(rules, func(r Rule) bool {
			words, ok := ruleWords(r.Arg)
			return ok && p.allowsCommand(words, r.Prefix, c.argv())
		}) {
			return false
		}
	}
	return true
}

// denies reports whether deny rule r matches the call. A bash rule is
// matched against every command in the line; one that cannot be known
// (an expansion as its program, code read from stdin) may match any.
func (p *Policy) denies(r Rule, s subject) verdict {
	switch {
	case !covers(r.Tool, s.name):
		return no
	case r.Arg == "":
		return yes
	case s.key == "command":
		if !r.Prefix && r.Arg == strings.TrimSpace(s.raw) {
			return yes
		}
		words, ok := ruleWords(r.Arg)
		if !ok {
			return no // a chain, which an exact rule matches only whole
		}
		v := no
		for _, c := range s.line.cmds {
			v = max(v, denyCommand(words, r.Prefix, c))
		}
		return v
	case p.argMatches(r, s):
		return yes
	}
	return no
}

// argMatches matches a URL or a path against r.
func (p *Policy) argMatches(r Rule, s subject) bool {
	arg, subj := r.Arg, ""
	switch s.key {
	case "url":
		if host, ok := strings.CutPrefix(arg, domainPrefix); ok {
			return s.url != nil && s.url.Hostname() == host
		}
		subj = s.raw // not an http URL: an MCP tool's, compared as written
		if s.url != nil {
			subj = s.url.String()
			if u, err := web.NormalizeURL(arg); err == nil {
				arg = u.String()
			}
		}
	case "path":
		dirOnly := strings.HasSuffix(arg, "/")
		arg = p.abs(arg)
		if dirOnly {
			arg = strings.TrimRight(arg, string(filepath.Separator))
			if r.Prefix && s.path == arg {
				return true // the directory itself, as grep and glob search it
			}
			arg += string(filepath.Separator)
		}
		subj = s.path
	default:
		return false
	}
	if r.Prefix {
		return strings.HasPrefix(subj, arg)
	}
	return subj == arg
}

// abs returns path in the form rules are compared in.
func (p *Policy) abs(path string) string {
	if p.Path != nil {
		return p.Path(path)
	}
	if p.Dir == "" {
		return path
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.Dir, path)
	}
	return filepath.Clean(path)
}

// inputSubject returns what a call acts on, and its input field: the
// command, the URL or the path. Only those fields are decoded: the input
// may be a 5 MiB file's text, which is validated but not copied.
func inputSubject(call llm.ToolUse) (key, value string) {
	var in struct {
		Command any `json:"command"`
		URL     any `json:"url"`
		Path    any `json:"path"`
	}
	if json.Unmarshal(call.Input, &in, apirules.Lenient) != nil {
		return "", ""
	}
	for _, f := range []struct {
		key string
		v   any
	}{{"command", in.Command}, {"url", in.URL}, {"path", in.Path}} {
		if s, ok := f.v.(string); ok {
			return f.key, s
		}
	}
	return "", ""
}
