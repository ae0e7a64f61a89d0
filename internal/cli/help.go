package cli

import "fmt"

// usage is the --help text. It is written by hand, not generated, because it
// is a contract: the README copies it, and a test checks that it names every
// flag.
const usage = `Usage:
  agentloop [flags] [prompt...]
  agentloop [flags] demo [--fast]
  agentloop sessions [--all]
  agentloop help

agentloop runs an agent loop on the Anthropic Messages API: the model thinks,
calls tools, observes their results and answers.

The prompt is the arguments joined by spaces. When stdin is piped as well,
it is attached to the prompt as a document, so git diff | agentloop "review
this" sends both. With no arguments the prompt is read from stdin, and when
stdin is a terminal an interactive session starts: the conversation carries
across turns, with line editing and history (arrow keys, Ctrl-R); /help lists
its commands (/model, /compact, /cost, /resume, /clear, /exit), @path attaches
a file, !command runs one, a line ending in \ or Alt-Enter goes on to the
next, Shift-Tab cycles the permission mode, Ctrl-C interrupts the current turn
and a second Ctrl-C exits.
Flags go before the prompt. A command (demo, help, and the durable mode's
worker, approve and deny) is a first word alone or followed by its flags;
before other words it is part of the prompt, so agentloop help me fix it
asks the model. -- ends the flags: agentloop -- demo asks about "demo".

The answer streams to stdout. When stdout is not a terminal, it gets the
final answer alone, the last turn's text, written once the turn is complete;
the text of the turns that called tools goes to stderr (--all-turns writes
every turn's text to stdout). Either way the partial text of a turn that
failed and was retried, or was cut short by Ctrl-C or --max-duration, never
reaches it; on a terminal a retried turn's text is erased. A one-shot run on
a terminal ends with a line on stderr: turns, tokens, cost, files changed.
A run in which calls were denied, with no terminal to ask, ends with a line
naming the --allow rule for each; its exit status is unchanged. Tool calls and their results, retries and history compaction are
reported on stderr. On a terminal, control characters from the model, a tool
or a server are shown escaped (\x1b), and on stderr invisible and non-ASCII
blank characters too.

Flags:
  --model NAME        the model, by name or by Claude Code's aliases opus,
                      sonnet and haiku for the current ones (default
                      $ANTHROPIC_MODEL, else %s); a name agentloop
                      does not know is sent as it is, with a warning
  --provider NAME     where the model runs: anthropic (the Anthropic API, or
                      $ANTHROPIC_BASE_URL's server), bedrock, vertex or
                      foundry (default: as CLAUDE_CODE_USE_BEDROCK, _VERTEX
                      or _FOUNDRY says, else anthropic); see Environment
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
                      user's config directory), skills (.agents/skills,
                      .claude/skills, agentloop/skills in the config dir)
                      or agent files (see --agents)
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
  --permission-mode MODE
                      Claude Code's modes: default (ask), acceptEdits
                      (write_file and edit_file run without asking),
                      plan (offer only read_file, glob and grep, have MCP
                      tools ask, and ask the model for a plan rather than
                      changes) or bypassPermissions (--yes). --deny rules
                      win over every mode
  --settings FILE|JSON
                      a settings file, or its JSON, in Claude Code's
                      settings.json schema: its permissions (allow, deny,
                      ask, additionalDirectories, defaultMode) and hooks
                      (PreToolUse, PostToolUse, UserPromptSubmit, Stop,
                      PreCompact, SessionStart; see the README). Read too,
                      lowest first: agentloop/settings.json in the user's
                      config directory, then the working directory's
                      .claude/settings.json and .claude/settings.local.json,
                      whose deny and ask rules always hold, and whose other
                      rules, directories, mode and hooks are used only if
                      you agree on a terminal (remembered until the file
                      changes) or --settings names the file
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
  --tool-search MODE  auto (the default), on or off: on, MCP tools are sent
                      deferred, and the model finds the ones it needs with
                      the API's tool search, which keeps their definitions
                      out of the context; auto turns it on when every tool's
                      definition would take over a tenth of the context
                      window. Models without tool search get every tool
  --server-tools LIST tools the API runs itself, comma-separated:
                      web_search, web_fetch and code_execution (web search
                      is billed $10 per 1,000 searches, code execution by
                      container hour)
  --allowed-domains LIST
                      let web_search and web_fetch reach only these
                      domains, comma-separated (repeatable)
  --blocked-domains LIST
                      keep web_search and web_fetch off these domains,
                      comma-separated (repeatable)
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
  --continue          continue this directory's latest session
  -c                  --continue
  --resume ID         continue the session ID of this directory, given
                      whole or by a unique start (agentloop sessions
                      lists them); an unknown one is a usage error
  -r ID               --resume ID
  --no-session-persistence  save no session (--continue and --resume
                      still load one, and leave it as it was)
  --session FILE      a JSONL transcript of your own, in place of the
                      state directory's sessions: loaded if it exists, so
                      the conversation continues, and saved after every
                      turn
  --agents JSON|@FILE subagents the model may give tasks to with the task
                      tool, in Claude Code's shape: {"reviewer":
                      {"description": "…", "prompt": "…", "tools":
                      ["read_file", "grep"], "model": "haiku"}}; tools
                      default to the main agent's, model to its own
                      ("inherit"). Agent files are read too: NAME.md with
                      front matter (name, description, tools, model) and
                      the prompt as body, in .claude/agents and
                      .agents/agents, then agentloop/agents in the config
                      dir; the first agent of a name wins
  --output-format FORMAT
                      text (the default), json: one object at the end,
                      {"type":"result","subtype","is_error","result",
                      "session_id","total_cost_usd","usage","num_turns",
                      "duration_ms","stop_reason",…} as Claude Code writes
                      it, or stream-json: the agent's events as JSON Lines,
                      each with a "type"; the last is "done", or for a run
                      that failed "error", with the run's result; a
                      subagent's events carry "parent_tool_use_id" and
                      "agent", and its end is "subagent_done"
  --json              --output-format stream-json
  --all-turns         in text mode with stdout not a terminal, write every
                      turn's text to stdout, not only the final answer
  --json-schema SCHEMA
                      ask for a final answer that is JSON valid against
                      SCHEMA, a JSON schema given inline or as @FILE; an
                      invalid answer is sent back, with what is wrong, up
                      to twice. stdout then holds only the answer's JSON,
                      on one line (with --output-format json or
                      stream-json, the result's "structured_output"); with
                      no valid answer, the run fails (exit 1) and stderr
                      says why
  -v                  write a debug log to stderr (keys are never printed)
  --version           print the version and exit

Commands:
  demo                a scripted calculator session against a fake API on
                      loopback: no key, no network. It shows think, act and
                      observe, and tool input JSON arriving in fragments.
                      --fast skips the pacing meant for human eyes.
  sessions            list this directory's sessions, newest first: id,
                      time, cost and first prompt; --all lists every
                      directory's
  help                this text, as --help

Every conversation is saved, as Claude Code keeps them, one file per session
for each working directory, under $XDG_STATE_HOME/agentloop/sessions (else
~/.local/state/agentloop/sessions; on macOS ~/Library/Application Support,
on Windows %%LocalAppData%%), mode 0600; a session unchanged for 30 days is
deleted. A prompt that fails is not saved. Secrets the run knows of (the
key, the token, --secret-env and MCP secrets) are written as [REDACTED].

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
  CLAUDE_CODE_USE_BEDROCK=1  Amazon Bedrock: AWS_REGION (required),
                        AWS_PROFILE and the AWS credential chain, or
                        AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key);
                        ANTHROPIC_BEDROCK_BASE_URL, CLAUDE_CODE_SKIP_BEDROCK_AUTH=1
                        for a gateway that authenticates
  CLAUDE_CODE_USE_VERTEX=1   Vertex AI (a -tags vertex build):
                        ANTHROPIC_VERTEX_PROJECT_ID and CLOUD_ML_REGION
                        (required), Google application default credentials;
                        ANTHROPIC_VERTEX_BASE_URL, CLAUDE_CODE_SKIP_VERTEX_AUTH=1
  CLAUDE_CODE_USE_FOUNDRY=1  Microsoft Foundry: ANTHROPIC_FOUNDRY_RESOURCE or
                        ANTHROPIC_FOUNDRY_BASE_URL, ANTHROPIC_FOUNDRY_API_KEY;
                        CLAUDE_CODE_SKIP_FOUNDRY_AUTH=1
                        On a platform the Anthropic key is never sent.
  NO_COLOR              when set, no colour
  XDG_STATE_HOME        where sessions are kept (default ~/.local/state)
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
       is left untouched) or saved, a --resume ID that names no session
       here; found before any request is sent
  3    a limit was reached: --max-iterations ("iteration limit"),
       --max-duration ("time limit"), --max-total-tokens ("token limit")
       or --max-budget-usd ("budget limit")
  130  interrupted by Ctrl-C
`

// helpText returns usage with its defaults filled in.
func helpText() string {
	return fmt.Sprintf(usage, defaultModel, defaultMaxTokens, defaultMaxIterations,
		defaultContextLimit, defaultTools) + durableUsage
}
