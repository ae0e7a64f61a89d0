package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentloop/agentloop/tools/permission"
)

// A settingsFile is one of Claude Code's settings.json files, read and
// checked: its permissions and its hooks. Every other key is ignored, as
// Claude Code ignores the keys it does not know.
type settingsFile struct {
	// name is the file's path as messages show it; "--settings" for
	// JSON given on the command line.
	name    string
	content []byte
	// project marks the working directory's .claude/settings.json and
	// .claude/settings.local.json: a repository's files, whose allow
	// rules, directories, mode and hooks are used only if the user agrees.
	project          bool
	allow, deny, ask []permission.Rule
	dirs             []string
	mode             string
	hooks            hookConfig
}

// needsConsent reports whether a project's file asks for more than deny
// and ask rules, which only ever take away.
func (f *settingsFile) needsConsent() bool {
	return len(f.allow)+len(f.dirs)+len(f.hooks) > 0 || f.mode != ""
}

// The project's settings files, in the working directory, in Claude
// Code's order of precedence, lowest first.
var projectSettings = []string{filepath.Join(".claude", "settings.json"), filepath.Join(".claude", "settings.local.json")}

// loadSettings reads the settings files, lowest precedence first, as
// Claude Code orders them: the user's (agentloop/settings.json in the
// user config directory), the project's .claude/settings.json, its
// .claude/settings.local.json, and --settings, a file or JSON. A file
// that is missing is skipped, but not one --settings names; one that
// cannot be read or holds a wrong value is a usage error naming the file
// and the key.
func loadSettings(getenv func(string) string, flagValue string) ([]*settingsFile, []string, error) {
	var paths []string
	if dir := userConfigDir(getenv); dir != "" {
		paths = append(paths, filepath.Join(dir, "agentloop", "settings.json"))
	}
	named, _ := os.Stat(flagValue)
	var (
		files    []*settingsFile
		warnings []string
	)
	for _, p := range append(paths, projectSettings...) {
		st, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue // none, as when a directory on its path is a file
		}
		if named != nil && st != nil && os.SameFile(st, named) {
			continue // --settings names it: it is read there, as the user's choice
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, usageError("settings file %s: %v", p, err)
		}
		f, w, err := parseSettings(p, b)
		if err != nil {
			return nil, nil, err
		}
		f.project = slices.Contains(projectSettings, p)
		files, warnings = append(files, f), append(warnings, w...)
	}
	if flagValue == "" {
		return files, warnings, nil
	}
	name, b := "--settings", []byte(flagValue)
	if !strings.HasPrefix(strings.TrimSpace(flagValue), "{") {
		if named == nil || named.IsDir() {
			return nil, nil, usageError("--settings %s: want a settings file or a JSON object", flagValue)
		}
		var err error
		if b, err = os.ReadFile(flagValue); err != nil {
			return nil, nil, usageError("--settings: %v", err)
		}
		name = flagValue
	}
	f, w, err := parseSettings(name, b)
	if err != nil {
		return nil, nil, err
	}
	return append(files, f), append(warnings, w...), nil
}

// parseSettings reads the permissions and hooks of b, the settings file
// name. It returns warnings for the hook events it does not run.
func parseSettings(name string, b []byte) (*settingsFile, []string, error) {
	f := &settingsFile{name: name, content: b}
	bad := func(key string, err error) error {
		return usageError("settings %s: %s: %v", name, key, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, nil, usageError("settings %s is not a JSON object: %v", name, jsonErrorAt(b, err))
	}
	var perms map[string]json.RawMessage
	if raw, ok := top["permissions"]; ok {
		if err := json.Unmarshal(raw, &perms); err != nil {
			return nil, nil, bad("permissions", errors.New(typeError(err)))
		}
	}
	for _, k := range []struct {
		key   string
		rules *[]permission.Rule
	}{{"allow", &f.allow}, {"deny", &f.deny}, {"ask", &f.ask}} {
		key, rules := k.key, k.rules
		var list []string
		if raw, ok := perms[key]; ok {
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, nil, bad("permissions."+key, errors.New(typeError(err)))
			}
		}
		for i, s := range list {
			r, err := permission.ParseRule(s)
			if err != nil {
				return nil, nil, bad(fmt.Sprintf("permissions.%s[%d]", key, i), err)
			}
			*rules = append(*rules, r)
		}
	}
	if raw, ok := perms["additionalDirectories"]; ok {
		if err := json.Unmarshal(raw, &f.dirs); err != nil {
			return nil, nil, bad("permissions.additionalDirectories", errors.New(typeError(err)))
		}
	}
	for i, d := range f.dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return nil, nil, bad(fmt.Sprintf("permissions.additionalDirectories[%d]", i), fmt.Errorf("%s is not a directory", d))
		}
	}
	if raw, ok := perms["defaultMode"]; ok {
		if err := json.Unmarshal(raw, &f.mode); err != nil {
			return nil, nil, bad("permissions.defaultMode", errors.New(typeError(err)))
		}
		if !slices.Contains([]string{modeDefault, modeAcceptEdits, modePlan, modeBypass}, f.mode) {
			return nil, nil, bad("permissions.defaultMode", fmt.Errorf("%q: want default, acceptEdits, plan or bypassPermissions", f.mode))
		}
	}
	var warnings []string
	if raw, ok := top["hooks"]; ok {
		var err error
		if f.hooks, warnings, err = parseHooks(raw); err != nil {
			return nil, nil, bad("hooks", err)
		}
		for i := range warnings {
			warnings[i] = fmt.Sprintf("settings %s: %s", name, warnings[i])
		}
	}
	return f, warnings, nil
}

