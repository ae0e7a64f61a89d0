package cli

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm" // otel hook
)

// usage is the --help text. It is written by hand, not generated, because it
// is a contract: the README copies it, and a test checks that it names every
// flag.
const usage = `Usage:
  agentloop [flags] [prompt...]
  agentloop [flags] demo [--fast]
  agentloop help

agentloop runs an agent loop on the Anthropic Messages API: the model thinks,
calls tools, observes their results and answers.

The prompt is the arguments joined by spaces. When stdin is piped as well,
it is attached to the prompt as a document, so git diff | agentloop "review
this" sends both. With no arguments the prompt is read from stdin, and when
stdin is a terminal an interactive session starts: the conversation carries
across turns, with line editing and history (arrow keys, Ctrl-R); /help lists
the commands, /exit ends it, /clear starts a new conversation (with --session,
the old transcript is kept beside the new one), /usage shows the tokens and
cost so far, Ctrl-C interrupts the current turn and a second Ctrl-C exits.
Flags go before the prompt. A command (demo, help, and the durable mode's
worker, approve and deny) is a first word alone or followed by its flags;
before other words it is part of the prompt, so agentloop help me fix it
asks the model. -- ends the flags: agentloop -- demo asks about "demo".

The answer streams to stdout. When stdout is not a terminal, each model
turn's text is written once the turn is complete, so that the partial text of
a turn that failed and was retried, or was cut short by Ctrl-C or
--max-duration, never reaches it; on a terminal a retried turn's text is
erased. Tool calls and their results, retries and history compaction are
reported on stderr. On a terminal, control characters from the model, a tool
or a server are shown escaped (\x1b), and on stderr invisible and non-ASCII
blank characters too.

Flags:
  --model NAME        the model, by name or by Claude Code's aliases opus,
                      sonnet and haiku for the current ones (default
                      $ANTHROPIC_MODEL, else %s); a name agentloop
                      does not know is sent as it is, with a warning
  --max-tokens N      the output cap of one model turn (default %d)
  --max-iterations N  model turns per prompt before giving up (default %d)
  --max-duration D    give up on a prompt after D of wall time, such as 90s
                      or 5m (default 0: no limit)
  --max-total-tokens N
                      give up on a prompt, before its next model turn, once
                      its turns have used N tokens: input, cached or not,
                      and output, summed over the turns (default 0: no limit)
  --max-budget-usd N  give up on a prompt, before its next model turn, once
                      its turns have cost N USD at the model's list price;
                      a model agentloop does not price cannot take one
                      (default 0: no limit)
  --context-limit N   compact the history when it exceeds N tokens (default
                      the context window less --max-tokens and a margin:
                      %d with the default --max-tokens)
  --system TEXT       the system prompt, replacing the default one, which
                      names the working directory, the tools and the rules
  --append-system TEXT
                      text to add to the end of the system prompt
  --tools LIST        comma-separated built-in tools to offer, by name or
                      group (default %s): files (read_file,
                      write_file, edit_file, glob, grep), shell (bash), web
                      (web_fetch), all (the three groups), none, and
                      calculator
  --add-dir DIR       let the file tools use DIR too, besides the working
                      directory, and sandboxed bash write there (repeatable)
  --sandbox MODE      workspace: the kernel confines bash to writing in the
                      working directory, each --add-dir and the temporary
                      directory, with no TCP; off: bash is unconfined
                      (default workspace where Linux has Landlock, else off)
  --sandbox-net       let sandboxed bash open and accept TCP connections
  --no-project-context  read no instructions files (AGENTS.md, else
                      CLAUDE.md, from the repository's root down to the
                      working directory, and agentloop/AGENTS.md in the
                      user's config directory) or skills (.agents/skills,
                      .claude/skills, agentloop/skills in the config dir)
  --allow RULE        run the calls RULE matches without asking (repeatable):
                      a tool, as in edit_file, or a tool and its command,
                      URL or path, exact as in 'bash(git status)' or a
                      prefix as in 'bash(go test:*)', 'edit_file(docs/:*)'
                      or 'web_fetch(https://go.dev/:*)', or a host as in
                      'web_fetch(domain:go.dev)'. Claude Code's names work
                      too: Bash, Read, Edit, Write, Glob, Grep, WebFetch and
                      mcp__server__tool; a rule naming no tool is an error.
                      A bash rule matches each command of the parsed line,
                      and allows the line only if it allows them all and
                      the line has no expansion, assignment or redirection
                      to a file. A prefix rule grants all the program can
                      do with more words, but for well-known options that
                      run a program or write a file (go test -exec, git -c,
                      find -exec, npm exec), which ask. read_file, glob,
                      grep and MCP tools run freely; write_file, edit_file,
                      bash and web_fetch ask on the terminal (yes, no, or
                      always for the session: that exact command, that
                      host, or the whole tool) and are denied without one
  --deny RULE         never run the calls RULE matches (repeatable); deny
                      rules win over --allow and --yes. A read_file rule
                      covers grep and glob, an edit_file rule write_file. A
                      bash rule matches a command however it is spelt:
                      quoted, behind env, nice, sudo, xargs or sh -c, after
                      git's -C, by path; a command whose program the text
                      cannot show (git $x, … | sh) asks, and is denied
                      without a terminal. Rules match text, not what a
                      script or program does: they are not a sandbox
  --yes               run every tool call without asking, except those a
                      --deny rule matches
  --secret-env NAME   leave the variable NAME, or every variable a pattern
                      such as 'AWS_*' matches, out of bash's environment
                      (repeatable); ANTHROPIC_* is always left out
  --effort LEVEL      how hard the model thinks and works: low, medium,
                      high, xhigh or max, as far as the model takes them
                      (default: the model's own)
  --thinking N        the extended-thinking budget in tokens, at least 1024
                      and below --max-tokens, for the older models that take
                      one (Claude 4.6 and earlier); 0 is off. Current
                      models think adaptively: use --effort
  --compaction MODE   how the conversation is kept under the context limit:
                      server (the API clears old tool results and compacts
                      on the server), client (agentloop summarises), or off;
                      the default is server on models that support it
  --mcp 'CMD ARGS'    start an MCP server over stdio and offer its tools
                      (repeatable)
  --mcp-url URL       connect to an MCP server over streamable HTTP and offer
                      its tools (repeatable)
  --mcp-env NAME=VALUE
                      set a variable for the --mcp servers, or pass NAME
                      through from this environment (repeatable); they get
                      only HOME, LOGNAME, PATH, SHELL, TERM and USER besides
  --mcp-header 'NAME: VALUE'
                      send a header to every --mcp-url server (repeatable).
                      Warning: every user of the machine can read a
                      command line (ps). Give a secret to --mcp-url,
                      --mcp-env or --mcp-header as '${VAR}', in single
                      quotes, and it is taken from this environment:
                      --mcp-header 'Authorization: Bearer ${GITHUB_TOKEN}'
  --mcp-config FILE   start or connect to the servers of a Claude Code style
                      .mcp.json: {"mcpServers": {NAME: {"command", "args",
                      "env"} or {"type": "http", "url", "headers", "oauth"}}};
                      values may use ${VAR} and ${VAR:-default}. A fault in
                      the file is a usage error. A .mcp.json in the working
                      directory is used only with this flag, or when you
                      agree on a terminal to the servers it lists (asked
                      again when it changes), and may not use ${VAR} for
                      ANTHROPIC_* or a --secret-env variable. Each tool of
                      a server is offered as mcp__SERVER__TOOL
  --mcp-timeout D     give up on an MCP server that has not completed its
                      handshake within D, and stop it at once; then D
                      again for listing its tools (default 60s; time spent
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
                      event per line, each with a "type" field; the last is
                      "done", or for a run that failed "error", with the
                      run's result
  -v                  write a debug log to stderr (keys are never printed)
  --version           print the version and exit

Commands:
  demo                a scripted calculator session against a fake API on
                      loopback: no key, no network. It shows think, act and
                      observe, and tool input JSON arriving in fragments.
                      --fast skips the pacing meant for human eyes.
  help                this text, as --help

MCP servers over HTTP that require OAuth are authorized in the browser
($BROWSER, else xdg-open or open; the URL is also printed), and their tokens
are kept in the user config directory (agentloop/mcp-tokens, mode 0600).
The instructions an MCP server gives for its tools are added to the end of
the system prompt, after --append-system, labelled with the server's name,
at most 4 KB each.

Environment:
  ANTHROPIC_API_KEY     the API key, sent as x-api-key
  ANTHROPIC_AUTH_TOKEN  a bearer token, used when ANTHROPIC_API_KEY is unset
  ANTHROPIC_BASE_URL    the API's base URL, for any compatible server
  ANTHROPIC_MODEL       the default for --model
  NO_COLOR              when set, no colour
  OTEL_EXPORTER_OTLP_ENDPOINT  export traces and metrics over OTLP; the other
                        OTEL_* variables apply, and
                        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
                        records prompts and answers in them
  BROWSER               the browser for MCP authorization

Exit status:
  0    finished, or the model refused or was cut off by --max-tokens (with
       a note on stderr)
  1    an API or runtime error after retries (stderr has the API's message
       and the request id); the --session file is left as it was
  2    a usage or configuration error, naming the flag or variable: a
       blank prompt, no API key, a --session file that cannot be read (it
       is left untouched) or saved; found before any request is sent
  3    a limit was reached: --max-iterations ("iteration limit"),
       --max-duration ("time limit"), --max-total-tokens ("token limit")
       or --max-budget-usd ("budget limit")
  130  interrupted by Ctrl-C
`

