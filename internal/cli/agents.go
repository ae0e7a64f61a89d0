package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/subagent"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/permission"
	"github.com/agentloop/agentloop/tools/skills"
	"github.com/agentloop/agentloop/toolsearch"
)

// This file is the CLI's subagents: --agents and agent files, in Claude
// Code's formats, offered to the main agent as the task tool (package
// subagent); how their events are shown; and where their transcripts go.

// An agentDef is a subagent as --agents or an agent file defines it.
type agentDef struct {
	name        string
	Description string   `json:"description" yaml:"description"`
	Prompt      string   `json:"prompt" yaml:"-"` // an agent file's body
	Tools       toolList `json:"tools" yaml:"tools"`
	Model       string   `json:"model" yaml:"model"`
	source      string   // --agents, or the file's path, for errors
}

// agentFile is an agent file's front matter: Claude Code's fields. Color
// is Claude Code's for its own display, and ignored; any other field is
// an error, lest one that restricts the agent be ignored in silence.
type agentFile struct {
	Name     string `yaml:"name"`
	agentDef `yaml:",inline"`
	Color    string `yaml:"color"`
}

// toolList is an agent's tools: nil for the main agent's. An agent file
// writes them as Claude Code does, "Read, Grep", or as a YAML list.
type toolList []string

func (l *toolList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = toolList{}
		for _, t := range strings.Split(n.Value, ",") {
			if t = strings.TrimSpace(t); t != "" {
				*l = append(*l, t)
			}
		}
		return nil
	}
	var ts []string
	err := n.Decode(&ts)
	*l = append(toolList{}, ts...)
	return err
}

var agentName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// maxAgentFileBytes caps an agent file: its body is a system prompt.
const maxAgentFileBytes = 256 << 10

// loadAgents returns the subagents of --agents, then of the agent files in
// dirs (each NAME.md), the first of a name winning. Any malformed one is a
// usage error naming where it is and what is wrong.
func loadAgents(flag string, dirs []string) ([]agentDef, error) {
	defs, err := parseAgentsFlag(flag)
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue // none, as when a directory on its path is a file
		}
		if err != nil {
			return nil, usageError("agent files: %v", err)
		}
		for _, e := range entries {
			if e.IsDir() || filepath.Ext(e.Name()) != ".md" {
				continue
			}
			d, err := readAgentFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(defs, func(o agentDef) bool { return o.name == d.name }) {
				defs = append(defs, d)
			}
		}
	}
	return defs, nil
}

