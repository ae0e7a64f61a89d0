package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/internal/childenv"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/permission"
)

// Claude Code's hooks: commands a settings file's "hooks" object runs at
// points of a run, told the event as JSON on stdin, that answer with their
// exit status and stdout, in Claude Code's schema, so that hook scripts
// written for it work unchanged.

// hookEvents are the events agentloop runs hooks at, Claude Code's names.
var hookEvents = []string{"PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "PreCompact", "SessionStart"}

const (
	defaultHookTimeout = 60 * time.Second // Claude Code's
	maxHookTimeout     = 24 * time.Hour
	// maxHookOutput bounds what is kept of a hook's stdout and stderr.
	maxHookOutput = 1 << 20
)

// A hookCommand is one command hook.
type hookCommand struct {
	command string
	timeout time.Duration
}

// A hookMatcher is the hooks of one entry of an event: those run when the
// matcher matches (a tool's name, the compaction's trigger, the session's
// source).
type hookMatcher struct {
	match *regexp.Regexp // nil: every time
	hooks []hookCommand
}

// A hookConfig is the hooks of each event.
type hookConfig map[string][]hookMatcher

// merge returns c with the hooks of d after its own.
func (c hookConfig) merge(d hookConfig) hookConfig {
	out := maps.Clone(c)
	if out == nil {
		out = hookConfig{}
	}
	for ev, ms := range d {
		out[ev] = append(slices.Clip(out[ev]), ms...)
	}
	return out
}

// commands lists the commands, each with its event, for a question.
func (c hookConfig) commands() []string {
	var out []string
	for _, ev := range hookEvents {
		for _, m := range c[ev] {
			for _, h := range m.hooks {
				out = append(out, ev+": "+visible(h.command))
			}
		}
	}
	return out
}

// parseHooks reads a settings file's "hooks" object. An event agentloop
// does not run is a warning; a hook it cannot run as written is an error,
// so that no check the user counts on is silently skipped.
func parseHooks(raw json.RawMessage) (hookConfig, []string, error) {
	var events map[string]json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		return nil, nil, errors.New(typeError(err))
	}
	cfg, warnings := hookConfig{}, []string(nil)
	for _, ev := range slices.Sorted(maps.Keys(events)) {
		if !slices.Contains(hookEvents, ev) {
			warnings = append(warnings, fmt.Sprintf("hooks.%s: agentloop has no such event, so its hooks do not run (the events are %s)",
				ev, strings.Join(hookEvents, ", ")))
			continue
		}
		var groups []struct {
			Matcher string            `json:"matcher"`
			Hooks   []json.RawMessage `json:"hooks"`
		}
		if err := json.Unmarshal(events[ev], &groups); err != nil {
			return nil, nil, fmt.Errorf("%s: %s", ev, fieldError(err, "want an array of {\"matcher\": …, \"hooks\": […]}"))
		}
		for i, g := range groups {
			var m hookMatcher
			if g.Matcher != "" && g.Matcher != "*" {
				re, err := regexp.Compile("^(?:" + g.Matcher + ")$")
				if err != nil {
					return nil, nil, fmt.Errorf("%s[%d].matcher: %q is not a regular expression: %v", ev, i, g.Matcher, err)
				}
				m.match = re
			}
			for j, raw := range g.Hooks {
				h, err := parseHookCommand(raw)
				if err != nil {
					return nil, nil, fmt.Errorf("%s[%d].hooks[%d]: %w", ev, i, j, err)
				}
				m.hooks = append(m.hooks, h)
			}
			cfg[ev] = append(cfg[ev], m)
		}
	}
	return cfg, warnings, nil
}

