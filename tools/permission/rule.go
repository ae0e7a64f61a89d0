package permission

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentloop/agentloop/tools/web"
)

// This file is the rules as written: parsing and printing them. How they
// judge a call is permission.go's.

// A Rule matches tool calls: every call of Tool, or only those whose
// subject (command, URL or path) is Arg, or starts with it when Prefix is
// set. Parse one with [ParseRule].
type Rule struct {
	Tool   string
	Arg    string
	Prefix bool
}

var ruleName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// claudeNames are Claude Code's names for the built-in tools, which
// rules may use instead of ours: Bash(rm:*) is bash(rm:*).
var claudeNames = map[string]string{
	"Bash": "bash", "Read": "read_file", "Edit": "edit_file", "Write": "write_file",
	"Glob": "glob", "Grep": "grep", "WebFetch": web.Name,
}

// ClaudeCodeName returns Claude Code's name for the built-in tool name,
// such as Bash for bash, or "" if Claude Code has none: hooks written for
// Claude Code match and read tools by these names.
func ClaudeCodeName(name string) string {
	for theirs, ours := range claudeNames {
		if ours == name {
			return theirs
		}
	}
	return ""
}

// domainPrefix starts a web_fetch rule that names a host, as Claude
// Code's WebFetch(domain:go.dev) does.
const domainPrefix = "domain:"

// ParseRule parses a rule such as edit_file, bash(git status),
// bash(go test:*) or web_fetch(domain:go.dev). Claude Code's tool names
// (Bash, Read, Edit, Write, Glob, Grep, WebFetch) are read as ours. It
// checks what it can without knowing the tools: a bash prefix rule must be
// one command of literal words, a URL must be http or https (it is kept
// normalised, as [web.NormalizeURL] makes it), and a path has no glob
// but a trailing /**, read as :* (docs/** is docs/:*).
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	name, arg, hasArg := strings.Cut(s, "(")
	var r Rule
	r.Tool = strings.TrimSpace(name)
	if !ruleName.MatchString(r.Tool) {
		return Rule{}, fmt.Errorf("invalid rule %q: it must start with a tool name, as in edit_file or bash(go test:*)", s)
	}
	if ours, ok := claudeNames[r.Tool]; ok {
		r.Tool = ours
	}
	if !hasArg {
		return r, nil
	}
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
	var err error
	switch r.Tool {
	case "bash":
		if _, ok := ruleWords(r.Arg); r.Prefix && !ok {
			err = errors.New("a prefix rule must be one command of plain words, with no operator, quote or expansion, as bash(go test:*)")
		}
	case web.Name:
		err = r.parseURL()
	case "read_file", "write_file", "edit_file", "glob", "grep":
		if dir, ok := strings.CutSuffix(r.Arg, "/**"); ok && !r.Prefix {
			r.Arg, r.Prefix = dir+"/", true
		}
		switch {
		case strings.ContainsAny(r.Arg, "*?["):
			err = fmt.Errorf("paths are matched as written, not as globs: write %s(docs/:*) for every path under docs", r.Tool)
		case strings.HasPrefix(r.Arg, "~"):
			err = errors.New("write the path in full: ~ is not expanded")
		}
	}
	if err != nil {
		return Rule{}, fmt.Errorf("invalid rule %q: %w", s, err)
	}
	return r, nil
}

// parseURL checks and normalises a web_fetch rule's URL or domain.
func (r *Rule) parseURL() error {
	host, isDomain := strings.CutPrefix(r.Arg, domainPrefix)
	if isDomain {
		u, err := web.NormalizeURL("https://" + host + "/")
		if err != nil || r.Prefix || u.Host != u.Hostname() || strings.ContainsAny(host, "/?#@") {
			return fmt.Errorf("%s takes a host name alone, as web_fetch(domain:go.dev)", domainPrefix)
		}
		r.Arg = domainPrefix + u.Hostname()
		return nil
	}
	u, err := web.NormalizeURL(r.Arg)
	if err != nil {
		return fmt.Errorf("%w; write a URL such as https://go.dev/doc/:* or a host such as domain:go.dev", err)
	}
	r.Arg = u.String()
	return nil
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
