package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unicode"

	"github.com/agentloop/agentloop/internal/childenv"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/mcptool"
	"github.com/agentloop/agentloop/tool"
)

// mcpFlags are the MCP flags beyond --mcp and --mcp-url, and what the
// MCP setup takes from the environment and the terminal.
type mcpFlags struct {
	mcpEnv      []string // --mcp-env, resolved by check to NAME=VALUE entries
	mcpHeader   []string // --mcp-header 'Name: value'
	mcpConfig   string   // --mcp-config FILE
	roots       []string // --root DIR
	mcpSampling bool     // --mcp-sampling
	mcpTimeout  time.Duration

	// Set by check from the environment.
	getenv   func(string) string
	tokenDir string // where OAuth tokens are kept; empty: not kept
	answers  string // the file of the answers about .mcp.json files; empty: not kept
	header   http.Header
	// urls are the --mcp-url URLs, expanded by check.
	urls []string
	// configServers are the servers of --mcp-config, read by check.
	configServers []mcpServer
	// secrets are the values no MCP note may show: the key, the token,
	// and what the MCP flags and files took from the environment or
	// passed in a header or variable.
	secrets []string
	// Set by attachTerminal: the terminal to ask the user on, if any, and
	// whether it may be asked during a turn.
	term           *terminal
	askDuringTurns bool
}

// define defines the flags on fs.
func (m *mcpFlags) define(fs *flag.FlagSet) {
	fs.Var((*listFlag)(&m.mcpEnv), "mcp-env", "")
	fs.Var((*listFlag)(&m.mcpHeader), "mcp-header", "")
	fs.StringVar(&m.mcpConfig, "mcp-config", "", "")
	fs.Var((*listFlag)(&m.roots), "root", "")
	fs.BoolVar(&m.mcpSampling, "mcp-sampling", false, "")
	fs.DurationVar(&m.mcpTimeout, "mcp-timeout", 60*time.Second, "")
}

// check validates the flags, the --mcp-url URLs among them, and resolves
// what they take from the environment: a bare --mcp-env NAME, and ${VAR}
// in an --mcp-env value, an --mcp-header value or an --mcp-url, so that a
// secret need not be on the command line, which every user of the machine
// can read. It reads the --mcp-config file: the user named it, so any
// fault in it is a usage error. Its errors name the flag but never show a
// value, which may be a secret.
func (m *mcpFlags) check(getenv func(string) string, urls []string) error {
	m.getenv = getenv
	x := &expander{getenv: getenv, values: &m.secrets}
	m.secrets = append(m.secrets, getenv("ANTHROPIC_API_KEY"), getenv("ANTHROPIC_AUTH_TOKEN"))
	for i, kv := range m.mcpEnv {
		name, value, hasValue := strings.Cut(kv, "=")
		if !childenv.ValidName(name) {
			return usageError("--mcp-env: environment entry %q is not NAME=VALUE: want NAME=VALUE or NAME, with a name of letters, digits and underscores", name)
		}
		if hasValue {
			value = x.expand("--mcp-env "+name, value)
		} else if value = getenv(name); value == "" {
			// Passed through as it is: a value is not a template.
			return usageError("--mcp-env %s: %s is not set in this environment, so there is nothing to pass through", name, name)
		}
		m.mcpEnv[i] = name + "=" + value
		m.secrets = append(m.secrets, value)
	}
	m.header = http.Header{}
	for _, h := range m.mcpHeader {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return usageError("--mcp-header %q: want 'Name: value'", name)
		}
		value = x.expand("--mcp-header "+name, strings.TrimSpace(value))
		m.header.Add(name, value)
		m.secrets = append(m.secrets, value)
	}
	for _, u := range urls {
		m.urls = append(m.urls, x.expand("--mcp-url "+u, u))
	}
	if x.err != nil {
		return usageError("%v", x.err)
	}
	if m.mcpTimeout <= 0 {
		return usageError("--mcp-timeout must be positive")
	}
	for _, r := range m.roots {
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			return usageError("--root %s: not a directory", r)
		}
	}
	if dir := userConfigDir(getenv); dir != "" {
		m.tokenDir = filepath.Join(dir, "agentloop", "mcp-tokens")
		m.answers = filepath.Join(dir, "agentloop", "mcp-json-answers.json")
	}
	if m.mcpConfig != "" {
		var errs []error
		m.configServers, errs = readMCPConfig(m.mcpConfig, x)
		if len(errs) > 0 {
			return usageError("--mcp-config: %w", errors.Join(errs...))
		}
	}
	return nil
}

// userConfigDir is os.UserConfigDir read through getenv, so that tests
// choose it: "" when it cannot be found.
func userConfigDir(getenv func(string) string) string {
	switch runtime.GOOS {
	case "windows":
		return getenv("AppData")
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, "Library", "Application Support")
		}
	default:
		if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
			return d
		}
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, ".config")
		}
	}
	return ""
}

