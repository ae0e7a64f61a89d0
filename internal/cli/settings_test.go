package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes content at path, making its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSettingsErrors: a settings file that is not JSON, or holds a value
// of the wrong type or a rule or hook agentloop cannot use, is a usage
// error naming the file and the key, before any request.
func TestSettingsErrors(t *testing.T) {
	tests := []struct {
		name, settings, want string
	}{
		{"not JSON", "{\n\"permissions\": {,}}", "settings --settings is not a JSON object: line 2: invalid character ','"},
		{"not an object", `[1]`, "--settings [1]: want a settings file or a JSON object"},
		{"permissions type", `{"permissions": []}`, "settings --settings: permissions: want map[string]json.RawMessage, not a JSON array"},
		{"allow type", `{"permissions": {"allow": "Bash"}}`, "settings --settings: permissions.allow: want []string, not a JSON string"},
		{"bad rule", `{"permissions": {"deny": ["Read(.env)", "Bash(rm -rf:*"]}}`, `settings --settings: permissions.deny[1]: invalid rule "Bash(rm -rf:*": a missing closing parenthesis`},
		{"bad directory", `{"permissions": {"additionalDirectories": ["/nonexistent/dir-xyz"]}}`, "permissions.additionalDirectories[0]: /nonexistent/dir-xyz is not a directory"},
		{"bad mode", `{"permissions": {"defaultMode": "yolo"}}`, `permissions.defaultMode: "yolo": want default, acceptEdits, plan or bypassPermissions`},
		{"hooks type", `{"hooks": {"PreToolUse": {}}}`, `settings --settings: hooks: PreToolUse: want an array`},
		{"hook type", `{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}}`, `hooks: Stop[0].hooks[0]: type: "prompt": agentloop runs hooks of type "command"`},
		{"no command", `{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}`, `hooks: Stop[0].hooks[0]: command: missing`},
		{"timeout", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}`, `hooks: Stop[0].hooks[0]: timeout: 0: want a number of seconds above 0`},
		{"timeout type", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "5"}]}]}}`, `hooks: Stop[0].hooks[0]: timeout: want float64, not a JSON string`},
		{"matcher", `{"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}}`, `hooks: PreToolUse[0].matcher: "Bash(" is not a regular expression`},
		{"missing file", "no-such-settings.json", "--settings no-such-settings.json: want a settings file or a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			h := newHarness(t)
			r := h.run(strings.NewReader(""), "--settings", tt.settings, "hi")
			r.check(t, exitUsage)
			if !strings.Contains(r.stderr, tt.want) || len(h.srv.Requests()) != 0 {
				t.Errorf("stderr:\n%s\nwant %q", r.stderr, tt.want)
			}
		})
	}
}

// TestSettingsIgnored: keys agentloop does not use are ignored, as Claude
// Code ignores those it does not know; hook events it does not run are a
// warning.
func TestSettingsIgnored(t *testing.T) {
	t.Chdir(t.TempDir())
	h := newHarness(t, text("ok"))
	settings := `{"model": "x", "env": {"A": "b"}, "permissions": {"disableBypassPermissionsMode": "disable"},
		"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]}}`
	r := h.run(strings.NewReader(""), "--settings", settings, "hi")
	r.check(t, 0)
	if want := "settings --settings: hooks.Notification: agentloop has no such event, so its hooks do not run"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr:\n%s\nwant %q", r.stderr, want)
	}
}

