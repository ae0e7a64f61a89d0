package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// hookSettings returns --settings JSON that runs script, written to an
// executable file in dir, at event, for the tools matcher matches.
func hookSettings(t *testing.T, dir, event, matcher, script string, timeout float64) string {
	t.Helper()
	path := filepath.Join(dir, event+".sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o700); err != nil {
		t.Fatal(err)
	}
	h := map[string]any{"type": "command", "command": path}
	if timeout > 0 {
		h["timeout"] = timeout
	}
	b, err := json.Marshal(map[string]any{"hooks": map[string]any{event: []any{map[string]any{"matcher": matcher, "hooks": []any{h}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bashCall is a model turn that runs command with bash.
func bashCall(command string) anthropictest.Reply {
	in, _ := json.Marshal(map[string]string{"command": command})
	return anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_1", "bash", string(in)).Stop("tool_use", 5)
}

// resultTexts joins the texts of a tool_result's blocks with "|".
func resultTexts(res anthropictest.Block) string {
	var texts []string
	for _, b := range res.Content {
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "|")
}

// hookInput reads what a hook saved of its stdin, as saveInput does.
func hookInput(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "in.json"))
	if err != nil {
		t.Fatalf("the hook did not run: %v", err)
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("the hook's stdin %q: %v", b, err)
	}
	return in
}

// saveInput is a line of a hook script that saves its stdin in in.json.
const saveInput = `cat > "$AGENTLOOP_PROJECT_DIR/in.json"` + "\n"

// TestPreToolUseHook runs a real PreToolUse hook script for each outcome,
// and checks what the model reads of the call.
func TestPreToolUseHook(t *testing.T) {
	tests := []struct {
		name    string
		matcher string
		script  string
		timeout float64
		args    []string
		command string
		isError bool
		result  string // a part of the tool_result
		stderr  string // a part of stderr
	}{
		{name: "exit 2 blocks", matcher: "Bash", script: "echo 'no rm -rf here' >&2; exit 2", args: []string{"--yes"},
			isError: true, result: "denied: no rm -rf here"},
		{name: "deny", matcher: "bash", script: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"destructive"}}'`,
			args: []string{"--yes"}, isError: true, result: "denied: destructive"},
		{name: "legacy block", script: `echo '{"decision":"block","reason":"old style"}'`, args: []string{"--yes"},
			isError: true, result: "denied: old style"},
		{name: "allow skips the question", matcher: "Bash|Write", script: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`,
			result: "ran"},
		{name: "allow does not beat a deny rule", script: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`,
			args: []string{"--deny", "Bash(echo:*)"}, isError: true, result: "forbids this call"},
		{name: "ask with nobody to ask", script: `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}'`,
			args: []string{"--yes"}, isError: true, result: "denied: sure?: a PreToolUse hook asks the user about this call, and there is no one to ask"},
		{name: "updated input", script: `echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"echo rewritten"}}}'`,
			result: "rewritten"},
		{name: "updated input meets the deny rules", script: `echo '{"hookSpecificOutput":{"updatedInput":{"command":"rm -rf x"}}}'`,
			args: []string{"--yes", "--deny", "Bash(rm:*)"}, isError: true, result: "forbids this call"},
		{name: "additional context", script: `echo '{"hookSpecificOutput":{"additionalContext":"mind the tests"}}'`,
			args: []string{"--yes"}, result: "mind the tests"},
		{name: "other status goes on", script: "echo oops >&2; exit 1", args: []string{"--yes"}, result: "ran",
			stderr: "exited with status 1: oops"},
		{name: "garbage JSON fails closed", script: `echo '{"hookSpecificOutput": {'`, args: []string{"--yes"}, isError: true,
			result: "wrote stdout that starts as JSON but is not", stderr: "wrote stdout that starts as JSON but is not"},
		{name: "wrong decision", script: `echo '{"hookSpecificOutput":{"permissionDecision":"maybe"}}'`, args: []string{"--yes"},
			isError: true, result: `permissionDecision "maybe": want allow, deny or ask`},
		{name: "hanging hook killed", script: "sleep 1000", timeout: 0.2, args: []string{"--yes"}, isError: true,
			result: "timed out after 200ms, and was killed", stderr: "timed out after 200ms"},
		{name: "matcher misses", matcher: "Write|Edit", script: "exit 2", args: []string{"--yes"}, result: "ran"},
		{name: "plain stdout ignored", script: "echo hello", args: []string{"--yes"}, result: "ran"},
		{name: "continue false", script: `echo '{"continue":false,"stopReason":"frozen"}'`, args: []string{"--yes"}, isError: true,
			result: "denied: frozen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			settings := hookSettings(t, dir, "PreToolUse", tt.matcher, tt.script, tt.timeout)
			h := newHarness(t, bashCall("echo ran"), text("done"))
			r := h.run(strings.NewReader(""), append(tt.args, "--settings", settings, "go")...)
			r.check(t, 0)
			res := h.srv.Requests()[1].ToolResults()
			if len(res) != 1 || res[0].IsError != tt.isError || !strings.Contains(resultTexts(res[0]), tt.result) {
				t.Errorf("tool_result = %+v, want is_error %v and %q\nstderr:\n%s", res, tt.isError, tt.result, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr:\n%s\nwant %q", r.stderr, tt.stderr)
			}
		})
	}
}

// TestPreToolUseHookInput checks a hook's stdin, Claude Code's fields,
// and its environment: the minimal one, with the project directory, and
// never the API key.
func TestPreToolUseHookInput(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	script := saveInput + `env > "$AGENTLOOP_PROJECT_DIR/env.txt"; pwd > "$CLAUDE_PROJECT_DIR/pwd.txt"`
	h := newHarness(t, bashCall("echo ran"), text("done"))
	r := h.run(strings.NewReader(""), "--yes", "--settings", hookSettings(t, dir, "PreToolUse", "", script, 0), "go")
	r.check(t, 0)
	in := hookInput(t, dir)
	if id, _ := in["session_id"].(string); id == "" {
		t.Errorf("no session_id in %v", in)
	}
	delete(in, "session_id")
	want := map[string]any{"hook_event_name": "PreToolUse", "cwd": dir, "transcript_path": "", "permission_mode": "bypassPermissions",
		"tool_name": "Bash", "tool_input": map[string]any{"command": "echo ran"}, "tool_use_id": "toolu_1"}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("stdin (-want +got):\n%s", diff)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env.txt"))
	for _, kv := range []string{"AGENTLOOP_PROJECT_DIR=" + dir, "CLAUDE_PROJECT_DIR=" + dir, "PATH="} {
		if !strings.Contains(string(env), kv) {
			t.Errorf("the hook's environment lacks %s:\n%s", kv, env)
		}
	}
	if strings.Contains(string(env), testKey) || strings.Contains(string(env), "ANTHROPIC") {
		t.Errorf("the hook's environment holds the key:\n%s", env)
	}
	if pwd, _ := os.ReadFile(filepath.Join(dir, "pwd.txt")); strings.TrimSpace(string(pwd)) != dir {
		t.Errorf("the hook ran in %q, want %q", pwd, dir)
	}
}

// TestPostToolUseHook: a PostToolUse hook reads the call and its result,
// and what it says on exit 0 (block's reason, additionalContext) or exit 2
// (stderr) reaches the model with the result.
func TestPostToolUseHook(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"block", saveInput + `echo '{"decision":"block","reason":"the output holds a token"}'`, "the output holds a token"},
		{"context", saveInput + `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint it"}}'`, "lint it"},
		{"exit 2", saveInput + "echo 'formatting failed' >&2; exit 2", "formatting failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			h := newHarness(t, bashCall("echo ran"), text("done"))
			h.run(strings.NewReader(""), "--yes", "--settings", hookSettings(t, dir, "PostToolUse", "Bash", tt.script, 0), "go").check(t, 0)
			res := h.srv.Requests()[1].ToolResults()
			if got, want := resultTexts(res[0]), "ran\n[exit status 0]|"+tt.want; got != want {
				t.Errorf("tool_result %q, want %q", got, want)
			}
			in := hookInput(t, dir)
			if diff := cmp.Diff(map[string]any{"content": "ran\n[exit status 0]", "is_error": false}, in["tool_response"]); diff != "" || in["hook_event_name"] != "PostToolUse" {
				t.Errorf("stdin %v; tool_response (-want +got):\n%s", in, diff)
			}
		})
	}
}

