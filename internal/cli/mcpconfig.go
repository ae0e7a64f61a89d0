package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentloop/agentloop/internal/childenv"
	"github.com/agentloop/agentloop/mcptool"
	"github.com/agentloop/agentloop/tools/shell"
)

// An mcpServer is one server to start or connect to, from the flags or a
// config file.
type mcpServer struct {
	name string // the config file's key; empty for a flag
	// what names the server in notes: its name, command line or URL, as
	// the user wrote it, before any ${VAR} was expanded.
	what    string
	command string   // stdio: a flag's command line, or a file's command
	args    []string // stdio: a file's arguments
	env     []string // stdio: NAME=VALUE
	url     string   // http
	header  http.Header
	oauth   *mcptool.OAuth // http: the file's oauth settings, nil for none
	// shown is a file's entry as the consent question shows it: the
	// command and its arguments, or the URL, as written; vars are the
	// variables it uses.
	shown string
	vars  []string
}

// mcpConfigKeys are the keys a server entry may have, Claude Code's
// .mcp.json shape plus oauth.
var mcpConfigKeys = []string{"type", "command", "args", "env", "url", "headers", "oauth"}

// oauthConfigKeys are the keys of a server's oauth object.
var oauthConfigKeys = []string{"clientId", "clientSecret", "callbackPort", "clientMetadataUrl", "grant", "privateKey", "privateKeyFile", "idp"}

// readMCPConfig reads the servers of the .mcp.json file at path. See
// parseMCPConfig.
func readMCPConfig(path string, x *expander) ([]mcpServer, []error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, []error{fmt.Errorf("MCP config %s: %w", path, err)}
	}
	return parseMCPConfig(path, b, x)
}

// parseMCPConfig reads the servers of b, an .mcp.json file read from
// path. It returns the servers it could read and an error for each part it
// could not, naming the file and the key, so that one bad entry costs only
// that server. Values may use ${VAR} and ${VAR:-default}, expanded by x,
// so that secrets stay out of the file; the errors name variables but
// never show a value.
func parseMCPConfig(path string, b []byte, x *expander) ([]mcpServer, []error) {
	var file map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, []error{fmt.Errorf("MCP config %s is not valid JSON: %v", path, jsonErrorAt(b, err))}
	}
	raw, ok := file["mcpServers"]
	if !ok {
		if _, vscode := file["servers"]; vscode {
			return nil, []error{fmt.Errorf(`MCP config %s: no "mcpServers" object, but a "servers" one, as VS Code's mcp.json has: rename it "mcpServers", the key of Claude Code's .mcp.json`, path)}
		}
		return nil, []error{fmt.Errorf("MCP config %s: no \"mcpServers\" object", path)}
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, []error{fmt.Errorf("MCP config %s: \"mcpServers\" is not an object of servers", path)}
	}
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	var (
		servers []mcpServer
		errs    []error
	)
	for _, name := range names {
		srv, err := parseMCPServer(name, entries[name], x)
		if err != nil {
			errs = append(errs, fmt.Errorf("MCP config %s: mcpServers.%s: %w", path, name, err))
			continue
		}
		servers = append(servers, srv)
	}
	return servers, errs
}

// projectServers returns the servers of the working directory's .mcp.json,
// if the user agrees to them. A repository's file would start processes,
// and send what it likes where it likes, just by being there: it may not
// use the key or a --secret-env variable, and it is used only when the
// user agrees, on a terminal, after seeing each server's command or URL
// and the variables it uses. The answer is remembered for the file's
// content at its path, so that the question comes again only when the file
// changes: asked on every run, people learn to say yes.
func (s *session) projectServers(o *options) []mcpServer {
	const path = ".mcp.json"
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.mcpNote("./%s cannot be read, and is not used: %v", path, err)
		return nil
	}
	x := &expander{getenv: o.getenv, values: &o.secrets, refuse: o.secretName}
	servers, errs := parseMCPConfig(path, b, x)
	if len(servers) == 0 {
		for _, err := range errs {
			s.mcpNote("%v; not used", err)
		}
		return nil
	}
	key := answerKey(path, b)
	answers := readAnswers(o.answers)
	yes, known := answers[key]
	if !known && o.term == nil {
		s.mcpNote("./%s is not used: pass --mcp-config %s to start its MCP servers", path, path)
		return nil
	}
	if yes || !known {
		// Before the question, so that it is read knowing them: a file
		// that reaches for the key shows it here.
		for _, err := range errs {
			s.mcpNote("%v; not used", err)
		}
	}
	switch {
	case known && yes:
		s.mcpNote("./%s: starting its MCP servers, as you agreed to this version of it before", path)
	case known:
		s.mcpNote("./%s is not used, as you answered for this version of it before: pass --mcp-config %s to start its MCP servers", path, path)
	default:
		var q strings.Builder
		fmt.Fprintf(&q, "This directory has a %s that would start these MCP servers:\n", path)
		for _, srv := range servers {
			fmt.Fprintf(&q, "  %s: %s", srv.what, srv.shown)
			if len(srv.vars) > 0 {
				fmt.Fprintf(&q, " (using $%s)", strings.Join(srv.vars, ", $"))
			}
			q.WriteString("\n")
		}
		q.WriteString("Start them? Your answer holds until the file changes.")
		yes = o.term.confirm(q.String())
		answers[key] = yes
		if err := writeAnswers(o.answers, answers); err != nil {
			s.mcpNote("your answer about ./%s is not remembered: %v", path, err)
		}
		if !yes {
			s.mcpNote("./%s is not used: pass --mcp-config %s to start its MCP servers", path, path)
		}
	}
	if !yes {
		return nil
	}
	return servers
}

