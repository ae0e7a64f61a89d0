package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/telemetry"
)

// delegate is a main turn that gives prompt to the reviewer.
func delegate(prompt string) at.Reply {
	in, _ := json.Marshal(map[string]string{"description": "review", "prompt": prompt, "subagent_type": "reviewer"})
	return at.NewStream().ToolUse("toolu_task1", "task", string(in)).Stop("tool_use")
}

const reviewerJSON = `{"reviewer": {"description": "Reviews code.", "prompt": "You review code.", "tools": ["Read", "grep"], "model": "haiku"}}`

// TestAgentsRun delegates a review with --agents and --json: the
// subagent's request is its own (prompt, tools, model, the task as its only
// message), its events come marked with the task call's id, the main model
// reads its answer, and --session keeps its transcript beside the main
// one, which a resumed session does not send.
func TestAgentsRun(t *testing.T) {
	t.Chdir(t.TempDir())
	h := newHarness(t,
		delegate("Review main.go."),
		at.NewStream().ToolUse("toolu_sub1", "grep", `{"pattern":"TODO"}`).Stop("tool_use"),
		text("LGTM."),
		text("The reviewer says LGTM."),
		text("Nothing else."))
	session := filepath.Join(t.TempDir(), "chat.jsonl")
	r := h.run(strings.NewReader(""), "--agents", reviewerJSON, "--session", session, "--json", "review main.go")
	r.check(t, 0)

	reqs := h.srv.Requests()
	sub, err := reqs[1].Params()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{"model": sub.Model, "system": systemOf(t, reqs[1]), "tools": toolNames(t, reqs[1]),
		"messages": len(sub.Messages), "prompt": sub.Messages[0].Text}
	want := map[string]any{"model": "claude-haiku-5-5", "system": "You review code.", "tools": []string{"read_file", "grep"},
		"messages": 1, "prompt": "Review main.go."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the subagent's request (-want +got):\n%s", diff)
	}
	if names := toolNames(t, reqs[0]); !strings.Contains(strings.Join(names, ","), "task") {
		t.Errorf("the main agent's tools %v lack task", names)
	}
	if res := reqs[3].ToolResults(); len(res) != 1 || res[0].IsError || res[0].Content[0].Text != "LGTM." {
		t.Errorf("the main model's tool result = %+v, want the reviewer's answer", res)
	}

	// The JSON lines: the subagent's are marked, and its end is not "done".
	var marked []string
	for line := range strings.Lines(r.stdout) {
		var ev struct{ Type, ParentToolUseID, Agent string }
		var raw map[string]any
		json.Unmarshal([]byte(line), &raw)
		if p, ok := raw["parent_tool_use_id"].(string); ok {
			ev.Type, ev.ParentToolUseID, ev.Agent = raw["type"].(string), p, raw["agent"].(string)
			if ev.Type == "tool_call" || ev.Type == "tool_done" || ev.Type == "subagent_done" {
				marked = append(marked, ev.Type+" "+ev.ParentToolUseID+" "+ev.Agent)
			}
		}
	}
	wantMarked := []string{"tool_call toolu_task1 reviewer", "tool_done toolu_task1 reviewer", "subagent_done toolu_task1 reviewer"}
	if diff := cmp.Diff(wantMarked, marked); diff != "" {
		t.Errorf("marked JSON lines (-want +got):\n%s\nstdout:\n%s", diff, r.stdout)
	}
	if n := strings.Count(r.stdout, `{"type":"done"`); n != 1 {
		t.Errorf("%d done lines, want 1", n)
	}

	// The transcripts: the subagent's beside the main one.
	b, err := os.ReadFile(filepath.Join(filepath.Dir(session), "chat.task-toolu_task1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Review main.go.") || !strings.Contains(string(b), "TODO") {
		t.Errorf("the subagent's transcript lacks its run:\n%s", b)
	}
	main, _ := os.ReadFile(session)
	if strings.Contains(string(main), "TODO") {
		t.Errorf("the main transcript holds the subagent's run:\n%s", main)
	}
	h.run(strings.NewReader(""), "--agents", reviewerJSON, "--session", session, "anything else?").check(t, 0)
	if body := string(h.srv.Requests()[4].Body); strings.Contains(body, "TODO") || !strings.Contains(body, "LGTM.") {
		t.Errorf("the resumed request sends the subagent's run, or lacks its answer:\n%s", body)
	}
}

// TestAgentsShown: the human renderer indents a subagent's calls under
// the task call.
func TestAgentsShown(t *testing.T) {
	t.Chdir(t.TempDir())
	h := newHarness(t,
		delegate("Review."),
		at.NewStream().ToolUse("toolu_sub1", "grep", `{"pattern":"TODO"}`).Stop("tool_use"),
		text("LGTM."),
		text("Done."))
	r := h.run(strings.NewReader(""), "--agents", reviewerJSON, "review")
	r.check(t, 0)
	for _, want := range []string{"→ task#1", "\n  reviewer: → grep#2 {\"pattern\":\"TODO\"}\n", "\n  reviewer: ← grep#2 ", "\n  reviewer: finished after 2 model turns\n", "← task#1 LGTM."} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestAgentFiles reads agent files, Claude Code's format, and checks what
// is wrong with a bad one: exit 2, naming the file and the field.
func TestAgentFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		args    []string
		wantErr string // "" for a good file
	}{
		{"good", "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep\nmodel: inherit\ncolor: blue\n---\nYou review code.\n", nil, ""},
		{"all tools", "---\nname: reviewer\ndescription: Reviews code.\ntools:\n---\nYou review code.\n", []string{"--tools", "calculator"}, ""},
		{"a link to a folder", "", nil, "not a regular file"},
		{"unknown field", "---\nname: reviewer\ndescription: d\ndisallowedTools: Bash\n---\nbody\n", nil, "field disallowedTools not found"},
		{"no name", "---\ndescription: d\n---\nbody\n", nil, `name "": want 1 to 64 lower-case letters`},
		{"no description", "---\nname: reviewer\n---\nbody\n", nil, `agent "reviewer": description is missing`},
		{"no prompt", "---\nname: reviewer\ndescription: d\n---\n", nil, `agent "reviewer": the prompt is missing`},
		{"no front matter", "You review code.\n", nil, "no front matter"},
		{"bad yaml", "---\nname: [reviewer\n---\nbody\n", nil, "the front matter: yaml:"},
		{"unknown tool", "---\nname: reviewer\ndescription: d\ntools: [read_file, rm_rf]\n---\nbody\n", nil, `tools: "rm_rf" is not one of the main agent's tools`},
		{"no recursion", "---\nname: reviewer\ndescription: d\ntools: task\n---\nbody\n", nil, `tools: "task" is not one of the main agent's tools`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			path := filepath.Join(dir, ".claude", "agents", "reviewer.md")
			os.MkdirAll(filepath.Dir(path), 0o755)
			if tc.file == "" {
				os.Symlink(dir, path)
			}
			os.WriteFile(path, []byte(tc.file), 0o644)
			h := newHarness(t, text("ok"))
			r := h.run(strings.NewReader(""), append(tc.args, "hi")...)
			if tc.wantErr != "" {
				r.check(t, exitUsage)
				if !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, tc.wantErr) {
					t.Errorf("stderr = %q, want the path and %q", r.stderr, tc.wantErr)
				}
				return
			}
			r.check(t, 0)
			req := h.srv.Requests()[0]
			want := "- reviewer: Reviews code. (tools: grep, read_file)"
			if len(tc.args) > 0 {
				want = "- reviewer: Reviews code. (tools: calculator)"
			}
			if !strings.Contains(string(req.Body), want) {
				t.Errorf("the task tool does not list the reviewer:\n%s", req.Body)
			}
		})
	}
}

func TestAgentsFlagErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name, value, want string
	}{
		{"not JSON", `{"reviewer":`, "--agents: want a JSON object of agents by name"},
		{"an array", `[]`, "--agents: want a JSON object"},
		{"unknown field", `{"reviewer": {"description": "d", "prompt": "p", "tool": ["grep"]}}`, `--agents: agent "reviewer": json: unknown field "tool"`},
		{"no prompt", `{"reviewer": {"description": "d"}}`, `--agents: agent "reviewer": the prompt is missing`},
		{"bad name", `{"Code Reviewer": {"description": "d", "prompt": "p"}}`, `--agents: name "Code Reviewer"`},
		{"missing file", `@nowhere.json`, "--agents: open nowhere.json: no such file"},
		{"unknown tool", `{"reviewer": {"description": "d", "prompt": "p", "tools": ["Bash"]}}`, `--agents: agent "reviewer": tools: "bash" is not one of the main agent's tools (read_file`},
		{"budget, unpriced model", `{"reviewer": {"description": "d", "prompt": "p", "model": "claude-future-9"}}`, `--agents: agent "reviewer": --max-budget-usd needs the price of its model`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			r := h.run(strings.NewReader(""), "--tools", "files", "--max-budget-usd", "1", "--agents", tc.value, "hi")
			r.check(t, exitUsage)
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr = %q, want %q", r.stderr, tc.want)
			}
		})
	}
}

