// Package permission decides which tool calls may run: read-only tools
// freely, others when a rule allows them or a person says yes. Deny rules
// win over everything. [Policy.Approve] is an agent.Config.Approve hook:
//
//	allow, _ := permission.ParseRule("bash(go test:*)")
//	p := &permission.Policy{Allow: []permission.Rule{allow}, Ask: askOnTerminal}
//	a, err := agent.New(agent.Config{Model: client, Tools: reg, Approve: p.Approve})
//
// # Rules
//
// A rule names a tool, and optionally what the call acts on: its command
// (bash), its URL (web_fetch) or its path (the file tools).
//
//	edit_file              every call of edit_file
//	bash(git status)       exactly the command git status
//	bash(go test:*)        go test, alone or followed by arguments
//	edit_file(docs/:*)     any path under docs/
//	web_fetch(https://go.dev/:*)
//
// A prefix rule for bash allows only a simple command: one with no ;, &,
// |, <, >, $, backquote, parentheses, braces, backslash or newline, so that
// bash(go test:*) does not allow "go test; rm -rf ~". Such a command is
// asked about instead, unless an exact rule names it. A deny rule for bash
// matches the command or any part of it between those operators. Rules
// are a guard against mistakes, not a sandbox: bash can do anything the
// user can.
package permission

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
	"github.com/go-json-experiment/json"
)

// DefaultReadOnly are the tools that run without asking when
// [Policy.ReadOnly] is nil: they change nothing.
var DefaultReadOnly = []string{"read_file", "glob", "grep", "calculator"}

// A Rule matches tool calls: every call of Tool, or only those whose
// subject (command, URL or path) is Arg, or starts with it when Prefix is
// set. Parse one with [ParseRule].
type Rule struct {
	Tool   string
	Arg    string
	Prefix bool
}

var ruleName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ParseRule parses a rule such as edit_file, bash(git status) or
// bash(go test:*).
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	name, arg, hasArg := strings.Cut(s, "(")
	var r Rule
	r.Tool = strings.TrimSpace(name)
	if !ruleName.MatchString(r.Tool) {
		return Rule{}, fmt.Errorf("invalid rule %q: it must start with a tool name, as in edit_file or bash(go test:*)", s)
	}
	if hasArg {
		if !strings.HasSuffix(arg, ")") {
			return Rule{}, fmt.Errorf("invalid rule %q: a missing closing parenthesis", s)
		}
		arg = strings.TrimSpace(strings.TrimSuffix(arg, ")"))
		if r.Arg, r.Prefix = strings.CutSuffix(arg, ":*"); r.Prefix {
			r.Arg = strings.TrimRight(r.Arg, " ")
		}
		if r.Arg == "" {
			return Rule{}, fmt.Errorf("invalid rule %q: empty parentheses; write just %s for every call", s, r.Tool)
		}
	}
	return r, nil
}