// TestUserPromptSubmitHook: a hook blocks the prompt (exit 2, or decision
// block), which is never sent, and tells the user why; or adds context,
// plain stdout or JSON, after it.
func TestUserPromptSubmitHook(t *testing.T) {
	tests := []struct {
		name, script string
		blocked      string // on stderr; "" when the prompt goes
		context      string
	}{
		{name: "exit 2", script: "echo 'no secrets in prompts' >&2; exit 2", blocked: "the prompt was blocked: no secrets in prompts"},
		{name: "block", script: `echo '{"decision":"block","reason":"not today"}'`, blocked: "the prompt was blocked: not today"},
		{name: "continue false", script: `echo '{"continue":false,"stopReason":"maintenance"}'`, blocked: "the prompt was blocked: maintenance"},
		{name: "plain stdout", script: saveInput + "echo 'The time is noon.'", context: "The time is noon."},
		{name: "JSON context", script: `echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"ticket 42"}}'`, context: "ticket 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			h := newHarness(t, text("done"))
			r := h.run(strings.NewReader(""), "--settings", hookSettings(t, dir, "UserPromptSubmit", "", tt.script, 0), "hello there")
			if tt.blocked != "" {
				r.check(t, exitFailure)
				if !strings.Contains(r.stderr, tt.blocked) || len(h.srv.Requests()) != 0 {
					t.Errorf("%d requests; stderr:\n%s\nwant %q", len(h.srv.Requests()), r.stderr, tt.blocked)
				}
				return
			}
			r.check(t, 0)
			var texts []string
			for _, b := range h.srv.Requests()[0].Messages()[0].Content {
				texts = append(texts, b.Text)
			}
			if diff := cmp.Diff([]string{"hello there", tt.context}, texts); diff != "" {
				t.Errorf("the prompt (-want +got):\n%s", diff)
			}
			if tt.name == "plain stdout" {
				if in := hookInput(t, dir); in["prompt"] != "hello there" || in["hook_event_name"] != "UserPromptSubmit" {
					t.Errorf("stdin %v", in)
				}
			}
		})
	}
}