// parseAgentsFlag parses --agents: Claude Code's JSON object of agents by
// name, given inline or, after @, as a file.
func parseAgentsFlag(v string) ([]agentDef, error) {
	if v == "" {
		return nil, nil
	}
	src, data := "--agents", []byte(v)
	if path, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, usageError("--agents: %v", err)
		}
		src = "--agents @" + path
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, usageError(`%s: want a JSON object of agents by name, such as {"reviewer": {"description": "…", "prompt": "…"}}: %v`, src, cmp.Or(err, errors.New("null")))
	}
	var defs []agentDef
	for _, name := range slices.Sorted(maps.Keys(m)) {
		d := agentDef{name: name, source: src}
		dec := json.NewDecoder(bytes.NewReader(m[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return nil, usageError("%s: agent %q: %v", src, name, err)
		}
		if err := d.check(); err != nil {
			return nil, err
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// readAgentFile reads an agent file: YAML front matter, then the prompt.
func readAgentFile(path string) (agentDef, error) {
	fail := func(format string, args ...any) (agentDef, error) {
		return agentDef{}, usageError("agent file %s: %s", path, fmt.Sprintf(format, args...))
	}
	// Stat first: opening a pipe could block.
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return fail("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAgentFileBytes+1))
	switch {
	case err != nil:
		return fail("%v", err)
	case len(b) > maxAgentFileBytes:
		return fail("larger than %d KiB", maxAgentFileBytes>>10)
	}
	yml, body, err := skills.SplitFrontMatter(b)
	if err != nil {
		return fail("%v", err)
	}
	var af agentFile
	dec := yaml.NewDecoder(bytes.NewReader(yml))
	dec.KnownFields(true)
	if err := dec.Decode(&af); err != nil && !errors.Is(err, io.EOF) {
		return fail("the front matter: %v", err)
	}
	d := af.agentDef
	d.name, d.Prompt, d.source = af.Name, body, "agent file "+path
	return d, d.check()
}

// check checks what every definition needs.
func (d agentDef) check() error {
	switch {
	case !agentName.MatchString(d.name):
		return usageError("%s: name %q: want 1 to 64 lower-case letters, digits, '-' or '_'", d.source, d.name)
	case strings.TrimSpace(d.Description) == "":
		return usageError("%s: agent %q: description is missing", d.source, d.name)
	case strings.TrimSpace(d.Prompt) == "":
		return usageError("%s: agent %q: the prompt is missing", d.source, d.name)
	}
	return nil
}

// addAgents offers the session's subagents, if any, to the main agent: it
// registers the task tool in reg, which holds the main agent's other tools.
func (s *session) addAgents(o *options, reg *tool.Registry, client *llm.Client, logger *slog.Logger) error {
	if o.demo {
		return nil // a fixed script, which agent files must not change
	}
	defs, err := loadAgents(o.agents, o.project.contextDirs(s.builtins.dir, "agents"))
	if err != nil || len(defs) == 0 {
		return err
	}
	// The same PreToolUse hooks and policy as the main agent's calls,
	// through a gate of its own: the main agent's counts the task tool,
	// registered below.
	hooks := []agent.Hook{s.toolGate(s.builtins.approve(reg))}
	s.transcripts = &transcripts{}
	var subs []subagent.Agent
	for _, d := range defs {
		cfg, err := s.subagentConfig(o, d, reg, client, logger)
		if err != nil {
			return err
		}
		cfg.Hooks = hooks
		logger.Info("agentloop: subagent offered", "name", d.name, "from", d.source)
		searching, err := toolsearch.Configure(cfg, o.server.toolSearch) // for its model
		if err != nil {
			return err
		}
		subs = append(subs, subagent.Agent{Name: d.name, Description: d.Description, Config: searching, Done: s.transcripts.add})
		if d.Model == "" || d.Model == "inherit" {
			// A durable run brings its own model, which this one takes.
			cfg.History = nil
		}
		s.workerAgents = append(s.workerAgents, subagent.Agent{Name: d.name, Description: d.Description, Config: cfg})
	}
	task, err := subagent.Tool(subs...)
	if err != nil {
		return usageError("%v", err)
	}
	return reg.Register(task)
}

// subagentConfig returns the agent configuration of d: its prompt as the
// system prompt, its tools (by default the main agent's), its model (by
// default the main agent's), and what it shares with the main agent
// (agentConfig).
func (s *session) subagentConfig(o *options, d agentDef, reg *tool.Registry, client *llm.Client, logger *slog.Logger) (agent.Config, error) {
	names := []string(d.Tools)
	if names == nil {
		for _, spec := range reg.Specs() {
			names = append(names, spec.Name)
		}
	}
	own := tool.NewRegistry(tool.Config{Logger: logger})
	for _, name := range names {
		if r, err := permission.ParseRule(name); err == nil && r.Arg == "" {
			name = r.Tool // Claude Code's Read is read_file
		}
		t, ok := reg.Lookup(name)
		if !ok {
			var have []string
			for _, spec := range reg.Specs() {
				have = append(have, spec.Name)
			}
			return agent.Config{}, usageError("%s: agent %q: tools: %q is not one of the main agent's tools (%s)", d.source, d.name, name, strings.Join(have, ", "))
		}
		if _, dup := own.Lookup(name); !dup {
			if err := own.Register(t); err != nil {
				return agent.Config{}, err
			}
		}
	}
	sub := *o
	if d.Model != "" && d.Model != "inherit" {
		var warning string
		if sub.model, warning = resolveModel(d.Model); warning != "" {
			fmt.Fprintf(s.stderr, "agentloop: %s: agent %q: %s\n", d.source, d.name, warning)
		}
		if info, _ := llm.LookupModel(sub.model); o.maxBudget > 0 && info.Price == (llm.Price{}) {
			return agent.Config{}, usageError("%s: agent %q: --max-budget-usd needs the price of its model, and agentloop does not know that of %s", d.source, d.name, sub.model)
		}
		if sub.model != o.model { // the flags are the main model's
			sub.thinking, sub.effort, sub.contextLimit = 0, "", 0
			if info, ok := llm.LookupModel(sub.model); ok {
				sub.maxTokens = min(sub.maxTokens, info.MaxOutput)
			}
		}
	}
	mc := s.memCfg
	mc.Model, mc.MaxTokens, mc.ContextLimit = sub.model, sub.maxTokens, sub.contextLimit
	return s.agentConfig(&sub, client, d.name, d.Prompt, own, memory.New(mc)), nil
}

// transcripts are the subagents' histories of a run, kept for the
// session's save, since a run that fails saves nothing.
type transcripts struct {
	mu   sync.Mutex
	runs map[string]*memory.History // by the task call's tool_use id
}

func (t *transcripts) add(id string, h *memory.History, _ agent.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.runs == nil {
		t.runs = map[string]*memory.History{}
	}
	t.runs[id] = h
}

// reset forgets the transcripts of a run not saved.
func (t *transcripts) reset() {
	if t != nil {
		t.mu.Lock()
		t.runs = nil
		t.mu.Unlock()
	}
}

// callIDPattern is the API's for tool_use ids: a model's id names a file
// only if it keeps to it.
var callIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// save writes each transcript beside the session file with write:
// chat.jsonl's call toolu_1 to chat.task-toolu_1.jsonl.
func (t *transcripts) save(session string, write func(path string, h *memory.History) error) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ext := filepath.Ext(session)
	for id, h := range t.runs {
		if !callIDPattern.MatchString(id) {
			continue
		}
		if err := write(strings.TrimSuffix(session, ext)+".task-"+id+ext, h); err != nil {
			return err
		}
	}
	t.runs = nil
	return nil
}

// nested shows an event of a subagent's run, indented under the task call
// it runs in: its tool calls and their results, and how it ended. Its text
// is not shown: its final text is the task call's result.
func (r *textRenderer) nested(n agent.Nested, depth int) {
	prefix := strings.Repeat("  ", depth) + r.style.dim(visible(n.Agent)+":") + " "
	switch ev := n.Event.(type) {
	case agent.Nested:
		r.nested(ev, depth+1)
		return
	case agent.ToolCall:
		r.stopSpin()
		r.line(prefix + r.style.tool("→ "+r.label(ev.ID, ev.Name)) + " " + compactJSON(ev.Input, 100))
	case agent.ToolDone:
		r.stopSpin()
		label, content := r.label(ev.ID, ev.Name), cmp.Or(shorten(ev.Content, 200), "(no text)")
		if ev.IsError {
			r.line(prefix + r.style.err("✗ "+label+" error: ") + content)
		} else {
			r.line(prefix + r.style.tool("← "+label) + " " + content)
		}
	case agent.Result:
		r.stopSpin()
		r.line(prefix + r.style.dim(fmt.Sprintf("%s after %s", ev.State, plural(ev.Iterations, "model turn", "model turns"))))
	default:
		return
	}
	r.spinLocked("running " + visible(n.Agent))
}

// marshalNested writes a subagent's event as the event's own line, marked
// with the task call's tool_use id and the agent's name, as Claude Code's
// stream-json marks a subagent's messages with parent_tool_use_id. A
// sub-run's Result is "subagent_done", lest a reader take it for the run's.
func marshalNested(n agent.Nested, priced bool) ([]byte, error) {
	if inner, ok := n.Event.(agent.Nested); ok {
		return marshalNested(inner, priced) // marked by its own parent
	}
	b, err := marshalEvent(n.Event, nil, priced, false)
	if err != nil {
		return nil, err
	}
	if _, ok := n.Event.(agent.Result); ok {
		b = append([]byte(`{"type":"subagent_done"`), bytes.TrimPrefix(b, []byte(`{"type":"done"`))...)
	}
	mark, err := json.Marshal(struct {
		ParentID string `json:"parent_tool_use_id"`
		Agent    string `json:"agent"`
	}{n.ParentID, n.Agent})
	if err != nil {
		return nil, err
	}
	return append(append(bytes.TrimSuffix(b, []byte("}")), ','), mark[1:]...), nil
}