// secretName reports whether the variable name holds a secret that a
// file the user did not name must not expand: ANTHROPIC_* and the
// --secret-env variables, the ones bash does not get either.
func (o *options) secretName(name string) bool {
	return len(shell.Environ([]string{name + "="}, o.builtin.secretEnv)) == 0
}

// jsonErrorAt adds the line of a syntax error to err.
func jsonErrorAt(b []byte, err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		line := bytes.Count(b[:se.Offset], []byte("\n")) + 1
		return fmt.Sprintf("line %d: %v", line, err)
	}
	return err.Error()
}

// parseMCPServer reads one server entry.
func parseMCPServer(name string, raw json.RawMessage, x *expander) (mcpServer, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return mcpServer{}, fmt.Errorf("not an object")
	}
	for k := range fields {
		if !slices.Contains(mcpConfigKeys, k) {
			return mcpServer{}, fmt.Errorf("unknown key %q (the keys are %s)", k, strings.Join(mcpConfigKeys, ", "))
		}
	}
	var e serverEntry
	for k, v := range fields {
		if err := json.Unmarshal(v, e.field(k)); err != nil {
			return mcpServer{}, fmt.Errorf("%s: %v", k, typeError(err))
		}
	}
	x.start()
	srv := mcpServer{name: name, what: fmt.Sprintf("%q", name)}
	typ := e.Type
	if typ == "" {
		typ = "stdio"
		if e.Command == "" && e.URL != "" {
			typ = "http"
		}
	}
	switch typ {
	case "stdio":
		if e.Command == "" {
			return mcpServer{}, fmt.Errorf("command: missing, and a stdio server needs one")
		}
		if e.URL != "" || e.Headers != nil || e.OAuth != nil {
			return mcpServer{}, fmt.Errorf("url, headers and oauth are for http servers; this one has a command")
		}
		srv.command = x.expand("command", e.Command)
		srv.shown = shownLine(append([]string{e.Command}, e.Args...))
		for i, a := range e.Args {
			srv.args = append(srv.args, x.expand(fmt.Sprintf("args[%d]", i), a))
		}
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !childenv.ValidName(k) {
				return mcpServer{}, fmt.Errorf("env: %q is not a variable name", k)
			}
			srv.env = append(srv.env, k+"="+x.expand("env."+k, e.Env[k]))
		}
	case "http":
		if e.URL == "" {
			return mcpServer{}, fmt.Errorf("url: missing, and an http server needs one")
		}
		if e.Command != "" || e.Args != nil || e.Env != nil {
			return mcpServer{}, fmt.Errorf("command, args and env are for stdio servers; this one has a url")
		}
		srv.url = x.expand("url", e.URL)
		srv.shown = shownLine([]string{e.URL})
		srv.header = http.Header{}
		for k, v := range e.Headers {
			if !validHeaderName(k) {
				return mcpServer{}, fmt.Errorf("headers: %q is not a header name", k)
			}
			srv.header.Set(k, x.expand("headers."+k, v))
		}
		if e.OAuth != nil {
			o, err := parseOAuth(e.OAuth, x)
			if err != nil {
				return mcpServer{}, fmt.Errorf("oauth: %w", err)
			}
			srv.oauth = o
		}
	case "sse":
		return mcpServer{}, fmt.Errorf("type: the legacy SSE transport is not supported; use \"http\" (streamable HTTP)")
	default:
		return mcpServer{}, fmt.Errorf("type: %q is not \"stdio\" or \"http\"", typ)
	}
	if x.err != nil {
		return mcpServer{}, x.err
	}
	srv.vars = x.used
	return srv, nil
}

// serverEntry is a server entry of the file, as JSON has it.
type serverEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	OAuth   json.RawMessage   `json:"oauth"`
}