// TestStopHook: a Stop hook makes the model go on with its reason, once:
// told stop_hook_active the second time, it lets the run end.
func TestStopHook(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	script := `in=$(cat); echo "$in" >> "$AGENTLOOP_PROJECT_DIR/stops.jsonl"
case "$in" in *'"stop_hook_active":true'*) exit 0;; esac
echo '{"decision":"block","reason":"run the tests first"}'`
	h := newHarness(t, text("all done"), text("tests pass"))
	r := h.run(strings.NewReader(""), "--settings", hookSettings(t, dir, "Stop", "", script, 0), "fix it")
	r.check(t, 0)
	reqs := h.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages()
	if last := msgs[len(msgs)-1]; last.Role != "user" || last.Text != "run the tests first" {
		t.Errorf("the last message %+v, want the hook's reason", last)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "stops.jsonl"))
	var got []string
	for line := range strings.Lines(string(b)) {
		var in struct {
			Active bool   `json:"stop_hook_active"`
			Last   string `json:"last_assistant_message"`
		}
		json.Unmarshal([]byte(line), &in)
		got = append(got, strings.TrimSpace(in.Last)+" "+map[bool]string{true: "active", false: "first"}[in.Active])
	}
	if diff := cmp.Diff([]string{"all done first", "tests pass active"}, got); diff != "" {
		t.Errorf("the Stop hook's inputs (-want +got):\n%s", diff)
	}
}