// attachTerminal gives the MCP setup the terminal to ask the user on, when
// stdin and stderr are one. The REPL reads stdin on a goroutine of its own
// during turns, so with it only the question before it starts (using a
// .mcp.json) is asked; forms and sampling requests, which come during
// turns, are answered as without a terminal.
func (m *mcpFlags) attachTerminal(stdin io.Reader, stderr io.Writer, isTerminal, repl bool) {
	if isTerminal {
		m.term = &terminal{in: stdin, out: visibleWriter{stderr}} // servers' text, escaped
		m.askDuringTurns = !repl
	}
}

// mcpServers returns the servers the flags and config files name. What
// cannot be read of a .mcp.json the user did not name is noted and
// skipped.
func (s *session) mcpServers(o *options) []mcpServer {
	if o.demo {
		// The demo is a fixed script, offline: no servers, and no
		// question about a .mcp.json.
		if o.mcpConfig != "" {
			s.render.note("demo runs a fixed script offline: --mcp-config is not used")
		}
		return nil
	}
	var servers []mcpServer
	for _, line := range o.mcp {
		servers = append(servers, mcpServer{what: fmt.Sprintf("%q", line), command: line, env: o.mcpEnv})
	}
	for i, u := range o.mcpURL {
		servers = append(servers, mcpServer{what: u, url: o.urls[i], header: o.header})
	}
	if o.mcpConfig != "" {
		return append(servers, o.configServers...)
	}
	return append(servers, s.projectServers(o)...)
}

// mcpNote shows a note about the MCP servers, with every secret the
// session knows of scrubbed from it: an error may quote a URL or a line
// that holds one.
func (s *session) mcpNote(format string, args ...any) {
	s.render.note("%s", redactor{secrets: s.o.knownSecrets()}.scrub(fmt.Sprintf(format, args...)))
}

// knownSecrets returns the values that no note or log may show: the key,
// the token, the values of the --secret-env variables named in full, and
// those the MCP flags and files passed or took from the environment.
func (o *options) knownSecrets() []string {
	var keep []string
	for _, v := range o.secrets {
		if len(v) >= minSecret {
			keep = append(keep, v)
		}
	}
	for _, name := range o.builtin.secretEnv {
		if v := o.getenv(name); len(v) >= minSecret {
			keep = append(keep, v)
		}
	}
	return keep
}

// minSecret is the length from which a value is taken for a secret in
// notes: shorter ones, such as DEBUG=1, would scrub every "1".
const minSecret = 8

// connectMCP starts or connects to the MCP servers the flags and the
// config file name. A server that fails is reported and skipped: the agent
// works on with the others. model serves the servers' sampling requests.
func (s *session) connectMCP(ctx context.Context, o *options, reg *tool.Registry, model llm.Model) {
	for _, srv := range s.mcpServers(o) {
		opts := s.mcpOptions(o, srv, model)
		var (
			conn *mcptool.Server
			err  error
		)
		switch {
		case srv.url != "":
			conn, err = mcptool.ConnectURL(ctx, srv.url, opts)
		case srv.name != "":
			// A config file gives the command and its arguments apart.
			conn, err = mcptool.ConnectCommand(ctx, exec.Command(srv.command, srv.args...), opts)
		default:
			// A flag gives a command line, split as a shell would; the
			// note below names the line.
			var args []string
			if args, err = splitCommand(srv.command); err == nil {
				conn, err = mcptool.ConnectCommand(ctx, exec.Command(args[0], args[1:]...), opts)
			}
		}
		if err != nil {
			hint := ""
			if errors.Is(err, mcptool.ErrHandshakeTimeout) {
				hint = fmt.Sprintf("; if it is only slow to start, give it longer with --mcp-timeout, such as --mcp-timeout %v", 2*o.mcpTimeout)
			}
			s.mcpNote("MCP server %s is not available; continuing without its tools: %v%s", srv.what, err, hint)
			continue
		}
		s.servers = append(s.servers, conn)
		// Register registers what it can and names what it could not. A
		// server that does not list its tools must not hold the start
		// up either.
		listCtx, cancel := context.WithTimeout(ctx, o.mcpTimeout)
		err = conn.Register(listCtx, reg)
		cancel()
		if err != nil {
			s.mcpNote("MCP server %s: some of its tools are not available: %v", srv.what, err)
		}
	}
}

// instructionsCap bounds, in bytes, what one server's instructions add to
// the system prompt (about a thousand tokens), so that no server crowds the
// context.
const instructionsCap = 4096

// withInstructions returns system followed by the instructions of each
// connected server that gave any, labelled with its name, in the order the
// servers were given. The MCP spec has a server explain its tools to the
// model this way; without them the model would use the tools blind.
func (s *session) withInstructions(system string) string {
	var b strings.Builder
	b.WriteString(system)
	for _, srv := range s.servers {
		in := strings.TrimSpace(srv.Instructions())
		if in == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if len(in) > instructionsCap {
			s.log.Debug("MCP server instructions truncated", "server", srv.Name(), "bytes", len(in), "kept", instructionsCap)
		}
		fmt.Fprintf(&b, "The MCP server %s gives these instructions for its tools:\n<mcp_server_instructions server=%q>\n%s\n</mcp_server_instructions>",
			srv.Name(), srv.Name(), llm.Truncate(in, instructionsCap))
	}
	return b.String()
}

