package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// usage is the --help text. It is written by hand, not generated, because it
// is a contract: the README copies it, and a test checks that it names every
// flag.
const usage = `Usage:
  agentloop [flags] [prompt...]
  agentloop [flags] demo [--fast]

agentloop runs an agent loop on the Anthropic Messages API: the model thinks,
calls tools, observes their results and answers.

The prompt is the arguments joined by spaces. With no arguments the prompt is
read from stdin, and when stdin is a terminal an interactive session starts:
the conversation carries across turns, /exit ends it, /clear starts afresh,
/usage shows the tokens and cost so far, Ctrl-C interrupts the current turn
and a second Ctrl-C exits. Flags go before the prompt.

The answer streams to stdout. Tool calls and their results, retries and
history compaction are reported on stderr.

Flags:
  --model NAME        the model (default $ANTHROPIC_MODEL, else %s)
  --max-tokens N      the output cap of one model turn (default %d)
  --max-iterations N  model turns per prompt before giving up (default %d)
  --max-duration D    give up on a prompt after D of wall time, such as 90s
                      or 5m (default 0: no limit)
  --max-total-tokens N
                      give up on a prompt, before its next model turn, once
                      its turns have used N tokens: input, cached or not,
                      and output, summed over the turns (default 0: no limit)
  --context-limit N   compact the history when it exceeds N tokens (default
                      the context window less --max-tokens and a margin:
                      %d with the default --max-tokens)
  --system TEXT       the system prompt
  --tools LIST        comma-separated built-in tools to offer: %s
  --thinking N        the extended-thinking budget in tokens; 0 is off
  --mcp 'CMD ARGS'    start an MCP server over stdio and offer its tools
                      (repeatable)
  --mcp-url URL       connect to an MCP server over streamable HTTP and offer
                      its tools (repeatable)
  --mcp-env NAME=VALUE
                      set a variable for the --mcp servers, or pass NAME
                      through from this environment (repeatable); they get
                      only HOME, LOGNAME, PATH, SHELL, TERM and USER besides
  --mcp-header 'NAME: VALUE'
                      send a header to every --mcp-url server (repeatable)
  --mcp-config FILE   start or connect to the servers of a Claude Code style
                      .mcp.json: {"mcpServers": {NAME: {"command", "args",
                      "env"} or {"type": "http", "url", "headers", "oauth"}}};
                      values may use ${VAR}. A .mcp.json in the working
                      directory is used only with this flag, or when you
                      agree to it on a terminal
  --mcp-timeout D     give up on an MCP server that has not completed its
                      handshake within D (default 60s; time spent
                      authorizing in the browser does not count)
  --root DIR          offer DIR to the MCP servers as a root, besides the
                      working directory (repeatable)
  --mcp-sampling      let MCP servers use the model (sampling) without
                      asking; without it, a one-prompt run on a terminal
                      asks about each request, and elsewhere (the
                      interactive session included) sampling is off
  --session FILE      a JSONL transcript: loaded if it exists, so the
                      conversation continues, and saved after every turn
  --json              write the agent's events to stdout as JSON Lines, one
                      event per line, each with a "type" field
  -v                  write a debug log to stderr (keys are never printed)
  --version           print the version and exit

Commands:
  demo                a scripted calculator session against a fake API on
                      loopback: no key, no network. It shows think, act and
                      observe, and tool input JSON arriving in fragments.
                      --fast skips the pacing meant for human eyes.

MCP servers over HTTP that require OAuth are authorized in the browser
($BROWSER, else xdg-open or open; the URL is also printed), and their tokens
are kept in the user config directory (agentloop/mcp-tokens, mode 0600).

Environment:
  ANTHROPIC_API_KEY     the API key, sent as x-api-key
  ANTHROPIC_AUTH_TOKEN  a bearer token, used when ANTHROPIC_API_KEY is unset
  ANTHROPIC_BASE_URL    the API's base URL, for any compatible server
  ANTHROPIC_MODEL       the default for --model
  NO_COLOR              when set, no colour
  BROWSER               the browser for MCP authorization

Exit status:
  0    finished, or the model refused or was cut off by --max-tokens (with
       a note on stderr)
  1    an API or runtime error after retries (stderr has the API's message
       and the request id)
  2    a usage or configuration error, such as no API key or a --session
       file that cannot be read (it is left untouched)
  3    a limit was reached: --max-iterations ("iteration limit"),
       --max-duration ("time limit") or --max-total-tokens ("token limit")
  130  interrupted by Ctrl-C
`

// builtinTools are the tools --tools can name.
var builtinTools = []string{"calculator"}

// helpText returns usage with its defaults filled in.
func helpText() string {
	return fmt.Sprintf(usage, defaultModel, defaultMaxTokens, defaultMaxIterations,
		defaultContextLimit, strings.Join(builtinTools, ", "))
}