// minThinking is the smallest extended-thinking budget the API accepts.
const minThinking = 1024

// helpText returns usage with its defaults filled in.
func helpText() string {
	return fmt.Sprintf(usage, defaultModel, defaultMaxTokens, defaultMaxIterations,
		defaultContextLimit, defaultTools) + durableUsage
}

// options are the parsed command line.
type options struct {
	model         string
	maxTokens     int
	maxIterations int
	maxDuration   time.Duration
	maxTotal      int64   // --max-total-tokens
	maxBudget     float64 // --max-budget-usd
	contextLimit  int
	system        string
	tools         []string
	thinking      int
	effort        string
	compaction    string // --compaction (compaction.go)
	mcp           []string
	mcpURL        []string
	mcpFlags                     // the other MCP flags, in mcp.go
	project       contextOptions // AGENTS.md, CLAUDE.md and skills (context.go)
	session       string
	builtin       builtinOptions // the built-in tools' flags (builtin.go)
	json          bool
	verbose       bool
	version       bool
	help          bool
	telemetry     llm.Telemetry // otel hook: set by run from OTEL_* (see otel.go)
	// warnings are said on stderr before the run: values taken, but
	// perhaps not meant.
	warnings []string

	demo   bool // the demo command
	fast   bool // demo --fast
	prompt string
	// promptGiven is whether the prompt came from the arguments.
	promptGiven bool

	durable durableOptions // the durable mode's flags (durable.go)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// parseFlags parses args. getenv supplies the defaults the environment sets.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := newFlagSet(o)
	var tools listFlag
	fs.Var(&tools, "tools", "")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	if err := o.builtin.check(); err != nil {
		return nil, err
	}
	if err := checkSecretEnv(o.builtin.secretEnv); err != nil {
		return nil, err
	}
	var warning string
	o.model, warning = resolveModel(cmp.Or(o.model, getenv("ANTHROPIC_MODEL"), defaultModel))
	if warning != "" {
		o.warnings = append(o.warnings, warning)
	}
	var err error
	if len(tools) == 0 {
		tools = listFlag{defaultTools}
	}
	if o.tools, err = parseTools(strings.Join(tools, ",")); err != nil {
		return nil, err
	}
	if err := checkModelFlags(o); err != nil {
		return nil, err
	}
	if err := checkThinking(o.thinking, o.maxTokens); err != nil {
		return nil, err
	}
	if err := checkCompaction(o); err != nil {
		return nil, err
	}
	switch info, known := llm.LookupModel(o.model); {
	case o.maxTokens < 1:
		return nil, usageError("--max-tokens must be at least 1")
	case known && o.maxTokens > info.MaxOutput:
		// The API would answer 400, after the request was paid for in time.
		return nil, usageError("--max-tokens %d is over the %d tokens %s can write in one turn", o.maxTokens, info.MaxOutput, o.model)
	case o.maxIterations < 1:
		return nil, usageError("--max-iterations must be at least 1")
	case o.maxDuration < 0:
		return nil, usageError("--max-duration must be 0 (no limit) or positive")
	case o.maxTotal < 0:
		return nil, usageError("--max-total-tokens must be 0 (no limit) or positive")
	case !(o.maxBudget >= 0) || math.IsInf(o.maxBudget, 1):
		return nil, usageError("--max-budget-usd must be 0 (no limit) or a positive amount, not %v", o.maxBudget)
	case o.maxBudget > 0 && info.Price == (llm.Price{}):
		return nil, usageError("--max-budget-usd needs the price of the model, and agentloop does not know that of %s", o.model)
	case o.contextLimit < 0:
		return nil, usageError("--context-limit must be positive")
	case known && o.contextLimit > info.ContextWindow:
		// The API would refuse every request before compaction began.
		return nil, usageError("--context-limit %d is over the %d-token context window of %s", o.contextLimit, info.ContextWindow, o.model)
	case o.thinking < 0:
		return nil, usageError("--thinking must be 0 (off) or a budget in tokens")
	}

	o.project.configDir = userConfigDir(getenv)
	if err := o.mcpFlags.check(getenv, o.mcpURL); err != nil {
		return nil, err
	}

	rest := fs.Args()
	// "--" ends the flags, so "agentloop -- demo" asks the model about "demo".
	dashed := len(args) > len(rest) && args[len(args)-len(rest)-1] == "--"
	if len(rest) > 0 && rest[0] == "demo" && !dashed && isCommand(rest) {
		o.demo = true
		dfs := flag.NewFlagSet("agentloop demo", flag.ContinueOnError)
		dfs.SetOutput(io.Discard)
		dfs.BoolVar(&o.fast, "fast", false, "")
		dfs.BoolVar(&o.help, "help", false, "")
		dfs.BoolVar(&o.help, "h", false, "")
		if err := parseArgs(dfs, rest[1:]); err != nil {
			return nil, err
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
	// "agentloop help" is --help: a prompt of one word "help" is more
	// likely a user looking for the flags than a question.
	if len(rest) > 0 && rest[0] == "help" && !dashed && isCommand(rest) {
		o.help = true
		return o, nil
	}
	if len(rest) > 0 {
		o.prompt, o.promptGiven = strings.Join(rest, " "), true
		if strings.TrimSpace(o.prompt) == "" {
			return nil, usageError("the prompt is blank: pass some text (see agentloop --help)")
		}
	}
	return o, nil
}

// isCommand reports whether words, which begin with the name of a command
// (demo, help, worker, approve, deny), are that command: the name alone, or
// followed by a flag. Followed by anything else it is the first word of a
// prompt, so that "agentloop deny that the bug exists" asks the model, as
// "agentloop help me fix it" does.
func isCommand(words []string) bool {
	return len(words) == 1 || len(words[1]) > 1 && words[1][0] == '-'
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
	fs.Float64Var(&o.maxBudget, "max-budget-usd", 0, "")
	fs.IntVar(&o.contextLimit, "context-limit", 0, "")
	fs.StringVar(&o.system, "system", "", "")
	fs.IntVar(&o.thinking, "thinking", 0, "")
	fs.StringVar(&o.effort, "effort", "", "")
	defineCompactionFlag(fs, o)
	fs.Var((*listFlag)(&o.mcp), "mcp", "")
	fs.Var((*listFlag)(&o.mcpURL), "mcp-url", "")
	o.mcpFlags.define(fs)
	fs.StringVar(&o.session, "session", "", "")
	defineBuiltinFlags(fs, &o.builtin)
	o.project.define(fs)
	defineDurableFlags(fs, &o.durable)
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.verbose, "v", false, "")
	fs.BoolVar(&o.version, "version", false, "")
	fs.BoolVar(&o.help, "help", false, "")
	fs.BoolVar(&o.help, "h", false, "")
	return fs
}

// checkThinking checks a --thinking budget against the API's rules, in
// the flags' terms: at least minThinking, and below --max-tokens, which
// counts thinking and answer together. 0 (off) and negative values, which
// parseFlags reports, pass.
func checkThinking(thinking, maxTokens int) error {
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	switch {
	case thinking <= 0:
		return nil
	case thinking < minThinking:
		return usageError("--thinking %d is below the API's minimum budget of %d tokens (0 turns thinking off)",
			thinking, minThinking)
	case thinking >= maxTokens:
		return usageError("--thinking %d must be below --max-tokens %d, which caps thinking and answer together",
			thinking, maxTokens)
	}
	return nil
}

// checkModelFlags checks --thinking and --effort against what the model
// takes (llm.LookupModel), so that neither becomes a 400 from the API.
func checkModelFlags(o *options) error {
	info, _ := llm.LookupModel(o.model)
	levels := strings.Join(info.Efforts, ", ")
	if o.thinking > 0 && !slices.Contains(info.Thinking, "enabled") {
		hint := "; it thinks adaptively: set how hard with --effort (" + levels + ")"
		if levels == "" {
			hint = ""
		}
		return usageError("--thinking %d: %s takes no thinking budget%s", o.thinking, o.model, hint)
	}
	if o.effort != "" && !slices.Contains(info.Efforts, o.effort) {
		if levels == "" {
			return usageError("--effort %s: %s takes no effort level", o.effort, o.model)
		}
		return usageError("--effort %s: %s takes %s", o.effort, o.model, levels)
	}
	return nil
}

// thinkingConfig returns the thinking the flags ask for: --thinking's
// budget; else, on a model whose thinking is always on, adaptive thinking
// with its text displayed, since those models write their notes between
// tool calls in thinking blocks, empty by default; else the model's
// default.
func (o *options) thinkingConfig() *llm.ThinkingConfig {
	if o.thinking > 0 {
		return &llm.ThinkingConfig{BudgetTokens: o.thinking}
	}
	if info, known := llm.LookupModel(o.model); known && !slices.Contains(info.Thinking, "disabled") { // thinking cannot be off
		return &llm.ThinkingConfig{Adaptive: true, Display: "summarized"}
	}
	return nil
}

// checkBaseURL checks ANTHROPIC_BASE_URL, which the SDK would otherwise
// take as a path ("localhost:8080" has no scheme) and fail on at the first
// request.
func checkBaseURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("ANTHROPIC_BASE_URL %q is not an http:// or https:// URL with a host, such as https://api.anthropic.com", raw)
	}
	return nil
}

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