// String returns the rule as ParseRule reads it.
func (r Rule) String() string {
	switch {
	case r.Arg == "":
		return r.Tool
	case r.Prefix:
		return r.Tool + "(" + r.Arg + ":*)"
	}
	return r.Tool + "(" + r.Arg + ")"
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
// reads, saying why not. It has the signature of agent.Config.Approve.
func (p *Policy) Approve(ctx context.Context, call llm.ToolUse) error {
	readOnly := p.ReadOnly
	if readOnly == nil {
		readOnly = DefaultReadOnly
	}
	free := p.AllowAll || slices.Contains(readOnly, call.Name)
	if free && len(p.Deny) == 0 {
		return nil // no rule needs the subject, which costs a parse of the input
	}
	key, subj := subject(call)
	if key == "path" {
		subj = p.abs(subj)
	}
	for _, r := range p.Deny {
		if p.denies(r, call.Name, key, subj) {
			return fmt.Errorf("the user's rule %s forbids this call; do not try to get around it", r)
		}
	}
	if free || p.allowed(call.Name, key, subj) {
		return nil
	}
	if p.Ask == nil {
		return fmt.Errorf("%s needs the user's permission, and there is no one to ask: no terminal. "+
			"Tell the user; they can allow it with a rule such as %s", call.Name, p.alwaysRule(call.Name, key, subj))
	}
	p.askMu.Lock()
	defer p.askMu.Unlock()
	if p.allowed(call.Name, key, subj) { // an Always answered while this call waited
		return nil
	}
	always := p.alwaysRule(call.Name, key, subj)
	ans, err := p.Ask(ctx, call, always)
	switch {
	case err != nil:
		return fmt.Errorf("not asked: %w", err)
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
// ReadOnly and Ask no longer decide.
func (p *Policy) DenyOnly() *Policy {
	return &Policy{Deny: slices.Clone(p.Deny), AllowAll: true, Dir: p.Dir, Path: p.Path}
}

// alwaysRule is the rule an Always answer adds: the exact command for
// bash, since one command says little about the next, and the whole tool
// for the others.
func (p *Policy) alwaysRule(name, key, subj string) Rule {
	if key == "command" {
		return Rule{Tool: name, Arg: strings.TrimSpace(subj)}
	}
	return Rule{Tool: name}
}

func (p *Policy) allowed(name, key, subj string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rs := range [][]Rule{p.Allow, p.session} {
		for _, r := range rs {
			if r.Tool == name && p.allows(r, key, subj) {
				return true
			}
		}
	}
	return false
}

// allows reports whether allow rule r, of the call's tool, matches its
// subject.
func (p *Policy) allows(r Rule, key, subj string) bool {
	switch {
	case r.Arg == "":
		return true
	case key == "":
		return false
	case key == "command":
		cmd := strings.TrimSpace(subj)
		if !r.Prefix {
			return cmd == r.Arg
		}
		return !strings.ContainsAny(cmd, shellOperators) && commandHasPrefix(cmd, r.Arg)
	}
	return p.argMatches(r, key, subj)
}

// denies reports whether deny rule r matches the call.
func (p *Policy) denies(r Rule, name, key, subj string) bool {
	switch {
	case r.Tool != name:
		return false
	case r.Arg == "":
		return true
	case key == "":
		return false
	case key == "command":
		for _, part := range commandParts(subj) {
			if part == r.Arg || r.Prefix && commandHasPrefix(part, r.Arg) {
				return true
			}
		}
		return false
	}
	return p.argMatches(r, key, subj)
}

// argMatches matches a URL or a path against r.
func (p *Policy) argMatches(r Rule, key, subj string) bool {
	arg := r.Arg
	if key == "path" {
		dirOnly := strings.HasSuffix(arg, "/")
		arg = p.abs(arg)
		if dirOnly {
			arg = strings.TrimRight(arg, string(filepath.Separator)) + string(filepath.Separator)
		}
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

// shellOperators are the characters that chain, redirect or substitute
// commands in bash.
const shellOperators = ";&|<>$`()\\{}\n\r"

// commandHasPrefix reports whether cmd is prefix or starts with it and a
// space: go test:* matches "go test ./..." but not "go testify".
func commandHasPrefix(cmd, prefix string) bool {
	return cmd == prefix || strings.HasPrefix(cmd, prefix+" ") || strings.HasPrefix(cmd, prefix+"\t")
}

// commandParts splits a command at its operators, each part trimmed and
// without leading variable assignments (FOO=1 rm x is rm x).
func commandParts(cmd string) []string {
	var parts []string
	for part := range strings.FieldsFuncSeq(cmd, func(r rune) bool { return strings.ContainsRune(";&|()`\n\r{}", r) || r == '$' }) {
		words := strings.Fields(part)
		for len(words) > 0 && strings.Contains(words[0], "=") {
			words = words[1:]
		}
		if len(words) > 0 {
			parts = append(parts, strings.Join(words, " "))
		}
	}
	return append(parts, strings.TrimSpace(cmd))
}

// subject returns what a call acts on, and its input field: the command,
// the URL or the path. Only those fields are decoded: the input may be a
// 5 MiB file's text, which is validated but not copied.
func subject(call llm.ToolUse) (key, value string) {
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