// applySettings adds the settings files' permissions and hooks to o,
// before the tools are built: deny and ask rules from every file; the
// rest of a project's file only if the user agrees to this version of it
// (see trustProject). A mode in a file applies when --permission-mode is
// not given, the highest file's.
func (s *session) applySettings(o *options) error {
	b := &o.builtin
	mode := ""
	for _, f := range o.settingsFiles {
		b.settingsDeny = append(b.settingsDeny, f.deny...)
		b.settingsAsk = append(b.settingsAsk, f.ask...)
		if f.project && f.needsConsent() && !s.trustProject(o, f) {
			continue
		}
		b.settingsAllow = append(b.settingsAllow, f.allow...)
		b.addDirs = append(b.addDirs, f.dirs...)
		mode = cmp.Or(f.mode, mode)
		o.hooks = o.hooks.merge(f.hooks)
	}
	if !b.modeGiven && mode != "" {
		b.mode = mode
		return b.checkMode()
	}
	return nil
}

// trustProject reports whether the user agrees to use all of a project's
// settings file f: its allow rules, directories, mode and hook commands,
// which a repository could otherwise set just by being there. As for a
// .mcp.json, the answer is asked on a terminal and remembered for the
// file's content at its path.
func (s *session) trustProject(o *options, f *settingsFile) bool {
	key := answerKey(f.name, f.content)
	answers := readAnswers(o.answers)
	yes, known := answers[key]
	use := fmt.Sprintf("pass --settings %s to use its allow rules, directories, mode and hooks", f.name)
	switch {
	case known && yes:
		s.render.note("./%s: using its allow rules, directories, mode and hooks, as you agreed to this version of it before", f.name)
		return true
	case known:
		s.render.note("./%s: only its deny and ask rules are used, as you answered for this version of it before: %s", f.name, use)
		return false
	case o.term == nil:
		s.render.note("./%s: only its deny and ask rules are used: %s", f.name, use)
		return false
	}
	var q strings.Builder
	fmt.Fprintf(&q, "This directory has a %s that would\n", f.name)
	if len(f.allow) > 0 {
		rules := make([]string, len(f.allow))
		for i, r := range f.allow {
			rules[i] = r.String()
		}
		fmt.Fprintf(&q, "  allow without asking: %s\n", strings.Join(rules, ", "))
	}
	if len(f.dirs) > 0 {
		fmt.Fprintf(&q, "  open these directories to the file tools: %s\n", shownLine(f.dirs))
	}
	if f.mode != "" {
		fmt.Fprintf(&q, "  set the permission mode %s\n", f.mode)
	}
	for _, c := range f.hooks.commands() {
		fmt.Fprintf(&q, "  run this command as a hook: %s\n", c)
	}
	q.WriteString("Use them? Your answer holds until the file changes.")
	yes = o.term.confirm(q.String())
	answers[key] = yes
	if err := writeAnswers(o.answers, answers); err != nil {
		s.render.note("your answer about ./%s is not remembered: %v", f.name, err)
	}
	if !yes {
		s.render.note("./%s: only its deny and ask rules are used: %s", f.name, use)
	}
	return yes
}