// parseHookCommand reads {"type": "command", "command": …, "timeout": N}.
func parseHookCommand(raw json.RawMessage) (hookCommand, error) {
	var c struct {
		Type    string   `json:"type"`
		Command string   `json:"command"`
		Timeout *float64 `json:"timeout"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return hookCommand{}, errors.New(fieldError(err, "want an object"))
	}
	h := hookCommand{command: c.Command, timeout: defaultHookTimeout}
	switch {
	case c.Type != "command":
		return h, fmt.Errorf("type: %q: agentloop runs hooks of type \"command\"", c.Type)
	case strings.TrimSpace(c.Command) == "":
		return h, errors.New("command: missing")
	case c.Timeout == nil:
	case !(*c.Timeout > 0) || *c.Timeout > maxHookTimeout.Seconds():
		return h, fmt.Errorf("timeout: %v: want a number of seconds above 0, at most %v", *c.Timeout, maxHookTimeout.Seconds())
	default:
		h.timeout = time.Duration(*c.Timeout * float64(time.Second))
	}
	return h, nil
}

// fieldError words a decoding error with its field, or as want.
func fieldError(err error, want string) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return fmt.Sprintf("%s: want %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	return want
}

// A hookRunner runs a session's hooks, one at a time, on the loop's
// goroutine, as package agent calls its hooks.
type hookRunner struct {
	cfg        hookConfig
	dir        string   // the working directory: the hooks' and the cwd field's
	env        []string // childenv's, and the project directory
	mode       string   // --permission-mode
	transcript string   // the --session file, if any
	note       func(format string, args ...any)

	// stopActive is whether the last Stop hooks made the run go on.
	stopActive bool
	// context is what PreToolUse hooks added for the model, by call,
	// until the call's result takes it.
	context map[string]string
}

func newHookRunner(cfg hookConfig, dir string, o *options, note func(string, ...any)) *hookRunner {
	env := append(childenv.Default(), "AGENTLOOP_PROJECT_DIR="+dir, "CLAUDE_PROJECT_DIR="+dir)
	mode := o.builtin.mode
	if o.builtin.yes {
		mode = modeBypass // --yes is that mode
	}
	h := &hookRunner{cfg: cfg, dir: dir, env: env, mode: mode, note: note, context: map[string]string{}}
	if o.session != "" {
		h.transcript, _ = filepath.Abs(o.session)
	}
	return h
}

// A verdict is what the hooks of one event said, together.
type verdict struct {
	allow     bool   // PreToolUse: permissionDecision allow
	deny, ask string // PreToolUse: permissionDecision deny or ask, with the reasons
	input     json.RawMessage
	block     string // exit status 2's stderr, or decision block's reason
	context   string // additionalContext, or plain stdout where it counts
	failed    error  // the first hook that did not run to its end, or answered garbage
	halt      bool   // continue: false, which wins over a Stop hook's block
}

// fire runs the hooks of event whose matcher matches one of subjects, or
// all of them when subjects is nil, in order, with fields added to the
// common ones on stdin, and returns what they said.
func (h *hookRunner) fire(ctx context.Context, event string, subjects []string, fields map[string]any) verdict {
	var v verdict
	if h == nil || len(h.cfg[event]) == 0 {
		return v
	}
	in := map[string]any{"transcript_path": h.transcript, "cwd": h.dir, "hook_event_name": event, "permission_mode": h.mode}
	maps.Copy(in, fields)
	stdin, err := json.Marshal(in)
	if err != nil {
		v.failed = err
		return v
	}
	for _, m := range h.cfg[event] {
		if m.match != nil && subjects != nil && !slices.ContainsFunc(subjects, m.match.MatchString) {
			continue
		}
		for _, c := range m.hooks {
			if err := h.run(ctx, event, c, stdin, &v); err != nil {
				err = fmt.Errorf("the %s hook %s %w", event, shownLine([]string{shorten(c.command, 80)}), err)
				h.note("%s", visible(err.Error()))
				if v.failed == nil {
					v.failed = err
				}
			}
		}
	}
	return v
}

// run runs one hook and adds what it said to v. Its error says why the
// hook did not answer: it could not start, was killed, timed out, or wrote
// garbage.
func (h *hookRunner) run(ctx context.Context, event string, c hookCommand, stdin []byte, v *verdict) error {
	tctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, hookShell[0], append(hookShell[1:], c.command)...)
	var stdout, stderr cappedBuffer
	cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = h.dir, h.env, bytes.NewReader(stdin), &stdout, &stderr
	// At the timeout the hook's whole process group is killed, and the
	// wait for pipes a leftover process holds is bounded.
	killGroupOnCancel(cmd)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("was stopped: %w", ctx.Err())
	case tctx.Err() != nil:
		return fmt.Errorf("timed out after %v, and was killed", c.timeout)
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		reason := strings.TrimSpace(stderr.String())
		if reason == "" {
			reason = fmt.Sprintf("blocked by a %s hook", event)
		}
		v.block = join(v.block, reason)
		return nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		// Claude Code's non-blocking error: said, and the run goes on.
		h.note("the %s hook %s exited with status %d: %s", event, shownLine([]string{shorten(c.command, 80)}),
			ee.ExitCode(), visible(strings.TrimSpace(stderr.String())))
		return nil
	case err != nil: // it could not start, or a signal ended it
		return fmt.Errorf("failed: %w", err)
	}
	return h.read(event, stdout.String(), v)
}

// hookOutput is the JSON a hook may write on stdout, Claude Code's fields.
type hookOutput struct {
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	SystemMessage      string `json:"systemMessage"`
	HookSpecificOutput struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// read adds a hook's stdout, on exit status 0, to v: JSON decisions, or,
// for UserPromptSubmit and SessionStart, plain text as context.
func (h *hookRunner) read(event, stdout string, v *verdict) error {
	out := strings.TrimSpace(stdout)
	if !strings.HasPrefix(out, "{") {
		if event == "UserPromptSubmit" || event == "SessionStart" {
			v.context = join(v.context, out)
		}
		return nil
	}
	var o hookOutput
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		if _, syntax := err.(*json.SyntaxError); syntax {
			return fmt.Errorf("wrote stdout that starts as JSON but is not: %v", err)
		}
		return fmt.Errorf("wrote JSON with %s", fieldError(err, "a value of the wrong type"))
	}
	if o.SystemMessage != "" {
		h.note("%s hook: %s", event, visible(o.SystemMessage))
	}
	if o.Continue != nil && !*o.Continue {
		// Claude Code then stops: here the call or the prompt is refused,
		// and the run ends rather than go on for a Stop hook.
		reason := cmp.Or(o.StopReason, "a "+event+" hook said not to continue")
		switch event {
		case "PreToolUse":
			v.deny = join(v.deny, reason)
		case "UserPromptSubmit":
			v.block = join(v.block, reason)
		case "Stop":
			v.halt = true
		default:
			h.note("%s hook: %s (continue: false stops only a tool call, a prompt or a Stop hook's going on)", event, visible(reason))
		}
	}
	hs := o.HookSpecificOutput
	switch d := o.Decision; {
	case d == "":
	case d == "block" && event == "PreToolUse":
		v.deny = join(v.deny, cmp.Or(o.Reason, "denied by a PreToolUse hook"))
	case d == "block":
		v.block = join(v.block, cmp.Or(o.Reason, "blocked by a "+event+" hook"))
	case d == "approve" && event == "PreToolUse": // Claude Code's older word for allow
		v.allow = true
	default:
		return fmt.Errorf("wrote decision %q: want \"block\"", d)
	}
	switch d := hs.PermissionDecision; {
	case d == "":
	case event != "PreToolUse":
		return fmt.Errorf("wrote permissionDecision %q, which only a PreToolUse hook may", d)
	case d == "allow":
		v.allow = true
	case d == "deny":
		v.deny = join(v.deny, cmp.Or(hs.PermissionDecisionReason, "denied by a PreToolUse hook"))
	case d == "ask":
		v.ask = join(v.ask, cmp.Or(hs.PermissionDecisionReason, "a PreToolUse hook asks"))
	default:
		return fmt.Errorf("wrote permissionDecision %q: want allow, deny or ask", d)
	}
	if hs.UpdatedInput != nil {
		if event != "PreToolUse" || !bytes.HasPrefix(bytes.TrimSpace(hs.UpdatedInput), []byte("{")) {
			return errors.New("wrote updatedInput, which must be a PreToolUse hook's, and an object")
		}
		v.input = hs.UpdatedInput
	}
	v.context = join(v.context, hs.AdditionalContext)
	return nil
}

// join joins two texts with a blank line, either of which may be empty.
func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n\n" + b
}

// cappedBuffer keeps the first maxHookOutput bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxHookOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// hookSubjects are the names a matcher is tried on: the tool's, and Claude
// Code's for it, if it has one, so that "Bash" and "bash" both match bash.
func hookSubjects(name string) []string {
	if cc := permission.ClaudeCodeName(name); cc != "" {
		return []string{name, cc}
	}
	return []string{name}
}

// hookToolName is the tool_name a hook is told: Claude Code's name for a
// built-in tool that has one, so that its scripts read what they expect.
func hookToolName(name string) string {
	return cmp.Or(permission.ClaudeCodeName(name), name)
}

// toolGate returns the hook before each tool call: the PreToolUse hooks, then
// the permission policy, as Claude Code orders them. A hook's deny (or
// exit status 2) stops the call before any rule; its allow skips the
// question, though deny and ask rules still hold; its ask puts the call
// to the user; its updatedInput is what the rules check and the tool
// runs. A hook that fails denies the call: a check that did not run is
// not a pass.
func (s *session) toolGate(approve func(context.Context, llm.ToolUse, *permission.Policy) error) agent.Hook {
	return func(ctx context.Context, e agent.HookEvent) (agent.Decision, error) {
		if e.Point != agent.BeforeTool {
			return agent.Decision{}, nil
		}
		call := *e.Call
		v := s.hooks.fire(ctx, "PreToolUse", hookSubjects(call.Name), map[string]any{"session_id": e.Session,
			"tool_name": hookToolName(call.Name), "tool_input": call.Input, "tool_use_id": call.ID})
		switch {
		case v.failed != nil:
			return agent.Decision{Deny: v.failed.Error() + ", so the call was not run"}, nil
		case v.deny != "" || v.block != "":
			return agent.Decision{Deny: join(v.deny, v.block)}, nil
		}
		if v.input != nil {
			call.Input = v.input
		}
		p := s.builtins.current()
		if v.allow || v.ask != "" {
			p = &permission.Policy{Deny: p.Deny, Confirm: p.Confirm, AllowAll: true, Ask: p.Ask, Dir: p.Dir, Path: p.Path}
		}
		switch {
		case v.ask != "" && p.Ask == nil:
			return agent.Decision{Deny: v.ask + ": a PreToolUse hook asks the user about this call, and there is no one to ask: no terminal"}, nil
		case v.ask != "":
			p.Confirm = append(slices.Clone(p.Confirm), permission.Rule{Tool: call.Name})
			s.render.note("a PreToolUse hook asks: %s", visible(v.ask))
		}
		if err := approve(ctx, call, p); err != nil {
			return agent.Decision{Deny: err.Error()}, nil
		}
		if v.context != "" {
			s.hooks.context[call.ID] = v.context
		}
		return agent.Decision{Input: v.input}, nil
	}
}

// lifecycle returns the hook of the other events: PostToolUse,
// UserPromptSubmit, Stop and PreCompact.
func (s *session) lifecycle() agent.Hook {
	h := s.hooks
	return func(ctx context.Context, e agent.HookEvent) (agent.Decision, error) {
		switch e.Point {
		case agent.AfterTool:
			pre := h.context[e.Call.ID]
			delete(h.context, e.Call.ID)
			v := h.fire(ctx, "PostToolUse", hookSubjects(e.Call.Name), map[string]any{"session_id": e.Session,
				"tool_name": hookToolName(e.Call.Name), "tool_input": e.Call.Input, "tool_use_id": e.Call.ID,
				"tool_response": map[string]any{"content": llm.TextOf(e.Result.Content), "is_error": e.Result.IsError}})
			return agent.Decision{Context: join(pre, join(v.block, v.context))}, nil
		case agent.PromptSubmit:
			h.stopActive = false
			v := h.fire(ctx, "UserPromptSubmit", nil, map[string]any{"session_id": e.Session, "prompt": e.Prompt})
			return agent.Decision{Deny: v.block, Context: v.context}, nil
		case agent.BeforeStop:
			v := h.fire(ctx, "Stop", nil, map[string]any{"session_id": e.Session, "stop_hook_active": h.stopActive,
				"last_assistant_message": e.Text})
			if v.halt {
				v.block = ""
			}
			h.stopActive = v.block != ""
			return agent.Decision{Continue: v.block}, nil
		case agent.BeforeCompact:
			v := h.fire(ctx, "PreCompact", []string{"auto"}, map[string]any{"session_id": e.Session, "trigger": "auto",
				"custom_instructions": ""})
			if v.block != "" {
				h.note("PreCompact hook: %s", visible(v.block))
			}
		}
		return agent.Decision{}, nil
	}
}

// sessionStart runs the SessionStart hooks, with source "clear" after
// /clear, else "startup" or "resume" (a session with a conversation in
// it), and puts what they say for the model at the end of the system
// prompt, in place of what they said before.
func (s *session) sessionStart(ctx context.Context, source string) {
	if source == "" && s.cfg.History != nil && len(s.cfg.History.Messages()) > 0 {
		source = "resume"
	}
	source = cmp.Or(source, "startup")
	v := s.hooks.fire(ctx, "SessionStart", []string{source}, map[string]any{"session_id": s.cfg.ConversationID,
		"source": source, "model": s.o.model})
	if v.block != "" {
		s.hooks.note("SessionStart hook: %s", visible(v.block))
	}
	s.startContext = v.context
	s.cfg.System = s.system()
}
