package cli

import (
	"cmp"
	"flag"
	"io"
	"math"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/telemetry"
)

// minThinking is the smallest extended-thinking budget the API accepts.
const minThinking = 1024

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
	// settings is --settings, a file or JSON; settingsFiles are the
	// settings files read (settings.go), and hooks their hooks, once
	// applySettings has taken those the user agrees to.
	settings      string
	settingsFiles []*settingsFile
	hooks         hookConfig
	sessions      sessionFlags       // --continue, --resume and the sessions command (sessions.go)
	agents        string             // --agents (agents.go)
	builtin       builtinOptions     // the built-in tools' flags (builtin.go)
	json          bool               // --json, an alias settled into outputFormat
	outputFormat  string             // text, json or stream-json (output.go)
	schema        *jsonschema.Schema // --json-schema (jsonschema.go)
	allTurns      bool               // --all-turns
	verbose       bool
	version       bool
	help          bool
	telemetry     *telemetry.Telemetry // the run's one, built by run from OTEL_* (see otel.go); else exporting nothing
	provider      string               // --provider (provider.go)
	platform      *llm.Platform        // the provider's, nil for the Anthropic API: set by run
	baseURL       string               // the API's or the platform's base URL: set by run
	// warnings are said on stderr before the run: values taken, but
	// perhaps not meant.
	warnings []string

	demo   bool // the demo command
	fast   bool // demo --fast
	prompt string
	// promptGiven is whether the prompt came from the arguments.
	promptGiven bool

	durable durableOptions // the durable mode's flags (durable.go)

	server serverToolOptions // --server-tools, --tool-search… (toolsearch.go)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// parseFlags parses args. getenv supplies the defaults the environment sets.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	o := &options{telemetry: telemetry.New(telemetry.Config{})}
	fs := newFlagSet(o)
	var tools listFlag
	fs.Var(&tools, "tools", "")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	o.builtin.modeGiven = o.builtin.mode != ""
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
	if warning, err = o.server.check(o.tools, o.model); err != nil {
		return nil, err
	} else if warning != "" {
		o.warnings = append(o.warnings, warning)
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
	if err := checkOutputFormat(o); err != nil {
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
	o.sessions.root = sessionsRoot(getenv)
	if err := o.sessions.check(o.session, o.durable.temporal != ""); err != nil {
		return nil, err
	}
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
		if o.session != "" || o.sessions.resuming() || len(o.mcp) > 0 || len(o.mcpURL) > 0 || o.agents != "" {
			return nil, usageError("demo runs a fixed script offline: it takes no --session, --continue, --resume, --mcp, --mcp-url or --agents")
		}
		o.sessions.noPersist = true // nor is it a conversation to keep
		return o, nil
	}
	if len(rest) > 0 && rest[0] == "sessions" && !dashed && isCommand(rest) {
		o.sessions.list = true
		sfs := flag.NewFlagSet("agentloop sessions", flag.ContinueOnError)
		sfs.SetOutput(io.Discard)
		sfs.BoolVar(&o.sessions.all, "all", false, "")
		sfs.BoolVar(&o.help, "help", false, "")
		sfs.BoolVar(&o.help, "h", false, "")
		if err := parseArgs(sfs, rest[1:]); err != nil {
			return nil, err
		}
		if sfs.NArg() > 0 {
			return nil, usageError("sessions takes no arguments, got %q", strings.Join(sfs.Args(), " "))
		}
		return o, nil
	}
	// "agentloop help" is --help: a prompt of one word "help" is more
	// likely a user looking for the flags than a question.
	if len(rest) > 0 && rest[0] == "help" && !dashed && isCommand(rest) {
		o.help = true
		return o, nil
	}
	var warnings []string
	if o.settingsFiles, warnings, err = loadSettings(getenv, o.settings); err != nil {
		return nil, err
	}
	o.warnings = append(o.warnings, warnings...)
	if len(rest) > 0 {
		o.prompt, o.promptGiven = strings.Join(rest, " "), true
		if strings.TrimSpace(o.prompt) == "" {
			return nil, usageError("the prompt is blank: pass some text (see agentloop --help)")
		}
	}
	return o, nil
}

// isCommand reports whether words, which begin with the name of a command
// (demo, help, sessions, worker, approve, deny), are that command: the name alone, or
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
	defineProviderFlag(fs, o)
	fs.Var((*listFlag)(&o.mcp), "mcp", "")
	fs.Var((*listFlag)(&o.mcpURL), "mcp-url", "")
	o.mcpFlags.define(fs)
	defineServerToolFlags(fs, &o.server)
	fs.StringVar(&o.session, "session", "", "")
	fs.StringVar(&o.settings, "settings", "", "")
	o.sessions.define(fs)
	fs.StringVar(&o.agents, "agents", "", "")
	defineBuiltinFlags(fs, &o.builtin)
	o.project.define(fs)
	defineDurableFlags(fs, &o.durable)
	fs.BoolVar(&o.json, "json", false, "")
	fs.StringVar(&o.outputFormat, "output-format", "", "")
	fs.BoolVar(&o.allTurns, "all-turns", false, "")
	defineSchemaFlag(fs, o)
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
func checkBaseURL(raw string) error { return checkURL("ANTHROPIC_BASE_URL", raw) }

// checkURL checks raw, the base URL variable name gives, as checkBaseURL.
func checkURL(name, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("%s %q is not an http:// or https:// URL with a host, such as https://api.anthropic.com", name, raw)
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