// options are the parsed command line.
type options struct {
	model         string
	maxTokens     int
	maxIterations int
	maxDuration   time.Duration
	maxTotal      int64 // --max-total-tokens
	contextLimit  int
	system        string
	tools         []string
	thinking      int
	mcp           []string
	mcpURL        []string
	mcpFlags      // the other MCP flags, in mcp.go
	session       string
	json          bool
	verbose       bool
	version       bool
	help          bool

	demo   bool // the demo command
	fast   bool // demo --fast
	prompt string
	// promptGiven is whether the prompt came from the arguments.
	promptGiven bool
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// parseFlags parses args. getenv supplies the defaults the environment sets.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := newFlagSet(o)
	var tools string
	fs.StringVar(&tools, "tools", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, usageError("%v (see agentloop --help)", err)
	}
	if o.model == "" {
		o.model = getenv("ANTHROPIC_MODEL")
	}
	if o.model == "" {
		o.model = defaultModel
	}
	for t := range strings.SplitSeq(tools, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if !isBuiltinTool(t) {
			return nil, usageError("unknown tool %q in --tools: the built-in tools are %s", t, strings.Join(builtinTools, ", "))
		}
		o.tools = append(o.tools, t)
	}
	switch {
	case o.maxTokens < 0:
		return nil, usageError("--max-tokens must be positive")
	case o.maxIterations < 1:
		return nil, usageError("--max-iterations must be at least 1")
	case o.maxDuration < 0:
		return nil, usageError("--max-duration must be 0 (no limit) or positive")
	case o.maxTotal < 0:
		return nil, usageError("--max-total-tokens must be 0 (no limit) or positive")
	case o.contextLimit < 0:
		return nil, usageError("--context-limit must be positive")
	case o.thinking < 0:
		return nil, usageError("--thinking must be 0 (off) or a budget in tokens")
	}

	if err := o.mcpFlags.check(getenv); err != nil {
		return nil, err
	}

	rest := fs.Args()
	// "--" ends the flags, so "agentloop -- demo" asks the model about "demo".
	dashed := len(args) > len(rest) && args[len(args)-len(rest)-1] == "--"
	if len(rest) > 0 && rest[0] == "demo" && !dashed {
		o.demo = true
		dfs := flag.NewFlagSet("agentloop demo", flag.ContinueOnError)
		dfs.SetOutput(io.Discard)
		dfs.BoolVar(&o.fast, "fast", false, "")
		dfs.BoolVar(&o.help, "help", false, "")
		dfs.BoolVar(&o.help, "h", false, "")
		if err := dfs.Parse(rest[1:]); err != nil {
			return nil, usageError("demo: %v (see agentloop --help)", err)
		}
		if dfs.NArg() > 0 {
			return nil, usageError("demo takes no prompt, got %q", strings.Join(dfs.Args(), " "))
		}
		// The demo is a fixed script, offline: another conversation or
		// other servers' tools would break the script or the promise.
		if o.session != "" || len(o.mcp) > 0 || len(o.mcpURL) > 0 {
			return nil, usageError("demo runs a fixed script offline: it takes no --session, --mcp or --mcp-url")
		}
		return o, nil
	}
	if len(rest) > 0 {
		o.prompt, o.promptGiven = strings.Join(rest, " "), true
	}
	return o, nil
}

// newFlagSet defines every flag but --tools on o.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("agentloop", flag.ContinueOnError)
	// The flag package's own messages are replaced by usageError's.
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.model, "model", "", "")
	fs.IntVar(&o.maxTokens, "max-tokens", defaultMaxTokens, "")
	fs.IntVar(&o.maxIterations, "max-iterations", defaultMaxIterations, "")
	fs.DurationVar(&o.maxDuration, "max-duration", 0, "")
	fs.Int64Var(&o.maxTotal, "max-total-tokens", 0, "")
	fs.IntVar(&o.contextLimit, "context-limit", 0, "")
	fs.StringVar(&o.system, "system", "", "")
	fs.IntVar(&o.thinking, "thinking", 0, "")
	fs.Var((*listFlag)(&o.mcp), "mcp", "")
	fs.Var((*listFlag)(&o.mcpURL), "mcp-url", "")
	o.mcpFlags.define(fs)
	fs.StringVar(&o.session, "session", "", "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.verbose, "v", false, "")
	fs.BoolVar(&o.version, "version", false, "")
	fs.BoolVar(&o.help, "help", false, "")
	fs.BoolVar(&o.help, "h", false, "")
	return fs
}

func isBuiltinTool(name string) bool { return slices.Contains(builtinTools, name) }

// version is the release, set with -ldflags "-X main.version=v1.2.3". When
// unset it comes from the build info, which go install fills in.
var version = ""

func versionString() string {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	return "agentloop " + v
}