// TestSettingsPermissions: each file's rules hold in Claude Code's order,
// deny over ask over allow; a mode comes from the highest file that sets
// one, and --permission-mode wins over all; a project's deny and ask rules
// always hold, its allow rules and mode only when --settings names it.
func TestSettingsPermissions(t *testing.T) {
	tests := []struct {
		name     string
		user     string // the user's settings file
		project  string // .claude/settings.json
		local    string // .claude/settings.local.json
		args     []string
		ran      bool
		result   string // a part of the tool_result
		terminal string // stdin, on a terminal; "" for none
	}{
		{name: "user allow", user: `{"permissions": {"allow": ["Bash(echo:*)"]}}`, ran: true},
		{name: "user mode", user: `{"permissions": {"defaultMode": "bypassPermissions"}}`, ran: true},
		{name: "flag mode wins", user: `{"permissions": {"defaultMode": "bypassPermissions"}}`, args: []string{"--permission-mode", "default"},
			result: "there is no one to ask"},
		{name: "--settings over the user's", user: `{"permissions": {"defaultMode": "bypassPermissions"}}`,
			args: []string{"--settings", `{"permissions": {"defaultMode": "default"}}`}, result: "there is no one to ask"},
		{name: "user deny over --settings allow", user: `{"permissions": {"deny": ["Bash"]}}`,
			args: []string{"--settings", `{"permissions": {"allow": ["Bash"]}}`}, result: "the user's rule bash forbids this call"},
		{name: "ask over allow", user: `{"permissions": {"allow": ["Bash"], "ask": ["Bash(echo:*)"]}}`,
			result: "the user's rule bash(echo:*) asks the user about this call, and there is no one to ask"},
		{name: "ask on a terminal", user: `{"permissions": {"allow": ["Bash"], "ask": ["Bash(echo:*)"]}}`, terminal: "y\n", ran: true},
		{name: "project allow ignored", project: `{"permissions": {"allow": ["Bash"]}}`, result: "there is no one to ask"},
		{name: "project mode ignored", project: `{"permissions": {"defaultMode": "bypassPermissions"}}`, result: "there is no one to ask"},
		{name: "local allow ignored", local: `{"permissions": {"allow": ["Bash"]}}`, result: "there is no one to ask"},
		{name: "project deny holds", project: `{"permissions": {"deny": ["Bash(echo:*)"]}}`, args: []string{"--yes"},
			result: "the user's rule bash(echo:*) forbids this call"},
		{name: "project ask holds", project: `{"permissions": {"ask": ["Bash"]}}`, args: []string{"--yes"}, result: "asks the user"},
		{name: "project named", project: `{"permissions": {"allow": ["Bash"]}}`, args: []string{"--settings", ".claude/settings.json"}, ran: true},
		{name: "local over project", project: `{"permissions": {"defaultMode": "default"}}`, local: `{"permissions": {"defaultMode": "bypassPermissions"}}`,
			args: []string{"--settings", ".claude/settings.local.json"}, ran: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			config := t.TempDir()
			if tt.user != "" {
				writeFile(t, filepath.Join(config, "agentloop", "settings.json"), tt.user)
			}
			if tt.project != "" {
				writeFile(t, filepath.Join(dir, ".claude", "settings.json"), tt.project)
			}
			if tt.local != "" {
				writeFile(t, filepath.Join(dir, ".claude", "settings.local.json"), tt.local)
			}
			h := newHarness(t, bashCall("echo ran"), text("done"))
			h.env["XDG_CONFIG_HOME"] = config
			h.terminals["stdin"], h.terminals["stderr"] = tt.terminal != "", tt.terminal != ""
			r := h.run(strings.NewReader(tt.terminal), append(tt.args, "go")...)
			r.check(t, 0)
			res := h.srv.Requests()[1].ToolResults()
			got := resultTexts(res[0])
			if ran := !res[0].IsError && strings.HasPrefix(got, "ran"); ran != tt.ran || !strings.Contains(got, tt.result) {
				t.Errorf("tool_result %q, want ran %v and %q\nstderr:\n%s", got, tt.ran, tt.result, r.stderr)
			}
		})
	}
}

// TestProjectSettingsConsent: a project's allow rules and hooks are used
// once the user agrees on a terminal, after seeing them; the answer holds,
// without a terminal too, until the file changes.
func TestProjectSettingsConsent(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	config := t.TempDir()
	body := `{"permissions": {"allow": ["Bash(echo:*)"], "deny": ["WebFetch"]},
		"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "echo checked >&2; exit 2"}]}]}}`
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"), body)
	for _, tc := range []struct {
		name     string
		terminal bool
		answer   string
		change   bool
		asked    bool
		used     bool
	}{
		{"not a terminal", false, "", false, false, false},
		{"declined", true, "n\n", false, true, false},
		{"declined before", true, "y\n", false, false, false},
		{"changed, agreed", true, "y\n", true, true, true},
		{"agreed before, not a terminal", false, "", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change {
				writeFile(t, filepath.Join(dir, ".claude", "settings.json"), body+"\n")
			}
			h := newHarness(t, bashCall("echo ran"), text("done"))
			h.env["XDG_CONFIG_HOME"] = config
			h.terminals["stdin"], h.terminals["stderr"] = tc.terminal, tc.terminal
			// No is the answer to the call's own question, when one comes.
			r := h.run(strings.NewReader(tc.answer+"n\n"), "go")
			r.check(t, 0)
			question := "This directory has a .claude/settings.json that would\n  allow without asking: bash(echo:*)\n" +
				"  run this command as a hook: PostToolUse: echo checked >&2; exit 2\nUse them?"
			if asked := strings.Contains(r.stderr, question); asked != tc.asked {
				t.Errorf("asked = %v, want %v; stderr:\n%s", asked, tc.asked, r.stderr)
			}
			got := resultTexts(h.srv.Requests()[1].ToolResults()[0])
			if used := got == "ran\n[exit status 0]|checked"; used != tc.used {
				t.Errorf("tool_result %q: used = %v, want %v\nstderr:\n%s", got, used, tc.used, r.stderr)
			}
			if !tc.used && !strings.Contains(r.stderr, ".claude/settings.json: only its deny and ask rules are used") {
				t.Errorf("no note about the unused settings:\n%s", r.stderr)
			}
		})
	}
}

// TestSettingsFileErrors: an error in the user's or the project's file,
// read without being named, names that file.
func TestSettingsFileErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	config := t.TempDir()
	user := filepath.Join(config, "agentloop", "settings.json")
	for _, tc := range []struct{ path, content, want string }{
		{user, `{"permissions": {"ask": {}}}`, "settings " + user + ": permissions.ask: want []string, not a JSON object"},
		{filepath.Join(".claude", "settings.local.json"), `{"hooks": }`, "settings .claude/settings.local.json is not a JSON object: line 1"},
	} {
		writeFile(t, tc.path, tc.content)
		h := newHarness(t)
		h.env["XDG_CONFIG_HOME"] = config
		r := h.run(strings.NewReader(""), "hi")
		r.check(t, exitUsage)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("stderr:\n%s\nwant %q", r.stderr, tc.want)
		}
		os.Remove(tc.path)
	}
}