// mcpOptions returns the connection options for srv.
func (s *session) mcpOptions(o *options, srv mcpServer, model llm.Model) *mcptool.Options {
	opts := &mcptool.Options{
		Name:             srv.name,
		Logger:           s.log,
		HTTPClient:       httpClient(s.log, o.verbose),
		Env:              srv.env,
		Header:           srv.header,
		HandshakeTimeout: o.mcpTimeout,
		Roots:            o.roots,
		Progress: func(server, tool string, progress, total float64, message string) {
			if total > 0 {
				s.mcpNote("MCP %s: %s: %.0f/%.0f %s", server, tool, progress, total, message)
			} else {
				s.mcpNote("MCP %s: %s: %.0f %s", server, tool, progress, message)
			}
		},
	}
	if len(opts.Roots) == 0 {
		if wd, err := os.Getwd(); err == nil {
			opts.Roots = []string{wd}
		}
	} else if wd, err := os.Getwd(); err == nil {
		opts.Roots = append([]string{wd}, opts.Roots...)
	}
	if srv.url != "" {
		oauth := srv.oauth
		if oauth == nil {
			oauth = &mcptool.OAuth{}
		}
		oauth.OpenURL = func(ctx context.Context, u string) error { return s.openBrowser(o, srv.what, u) }
		oauth.Refused = func() {
			s.mcpNote("MCP server %s refused the saved authorization (revoked or expired); authorizing again", srv.what)
		}
		if o.tokenDir != "" {
			oauth.Store = mcptool.DirStore(o.tokenDir)
		}
		opts.OAuth = oauth
	}
	if o.askDuringTurns {
		opts.Elicit = o.term.elicit
	}
	if o.mcpSampling || o.askDuringTurns {
		opts.Sampling = &mcptool.Sampling{Model: model, ModelName: o.model, MaxTokens: o.maxTokens}
		if !o.mcpSampling {
			opts.Sampling.Approve = o.term.approveSampling
		}
	}
	return opts
}

// browserEnv are the variables a browser command gets: enough to reach
// the desktop, and none of the secrets.
var browserEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "DISPLAY", "WAYLAND_DISPLAY",
	"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "XDG_CURRENT_DESKTOP", "LANG"}

// openBrowser shows the authorization URL: printed on stderr, so a person
// can paste it, and opened with $BROWSER (a list separated by colons, each
// a command with %s for the URL or the URL appended), else xdg-open or
// open.
func (s *session) openBrowser(o *options, what, u string) error {
	s.mcpNote("MCP server %s needs your authorization. Opening a browser; if none opens, visit:\n  %s", what, u)
	var env []string
	for _, k := range browserEnv {
		if v := o.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	var commands []string
	if b := o.getenv("BROWSER"); b != "" {
		commands = strings.Split(b, ":")
	} else if runtime.GOOS == "darwin" {
		commands = []string{"open"}
	} else {
		commands = []string{"xdg-open"}
	}
	var errs []error
	for _, c := range commands {
		words := strings.Fields(c)
		if len(words) == 0 {
			continue
		}
		replaced := false
		for i, w := range words {
			if strings.Contains(w, "%s") {
				words[i], replaced = strings.ReplaceAll(w, "%s", u), true
			}
		}
		if !replaced {
			words = append(words, u)
		}
		cmd := newBrowserCommand(words, env)
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		go cmd.Wait() // reaped, not waited for: the flow waits for the redirect
		return nil
	}
	if o.term == nil {
		// Nobody is there to open the URL by hand: fail now rather than
		// wait minutes for a redirect that cannot come.
		return fmt.Errorf("no browser could be started to authorize in (set BROWSER, or run on a terminal and open the URL by hand): %w",
			errors.Join(errs...))
	}
	// The URL is on stderr; the user can open it by hand.
	s.log.Debug("no browser could be started", "err", errors.Join(errs...))
	return nil
}

// splitCommand splits line into words as a POSIX shell does: blanks
// separate words; single quotes keep everything literally; double quotes
// keep everything but let a backslash escape ", \, $ and `; elsewhere a
// backslash escapes any character.
func splitCommand(line string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool // a word has begun, possibly empty ('')
	)
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\'':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(string(rs[i+1 : j]))
			i = j
		case r == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[j+1]) {
					j++
				}
				word.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, errors.New("unterminated double quote")
			}
			i = j
		case r == '\\':
			if i+1 == len(rs) {
				return nil, errors.New("trailing backslash")
			}
			inWord = true
			i++
			word.WriteRune(rs[i])
		case unicode.IsSpace(r):
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			inWord = true
			word.WriteRune(r)
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}
