package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tools/shell"
	"github.com/agentloop/agentloop/toolsearch"
	"github.com/agentloop/agentloop/typed"
)

// This file holds what the REPL does with a line besides sending it: its
// slash commands, @path attachments, !command, and Shift-Tab's modes.

// modeNotes say what each permission mode means, for Shift-Tab.
var modeNotes = map[string]string{
	modeDefault:     "file edits, commands and fetches ask first",
	modeAcceptEdits: "file edits run without asking",
	modePlan:        "read-only: the model investigates and proposes a plan",
	modeBypass:      "every call runs without asking, unless a --deny rule forbids it",
}

// nextMode is Shift-Tab: it moves to the next permission mode and shows it.
// It runs on the goroutine that reads the terminal, at the prompt or at a
// permission question; the mode is read atomically by the tool gate, and
// plan mode's prompt takes effect at the next turn (syncSystem).
func (s *session) nextMode() {
	m := s.builtins.cycleMode()
	note := modeNotes[m]
	if m != modePlan && s.builtins.policy == s.builtins.policies[modePlan] {
		note += " (but this session started in plan mode, so it has only the read-only tools)"
	}
	fmt.Fprintf(s.stderr, "permission mode: %s: %s (Shift-Tab for the next)\n", m, note)
}

// system returns the system prompt: the mode's, the instructions of the
// MCP servers, then what the SessionStart hooks said.
func (s *session) system() string {
	return join(s.withInstructions(s.builtins.system(s.o)), s.startContext)
}

// syncSystem makes the agent's system prompt that of the permission mode
// now: plan mode asks for a plan.
func (s *session) syncSystem() error {
	sys := s.system()
	if sys == s.cfg.System {
		return nil
	}
	cfg := s.cfg
	cfg.System = sys
	return s.reconfigure(cfg)
}

// reconfigure makes the session's agent one of cfg.
func (s *session) reconfigure(cfg agent.Config) error {
	a, err := s.newAgent(cfg)
	if err != nil {
		return err
	}
	s.agent, s.cfg = a, cfg
	return nil
}

// newAgent returns the session's agent for cfg, with tool search and the
// schema of the final answer set up for cfg's history: /model may change
// the model, and so whether it searches and how the answer is asked for.
func (s *session) newAgent(cfg agent.Config) (*agent.Agent, error) {
	cfg, err := toolsearch.Configure(cfg, s.o.server.toolSearch)
	if err == nil && s.o.schema != nil { // the agent's only
		cfg, err = typed.Configure(cfg, s.o.schema, nil)
	}
	if err != nil {
		return nil, err
	}
	return agent.New(cfg)
}

// model is /model: without a name it shows the model, with one it switches
// to it, keeping the conversation. A model the flags given cannot work
// with is refused, and the session keeps its model.
func (s *session) model(name string) error {
	if name == "" {
		fmt.Fprintf(s.stderr, "model: %s (/model opus, sonnet, haiku or a model's id switches)\n", s.o.model)
		return nil
	}
	m, warning := resolveModel(name)
	if warning != "" {
		fmt.Fprintln(s.stderr, "agentloop: "+visible(warning))
	}
	o := *s.o
	o.model = m
	info, known := llm.LookupModel(m)
	switch err := errors.Join(checkModelFlags(&o), checkCompaction(&o)); {
	case err != nil:
		return fmt.Errorf("/model %s: %w", visible(name), err)
	case known && o.maxTokens > info.MaxOutput:
		return fmt.Errorf("/model %s: --max-tokens %d is over the %d tokens %s can write in one turn", visible(name), o.maxTokens, info.MaxOutput, m)
	case known && o.contextLimit > info.ContextWindow:
		return fmt.Errorf("/model %s: --context-limit %d is over its %d-token context window", visible(name), o.contextLimit, info.ContextWindow)
	}
	memCfg := s.memCfg
	memCfg.Model = m
	cfg := s.cfg
	cfg.History, cfg.Thinking = memory.Restore(s.cfg.History.Snapshot(), memCfg), o.thinkingConfig()
	if err := s.reconfigure(cfg); err != nil {
		return fmt.Errorf("/model %s: %w", visible(name), err)
	}
	s.memCfg, s.o.model = memCfg, m
	fmt.Fprintf(s.stderr, "(model: %s)\n", m)
	return nil
}