// TestSessionStartHook: a SessionStart hook's plain stdout reaches the
// model, in the system prompt; exit 2's stderr the user alone.
func TestSessionStartHook(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	script := saveInput + "echo 'Branch: main, 3 files changed.'; echo 'for you only' >&2; exit 0"
	h := newHarness(t, text("done"))
	h.run(strings.NewReader(""), "--settings", hookSettings(t, dir, "SessionStart", "startup", script, 0), "hi").check(t, 0)
	if sys := systemOf(t, h.srv.Requests()[0]); !strings.HasSuffix(sys, "Branch: main, 3 files changed.") {
		t.Errorf("system prompt %q, want the hook's output at its end", sys)
	}
	if in := hookInput(t, dir); in["source"] != "startup" || in["hook_event_name"] != "SessionStart" || in["model"] != defaultModel {
		t.Errorf("stdin %v", in)
	}

	h = newHarness(t, text("done"))
	r := h.run(strings.NewReader(""), "--settings", hookSettings(t, dir, "SessionStart", "", "echo 'index is stale' >&2; exit 2", 0), "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "SessionStart hook: index is stale") || strings.Contains(systemOf(t, h.srv.Requests()[0]), "stale") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestSessionStartHookOnClear: /clear in the REPL runs the SessionStart
// hooks with source "clear", and what they say replaces, at the end of the
// system prompt, what the startup hooks said.
func TestSessionStartHookOnClear(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	h := newHarness(t, text("one"), text("two"))
	h.terminals["stdin"] = true
	script := `if grep -q '"source":"clear"'; then echo 'after clear'; else echo 'at startup'; fi`
	h.run(strings.NewReader("hi\n/clear\nagain\n"), "--settings", hookSettings(t, dir, "SessionStart", "", script, 0)).check(t, 0)
	reqs := h.srv.Requests()
	if sys := systemOf(t, reqs[0]); !strings.HasSuffix(sys, "at startup") {
		t.Errorf("first system prompt %q, want the startup hook's output at its end", sys)
	}
	if sys := systemOf(t, reqs[1]); !strings.HasSuffix(sys, "after clear") || strings.Contains(sys, "at startup") {
		t.Errorf("system prompt after /clear %q, want the clear hook's output in place of the startup hook's", sys)
	}
}

// TestPreCompactHook: a PreCompact hook runs, trigger auto, before the
// client compacts the history.
func TestPreCompactHook(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	big := anthropictest.NewStream().Usage(9000, 0, 0, 0).ToolUse("toolu_1", "bash", `{"command":"echo ran"}`).Stop("tool_use", 5)
	h := newHarness(t, big, text("summary"), text("done"))
	script := saveInput + "echo 'saving the transcript' >&2; exit 2"
	r := h.run(strings.NewReader(""), "--yes", "--compaction", "client", "--context-limit", "5000",
		"--settings", hookSettings(t, dir, "PreCompact", "auto", script, 0), "go")
	r.check(t, 0)
	in := hookInput(t, dir)
	if in["hook_event_name"] != "PreCompact" || in["trigger"] != "auto" {
		t.Errorf("stdin %v", in)
	}
	if !strings.Contains(r.stderr, "PreCompact hook: saving the transcript") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestPreToolUseHookAsks: a hook's ask puts the call to the user on the
// terminal, with the hook's reason, even under --yes.
func TestPreToolUseHookAsks(t *testing.T) {
	for _, tc := range []struct {
		answer string
		ran    bool
	}{{"y\n", true}, {"n\n", false}} {
		dir := t.TempDir()
		t.Chdir(dir)
		script := `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"this deletes files"}}'`
		h := newHarness(t, bashCall("echo ran"), text("done"))
		h.terminals["stdin"], h.terminals["stderr"] = true, true
		r := h.run(strings.NewReader(tc.answer), "--yes", "--settings", hookSettings(t, dir, "PreToolUse", "", script, 0), "go")
		r.check(t, 0)
		got := resultTexts(h.srv.Requests()[1].ToolResults()[0])
		if ran := strings.HasPrefix(got, "ran"); ran != tc.ran || !strings.Contains(r.stderr, "a PreToolUse hook asks: this deletes files") {
			t.Errorf("answer %q: tool_result %q, want ran %v\nstderr:\n%s", tc.answer, got, tc.ran, r.stderr)
		}
	}
}

// TestReadmeHookExample runs the README's worked example, a PreToolUse
// hook that blocks rm -rf, from a project's .claude/settings.json named
// with --settings.
func TestReadmeHookExample(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("the example uses jq:", err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The example's two code blocks: the settings, then the script.
	_, after, _ := strings.Cut(string(readme), "A worked example: a `PreToolUse` hook that blocks `rm -rf`.")
	blocks := strings.Split(after, "```")
	settings, script := strings.TrimPrefix(blocks[1], "json\n"), strings.TrimPrefix(blocks[3], "sh\n")
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"), settings)
	writeFile(t, filepath.Join(dir, ".claude", "hooks", "no-rm-rf.sh"), script)
	os.Chmod(filepath.Join(dir, ".claude", "hooks", "no-rm-rf.sh"), 0o700)
	for _, tc := range []struct{ command, want string }{
		{"rm -rf build", "denied: rm -rf is blocked by a hook"},
		{"echo ran", "ran"},
	} {
		h := newHarness(t, bashCall(tc.command), text("done"))
		h.run(strings.NewReader(""), "--yes", "--settings", ".claude/settings.json", "go").check(t, 0)
		if got := resultTexts(h.srv.Requests()[1].ToolResults()[0]); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: tool_result %q, want %q", tc.command, got, tc.want)
		}
	}
}

// TestStopHookHalts: continue: false wins over a Stop hook's block, and
// the run ends.
func TestStopHookHalts(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	script := `echo '{"decision":"block","reason":"go on","continue":false}'`
	h := newHarness(t, text("all done"), text("went on"))
	h.run(strings.NewReader(""), "--settings", hookSettings(t, dir, "Stop", "", script, 0), "fix it").check(t, 0)
	if n := len(h.srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