// TestAgentsModel: a subagent's model is an alias, a name sent as it is
// with a warning when agentloop does not know it, or the main agent's.
func TestAgentsModel(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		model, want, warning string
	}{
		{"sonnet", "claude-sonnet-5-5", ""},
		{"inherit", "claude-opus-5-5", ""},
		{"", "claude-opus-5-5", ""},
		{"claude-future-9", "claude-future-9", `--agents: agent "reviewer": warning: model "claude-future-9" is not one agentloop knows`},
	} {
		t.Run(tc.model, func(t *testing.T) {
			h := newHarness(t, delegate("Review."), text("LGTM."), text("Done."))
			def, _ := json.Marshal(map[string]any{"reviewer": map[string]string{"description": "d", "prompt": "p", "model": tc.model}})
			r := h.run(strings.NewReader(""), "--model", "opus", "--agents", string(def), "review")
			r.check(t, 0)
			if p, _ := h.srv.Requests()[1].Params(); p.Model != tc.want {
				t.Errorf("the subagent's model = %s, want %s", p.Model, tc.want)
			}
			if !strings.Contains(r.stderr, tc.warning) || tc.warning == "" && strings.Contains(r.stderr, "warning") {
				t.Errorf("stderr = %q, want the warning %q", r.stderr, tc.warning)
			}
		})
	}
}

// TestAgentsNotInDemo: the demo's fixed script is not changed by the
// agent files where it runs.
func TestAgentsNotInDemo(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, ".claude", "agents", "reviewer.md")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("---\nname: reviewer\ndescription: d\n---\nbody\n"), 0o644)
	h := newHarness(t)
	h.env = map[string]string{}
	r := h.run(strings.NewReader(""), "-v", "demo", "--fast")
	r.check(t, 0)
	if strings.Contains(r.stderr, "subagent offered") || !strings.Contains(r.stderr, "9216") {
		t.Errorf("the demo offered a subagent, or did not finish:\n%s", r.stderr)
	}
}

// TestAgentsSettings: a subagent's history is configured as the main
// agent's: its max_tokens, and its compaction (off: no context editing).
func TestAgentsSettings(t *testing.T) {
	t.Chdir(t.TempDir())
	h := newHarness(t, delegate("Review."), text("LGTM."), text("Done."))
	h.run(strings.NewReader(""), "--compaction", "off", "--max-tokens", "1000", "--agents", reviewerJSON, "review").check(t, 0)
	req := h.srv.Requests()[1]
	p, _ := req.Params()
	if p.MaxTokens != 1000 || strings.Contains(string(req.Body), "context_management") {
		t.Errorf("the subagent's request has max_tokens %d (want 1000) or context editing:\n%s", p.MaxTokens, req.Body)
	}
}