// compact is /compact: it compacts the conversation now, as it would be
// compacted at the context limit, aiming at 60% of its size.
func (s *session) compact(ctx context.Context) error {
	h := s.cfg.History
	if len(h.Messages()) == 0 {
		fmt.Fprintln(s.stderr, "(nothing to compact)")
		return nil
	}
	cfg := h.Config()
	// Compact as if the limit were the size now: it aims at 60% of that.
	// The count, when there is one, is the size as Compact will see it.
	now, tokens := cfg, h.Tokens()
	specs := s.cfg.Registry.Specs()
	if cfg.Counter != nil {
		n, err := cfg.Counter(ctx, llm.Request{Model: cfg.Model, MaxTokens: cfg.MaxTokens, System: s.cfg.System, Tools: specs, Messages: h.Messages()})
		if err != nil {
			return fmt.Errorf("/compact: counting the conversation's tokens: %w", err)
		}
		tokens = max(tokens, n)
	}
	now.ContextLimit = max(1, tokens)
	tmp := memory.Restore(h.Snapshot(), now)
	tmp.SetPrefix(s.cfg.System, specs)
	// A compaction that fails leaves the conversation as it was.
	c, err := tmp.Compact(ctx, s.cfg.Model)
	if err != nil {
		return fmt.Errorf("/compact: %w", err)
	}
	a := s.cfg
	a.History = memory.Restore(tmp.Snapshot(), cfg)
	if err := s.reconfigure(a); err != nil {
		return err
	}
	s.usage = s.usage.Add(c.Usage)
	if len(c.Steps) == 0 {
		fmt.Fprintf(s.stderr, "(nothing to compact: about %d tokens, too few turns to summarise)\n", c.Before)
	} else {
		fmt.Fprintf(s.stderr, "(compacted from about %d to %d tokens: %s)\n", c.Before, c.After, visible(strings.Join(c.Steps, "; ")))
	}
	return s.save()
}

// call runs a call of a built-in tool the user asked for (@path, !command)
// through the same gate as the model's calls, and returns its result. It
// returns an error when the tool is off or the call was not allowed.
func (s *session) call(ctx context.Context, name string, input any) (llm.ToolResult, error) {
	if _, ok := s.cfg.Registry.Lookup(name); !ok {
		return llm.ToolResult{}, fmt.Errorf("the %s tool is off (see --tools)", name)
	}
	in, err := json.Marshal(input)
	if err != nil {
		return llm.ToolResult{}, err
	}
	call := llm.ToolUse{ID: "toolu_user_" + strconv.FormatInt(time.Now().UnixNano(), 36), Name: name, Input: in}
	switch d, err := s.gate(ctx, agent.HookEvent{Point: agent.BeforeTool, Call: &call}); {
	case err != nil:
		return llm.ToolResult{}, fmt.Errorf("not allowed: %w", err)
	case d.Deny != "":
		return llm.ToolResult{}, fmt.Errorf("not allowed: %s", d.Deny)
	case d.Input != nil:
		call.Input = d.Input // a PreToolUse hook's rewrite
	}
	return s.cfg.Registry.Run(ctx, []llm.ToolUse{call})[0], nil
}

// bang is !command: it runs command as a bash tool call would run, asking
// first as such a call would, shows its output, and keeps both for the
// next prompt, as Claude Code's bash mode does.
func (s *session) bang(ctx context.Context, command string) error {
	if command == "" {
		return errors.New("!: give a command after the exclamation mark")
	}
	res, err := s.call(ctx, shell.Name, map[string]string{"command": command})
	if err != nil {
		return fmt.Errorf("!%s: %w", visible(command), err)
	}
	out := llm.TextOf(res.Content)
	fmt.Fprint(s.stderr, visible(out))
	if !strings.HasSuffix(out, "\n") {
		fmt.Fprintln(s.stderr)
	}
	s.context += "<bash-input>" + command + "</bash-input>\n<bash-output>" + strings.TrimRight(out, "\n") + "</bash-output>\n\n"
	return nil
}

// attach returns prompt with the file of each @path in it attached, as
// read_file reads it (through the same gate as the model's calls), each
// labelled with its path. A path that cannot be read is an error, and
// nothing is sent.
func (s *session) attach(ctx context.Context, prompt string) (string, error) {
	var docs strings.Builder
	for _, path := range atPaths(prompt) {
		res, err := s.call(ctx, "read_file", map[string]string{"path": path})
		switch {
		case err != nil:
			return "", fmt.Errorf("@%s: %w", visible(path), err)
		case res.IsError:
			return "", fmt.Errorf("@%s: %s", visible(path), visible(llm.TextOf(res.Content)))
		case slices.ContainsFunc(res.Content, func(b llm.Block) bool { _, ok := b.(llm.Text); return !ok }):
			return "", fmt.Errorf("@%s: only text files can be attached", visible(path))
		}
		fmt.Fprintf(&docs, "\n\n<document source=\"%s\">\n%s\n</document>", html.EscapeString(path), strings.TrimRight(llm.TextOf(res.Content), "\n"))
	}
	return prompt + docs.String(), nil
}