// field returns the field that key k decodes into, so that a type error
// is reported with its key.
func (e *serverEntry) field(k string) any {
	switch k {
	case "type":
		return &e.Type
	case "command":
		return &e.Command
	case "args":
		return &e.Args
	case "env":
		return &e.Env
	case "url":
		return &e.URL
	case "headers":
		return &e.Headers
	default:
		return &e.OAuth
	}
}

// typeError words a decoding error without the value, which may be a
// secret.
func typeError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("want %s, not a JSON %s", te.Type, te.Value)
	}
	return "not the right type"
}

// parseOAuth reads a server's oauth object.
func parseOAuth(raw json.RawMessage, x *expander) (*mcptool.OAuth, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("not an object")
	}
	for k := range fields {
		if !slices.Contains(oauthConfigKeys, k) {
			return nil, fmt.Errorf("unknown key %q (the keys are %s)", k, strings.Join(oauthConfigKeys, ", "))
		}
	}
	var c struct {
		ClientID          string `json:"clientId"`
		ClientSecret      string `json:"clientSecret"`
		CallbackPort      int    `json:"callbackPort"`
		ClientMetadataURL string `json:"clientMetadataUrl"`
		Grant             string `json:"grant"`
		PrivateKey        string `json:"privateKey"`
		PrivateKeyFile    string `json:"privateKeyFile"`
		IdP               *struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"tokenEndpoint"`
			ClientID      string `json:"clientId"`
			ClientSecret  string `json:"clientSecret"`
			IDToken       string `json:"idToken"`
		} `json:"idp"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%v", typeError(err))
	}
	if c.CallbackPort < 0 || c.CallbackPort > 65535 {
		return nil, fmt.Errorf("callbackPort: %d is not a port", c.CallbackPort)
	}
	o := &mcptool.OAuth{
		ClientID:          x.expand("oauth.clientId", c.ClientID),
		ClientSecret:      x.expand("oauth.clientSecret", c.ClientSecret),
		RedirectPort:      c.CallbackPort,
		ClientMetadataURL: x.expand("oauth.clientMetadataUrl", c.ClientMetadataURL),
		Grant:             c.Grant,
		PrivateKeyPEM:     x.expand("oauth.privateKey", c.PrivateKey),
	}
	if c.PrivateKeyFile != "" {
		b, err := os.ReadFile(x.expand("oauth.privateKeyFile", c.PrivateKeyFile))
		if err != nil {
			return nil, fmt.Errorf("privateKeyFile: %w", err)
		}
		o.PrivateKeyPEM = string(b)
	}
	if c.IdP != nil {
		o.IdP = &mcptool.IdP{
			Issuer:        x.expand("oauth.idp.issuer", c.IdP.Issuer),
			TokenEndpoint: x.expand("oauth.idp.tokenEndpoint", c.IdP.TokenEndpoint),
			ClientID:      x.expand("oauth.idp.clientId", c.IdP.ClientID),
			ClientSecret:  x.expand("oauth.idp.clientSecret", c.IdP.ClientSecret),
			IDToken:       x.expand("oauth.idp.idToken", c.IdP.IDToken),
		}
	}
	return o, nil
}

// expander expands ${VAR} and ${VAR:-default} as Claude Code does, and
// keeps the first error: a variable that is not set and has no default,
// or one it must not expand.
type expander struct {
	getenv func(string) string
	// refuse, when set, names the variables that must not be expanded
	// here: the secrets a file the user did not choose must not get.
	refuse func(name string) bool
	// values collects every value expanded, for the notes to scrub.
	values *[]string

	err  error
	used []string // the variables referred to since start
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// start begins a new entry: no error, no variables used.
func (x *expander) start() { x.err, x.used = nil, nil }

func (x *expander) expand(key, s string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if !slices.Contains(x.used, m[1]) {
			x.used = append(x.used, m[1])
		}
		if x.refuse != nil && x.refuse(m[1]) {
			if x.err == nil {
				x.err = fmt.Errorf("%s: ${%s} is a secret, and is expanded only in a file you name with --mcp-config", key, m[1])
			}
			return ""
		}
		if v := x.getenv(m[1]); v != "" {
			if x.values != nil {
				*x.values = append(*x.values, v)
			}
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		if x.err == nil {
			x.err = fmt.Errorf("%s: ${%s} is not set, and has no default (write ${%s:-default} for one)", key, m[1], m[1])
		}
		return ""
	})
}

// shownLine returns words as one line for a question, each quoted as Go
// would when it holds a blank, a quote or a character that is not
// printable, so that a file cannot hide a word or reach the terminal
// with an escape sequence.
func shownLine(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w
		if w == "" || strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' || r == '\'' }) {
			out[i] = strconv.Quote(w)
		}
	}
	return strings.Join(out, " ")
}

// validHeaderName reports whether name is an HTTP header name (a token).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