// TestAgentsDurable: in the durable mode the worker's tools are the run's,
// so --agents goes to the worker, which offers the task tool; on a prompt
// it would be dropped, so it is an error there.
func TestAgentsDurable(t *testing.T) {
	t.Chdir(t.TempDir())
	h := newHarness(t)
	f := &fakeDurable{}
	two := strings.TrimSuffix(reviewerJSON, "}") + `, "helper": {"description": "Helps.", "prompt": "You help."}}`
	h.runDurable(f, strings.NewReader(""), "worker", "--temporal", "x:1", "--tools", "files", "--agents", two).check(t, exitOK)
	if _, ok := f.worker.Registry.Lookup("task"); !ok {
		t.Errorf("the worker does not offer the task tool")
	}
	// The child workflows' agents: the reviewer on its model, the helper
	// on the model of the run that delegates to it, since it names none.
	var got []string
	for _, a := range f.worker.Agents {
		model := "inherit"
		if a.Config.History != nil {
			model = a.Config.History.Config().Model
		}
		got = append(got, a.Name+" "+model)
	}
	haiku, _ := resolveModel("haiku")
	slices.Sort(got)
	if want := []string{"helper inherit", "reviewer " + haiku}; !slices.Equal(got, want) {
		t.Errorf("the worker's agents = %q, want %q", got, want)
	}
	r := h.runDurable(f, strings.NewReader(""), "--temporal", "x:1", "--agents", reviewerJSON, "hi")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "--agents is a flag of agentloop worker") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

// TestSubagentConfigShared: every field of agent.Config that the main
// agent's configuration sets, with every flag that sets one given, is set
// alike on a subagent's, but those of each agent's own and those that are
// the main agent's alone; the telemetry is the one the run built. A field
// added to the main agent's alone fails here until it is listed.
func TestSubagentConfigShared(t *testing.T) {
	t.Chdir(t.TempDir())
	own := map[string]bool{"System": true, "Registry": true, "History": true, "Name": true}
	mainOnly := map[string]string{
		"Hooks":          "addAgents gives the subagents a gate of their own",
		"MaxDuration":    "the parent's limits count the sub-run",
		"MaxTotalTokens": "the parent's limits count the sub-run",
		"MaxCostUSD":     "the parent's limits count the sub-run",
		"Schema":         "the shape of the run's final answer",
		"ServerTools":    "a subagent's tools are those of its registry",
	}
	h := newHarness(t)
	o, err := parseFlags([]string{"--agents", `{"reviewer": {"description": "d", "prompt": "p"}}`, "-v",
		"--max-iterations", "7", "--max-duration", "1h", "--max-total-tokens", "9000", "--max-budget-usd", "2",
		"--effort", "high", "--json-schema", `{"type": "object"}`,
		"--server-tools", "web_search", "--tool-search", "on", "--session", "chat.jsonl", "hi"}, func(k string) string { return h.env[k] })
	if err != nil {
		t.Fatal(err)
	}
	o.baseURL, o.telemetry = h.srv.URL, telemetry.New(telemetry.Config{})
	s, err := h.cli(strings.NewReader(""), io.Discard, io.Discard).setup(t.Context(), o, testKey, "", strings.NewReader(""), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if len(s.workerAgents) != 1 {
		t.Fatalf("%d subagents, want 1", len(s.workerAgents))
	}
	main, sub := reflect.ValueOf(s.cfg), reflect.ValueOf(s.workerAgents[0].Config)
	for i := range main.NumField() {
		name, m, sv := main.Type().Field(i).Name, main.Field(i), sub.Field(i)
		switch {
		case m.IsZero() || mainOnly[name] != "":
		case own[name]:
			if sv.IsZero() && name != "History" { // History: a template, nil for the run's model
				t.Errorf("the subagent has no %s of its own", name)
			}
		case m.Kind() == reflect.Func:
			if sv.IsNil() {
				t.Errorf("the main agent has a %s, the subagent none", name)
			}
		case m.Kind() == reflect.Interface:
			if m.Interface() != sv.Interface() {
				t.Errorf("the subagent's %s is %v, not the main agent's %v", name, sv, m)
			}
		case !reflect.DeepEqual(m.Interface(), sv.Interface()):
			t.Errorf("the subagent's %s is %v, the main agent's %v", name, sv, m)
		}
	}
	if s.cfg.Observer != o.telemetry {
		t.Errorf("the main agent's Observer is not the run's telemetry")
	}
}