// atPaths returns the paths of the @path words of prompt: an @ at the start
// of a word, then the path up to the next blank, or within double quotes
// (@"a b.txt"). Each path is given once.
func atPaths(prompt string) []string {
	var paths []string
	for i := 0; i < len(prompt); i++ {
		if prompt[i] != '@' || (i > 0 && !unicode.IsSpace(rune(prompt[i-1]))) {
			continue
		}
		rest := prompt[i+1:]
		var p string
		if q, ok := strings.CutPrefix(rest, `"`); ok {
			p, _, _ = strings.Cut(q, `"`)
		} else {
			end := strings.IndexFunc(rest, unicode.IsSpace)
			if end < 0 {
				end = len(rest)
			}
			// Punctuation after the path is the sentence's: "see @a.go,".
			p = strings.TrimRight(rest[:end], ",;:?!")
		}
		if p != "" && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths
}

// completeAt is the line editor's Tab: it completes the path of the @path
// word at the cursor, relative to the working directory, directories with
// a / to go on.
func completeAt(line string, pos int) (head string, completions []string, tail string) {
	head, tail = line[:pos], line[pos:]
	start := strings.LastIndexFunc(head, unicode.IsSpace) + 1
	word := head[start:]
	if !strings.HasPrefix(word, "@") {
		return head, nil, tail
	}
	typed := word[1:]
	dir, base := filepath.Split(typed)
	entries, err := os.ReadDir(cmp.Or(dir, "."))
	if err != nil {
		return head, nil, tail
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		c := "@" + dir + name
		if e.IsDir() || (e.Type()&fs.ModeSymlink != 0 && isDir(filepath.Join(cmp.Or(dir, "."), name))) {
			c += "/"
		}
		completions = append(completions, c)
	}
	return head[:start], completions, tail
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// resumeSession is /resume over this directory's saved sessions: without
// an argument it lists them, newest first; with a number from that list,
// or an id (or its unique start), it goes on with that one, the current
// one staying saved.
func (s *session) resumeSession(arg string) error {
	all, err := listSessions(s.dir, false)
	if err != nil {
		return fmt.Errorf("/resume: %w", err)
	}
	if arg == "" {
		for i, si := range all {
			fmt.Fprintf(s.stderr, "%3d  %s  %s  %s\n", i+1, si.Modified.Format("2006-01-02 15:04"), si.ID, visible(shorten(strings.Join(strings.Fields(si.FirstPrompt), " "), 60)))
		}
		fmt.Fprintln(s.stderr, "(/resume N goes on with the N-th, /resume ID with a session by its id)")
		return nil
	}
	if n, err := strconv.Atoi(arg); err == nil && n >= 1 && n <= len(all) {
		arg = all[n-1].ID
	}
	if err := s.save(); err != nil {
		return err
	}
	if err := s.openSession(arg); err != nil {
		return fmt.Errorf("/resume: %w", err)
	}
	s.context = ""
	fmt.Fprintf(s.stderr, "(resumed %s: %s)\n", s.name(), plural(len(s.cfg.History.Messages()), "message", "messages"))
	return nil
}

// resume is /resume. With --session, it works over the files beside it:
// without an argument it
// lists the transcripts in the directory of --session (those /clear set
// aside among them), newest first; with a number from that list, or a
// file's path, it saves the conversation and goes on with that one.
func (s *session) resume(arg string) error {
	if s.o.session == "" {
		return s.resumeSession(arg)
	}
	files, err := listSessionFiles(filepath.Dir(s.o.session))
	if err != nil {
		return fmt.Errorf("/resume: %w", err)
	}
	if arg == "" {
		for i, f := range files {
			fmt.Fprintf(s.stderr, "%3d  %s  %s  %s\n", i+1, f.Modified.Format("2006-01-02 15:04"), visible(f.Path), visible(shorten(strings.Join(strings.Fields(f.FirstPrompt), " "), 60)))
		}
		fmt.Fprintln(s.stderr, "(/resume N goes on with the N-th, /resume FILE with another file)")
		return nil
	}
	path := arg
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(files) {
			return fmt.Errorf("/resume %d: there are %d transcripts; /resume lists them", n, len(files))
		}
		path = files[n-1].Path
	}
	if filepath.Clean(path) == filepath.Clean(s.o.session) {
		fmt.Fprintf(s.stderr, "(already in %s)\n", visible(path))
		return nil
	}
	if err := s.save(); err != nil {
		return err
	}
	old, oldUnlock := s.o.session, s.unlock
	s.o.session, s.path, s.unlock = path, path, nil
	h, err := s.loadHistory()
	if err == nil {
		cfg := s.cfg
		cfg.History = h
		err = s.reconfigure(cfg)
	}
	if err != nil {
		if s.unlock != nil {
			s.unlock()
		}
		s.o.session, s.path, s.unlock = old, old, oldUnlock
		return fmt.Errorf("/resume: %w", err)
	}
	if oldUnlock != nil {
		oldUnlock()
	}
	s.context = ""
	fmt.Fprintf(s.stderr, "(resumed %s: %s)\n", visible(path), plural(len(h.Messages()), "message", "messages"))
	return nil
}

// listSessionFiles returns the session files in dir, newest first, each
// with its first prompt: the --session files /resume lists. A subagent's
// transcript beside one (NAME.task-ID.jsonl) is not a conversation to go
// on with.
func listSessionFiles(dir string) ([]sessionInfo, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []sessionInfo
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || strings.Contains(filepath.Base(p), ".task-") {
			continue
		}
		si := sessionInfo{Path: p, Modified: fi.ModTime()}
		si.read(false)
		out = append(out, si)
	}
	slices.SortStableFunc(out, func(a, b sessionInfo) int { return b.Modified.Compare(a.Modified) })
	return out, nil
}
