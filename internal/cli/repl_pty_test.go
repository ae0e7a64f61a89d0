//go:build linux || darwin

package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// replPTY starts the REPL on a pseudo-terminal, with args, against a fake
// API that gives replies, and returns it and the offset just past its
// first prompt.
func replPTY(t *testing.T, replies []anthropictest.Reply, args ...string) (*ptyCommand, int) {
	t.Helper()
	p := startPTY(t, noColor, replies, args...)
	return p, p.expect(0, "> ")
}

// exit ends the REPL with /exit and checks that it exits 0.
func (p *ptyCommand) exit() {
	p.t.Helper()
	p.send("/exit\r")
	p.exits(0)
}

// prompts returns the last user message of each request srv received.
func prompts(srv *anthropictest.Server) []string {
	var got []string
	for _, r := range srv.Requests() {
		msgs := r.Messages()
		got = append(got, msgs[len(msgs)-1].Text)
	}
	return got
}

// TestREPLPaste checks that a bracketed paste is one prompt, its newlines
// kept, shown as Claude Code's placeholder while it is edited, that a paste
// of one plain line is edited as typed, and that bracketed paste mode is on
// while the REPL runs and off when it ends.
func TestREPLPaste(t *testing.T) {
	p, at := replPTY(t, []anthropictest.Reply{text("one"), text("two")})
	p.send("look: \x1b[200~func f() {\r\treturn\r}\r\x1b[201~ ok?")
	at = p.expect(at, "look: [Pasted text #1 +2 lines] ok?")
	p.send("\r")
	at = p.expect(at, "one")
	at = p.expect(at, "> ")
	p.send("\x1b[200~plain words\x1b[201~ typed\r")
	at = p.expect(at, "two")
	p.expect(at, "> ")
	p.send("/exit\r")
	p.expect(p.expect(0, pasteOn), pasteOff)
	p.exits(0)
	want := []string{"look: func f() {\n\treturn\n}\n ok?", "plain words typed"}
	if diff := cmp.Diff(want, prompts(p.srv)); diff != "" {
		t.Errorf("prompts sent (-want +got):\n%s", diff)
	}
}

// TestREPLContinuation checks that a line ending in \ and Alt-Enter both go
// on to the next line, and that the prompt sent holds the newlines.
func TestREPLContinuation(t *testing.T) {
	p, at := replPTY(t, []anthropictest.Reply{text("Three lines.")})
	p.send("first \\\r")
	at = p.expect(at, "… ")
	p.send("second\x1b\r") // Alt-Enter
	at = p.expect(at, "… ")
	p.send("third\r")
	at = p.expect(at, "Three lines.")
	p.expect(at, "> ")
	p.exit()
	if diff := cmp.Diff([]string{"first \nsecond\nthird"}, prompts(p.srv)); diff != "" {
		t.Errorf("prompts sent (-want +got):\n%s", diff)
	}
}

// TestREPLAttach checks @path: a file the file tools may read goes with the
// prompt, labelled with its path; a path a --deny rule forbids, a missing
// one and one outside the working directory are refused with a message that
// names them, and nothing is sent.
func TestREPLAttach(t *testing.T) {
	outside := t.TempDir() + "/outside.txt"
	if err := os.WriteFile(outside, []byte("beyond\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for name, text := range map[string]string{"notes.txt": "alpha\nbeta\n", "secret.txt": "hunter2\n"} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, at := replPTY(t, []anthropictest.Reply{text("Read it.")}, "--deny", "read_file(secret.txt)")
	p.send("what is in @secret.txt?\r")
	at = p.expect(at, "@secret.txt: not allowed: the user's rule read_file(secret.txt) forbids this call")
	at = p.expect(at, "> ")
	p.send("what is in @missing.txt\r")
	at = p.expect(at, "@missing.txt: reading missing.txt: no such file or directory")
	at = p.expect(at, "> ")
	p.send("what is in @" + outside + "\r")
	at = p.expect(at, "@"+outside+": refused: "+outside+" is outside the working directory")
	at = p.expect(at, "> ")
	p.send("sum up @no\t") // Tab completes the path
	at = p.expect(at, "sum up @notes.txt")
	p.send("\r")
	at = p.expect(at, "Read it.")
	p.expect(at, "> ")
	p.exit()
	got := prompts(p.srv)
	if len(got) != 1 {
		t.Fatalf("%d prompts sent, want 1: %q", len(got), got)
	}
	want := "sum up @notes.txt\n\n<document source=\"notes.txt\">\n     1\talpha\n     2\tbeta\n</document>"
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("prompt sent (-want +got):\n%s", diff)
	}
}

// TestREPLBang checks !command: it asks as a bash call would, runs when
// allowed, shows its output escaped, and goes with the next prompt; a
// command the user refuses does not run.
func TestREPLBang(t *testing.T) {
	t.Chdir(t.TempDir())
	p, at := replPTY(t, []anthropictest.Reply{text("Seen.")}, "--sandbox", "off")
	p.send("!touch refused\r")
	at = p.expect(at, "$ touch refused")
	at = p.expect(at, "Allow? [y/N]")
	p.send("n\r")
	at = p.expect(at, "not allowed: the user said no")
	at = p.expect(at, "> ")
	p.send("!printf 'hi\\033]0;PWNED\\007'\r")
	at = p.expect(at, "Allow? [y/N]")
	p.send("y\r")
	at = p.expect(at, `hi\x1b]0;PWNED\a`)
	at = p.expect(at, "[exit status 0]")
	at = p.expect(at, "> ")
	p.send("what did it print?\r")
	at = p.expect(at, "Seen.")
	p.expect(at, "> ")
	p.exit()
	if _, err := os.Stat("refused"); err == nil {
		t.Error("the refused command ran")
	}
	if strings.Contains(p.output(), "\x1b]0;PWNED") {
		t.Error("the command's output reached the terminal raw")
	}
	want := "<bash-input>printf 'hi\\033]0;PWNED\\007'</bash-input>\n<bash-output>hi\x1b]0;PWNED\a\n[exit status 0]</bash-output>\n\nwhat did it print?"
	if diff := cmp.Diff([]string{want}, prompts(p.srv)); diff != "" {
		t.Errorf("prompts sent (-want +got):\n%s", diff)
	}
}

// TestREPLShiftTab checks that Shift-Tab cycles the permission modes, shows
// each, keeps the line typed so far, and that each mode rules the calls
// that follow: acceptEdits writes without asking, plan asks for a plan and
// refuses edits, bypassPermissions runs commands without asking.
func TestREPLShiftTab(t *testing.T) {
	t.Chdir(t.TempDir())
	p, at := replPTY(t, []anthropictest.Reply{
		toolCall("write_file", `{"path": "a.txt", "content": "A"}`), text("Wrote a."),
		toolCall("write_file", `{"path": "b.txt", "content": "B"}`), text("Planned."),
		toolCall("bash", `{"command": "touch c.txt"}`), text("Touched c."),
	}, "--sandbox", "off")
	p.send("write a\x1b[Z")
	at = p.expect(at, "permission mode: acceptEdits")
	p.send("\r") // the line typed before Shift-Tab is kept
	at = p.expect(at, "Wrote a.")
	at = p.expect(at, "> ")
	p.send("\x1b[Z")
	at = p.expect(at, "permission mode: plan")
	p.send("write b\r")
	at = p.expect(at, "Planned.")
	at = p.expect(at, "> ")
	p.send("\x1b[Z")
	at = p.expect(at, "permission mode: bypassPermissions")
	p.send("touch c\r")
	at = p.expect(at, "Touched c.")
	at = p.expect(at, "> ")
	p.send("\x1b[Z")
	p.expect(at, "permission mode: default")
	p.exit()
	if strings.Contains(p.output(), "Allow?") {
		t.Errorf("a call asked:\n%s", p.output())
	}
	for name, want := range map[string]bool{"a.txt": true, "b.txt": false, "c.txt": true} {
		if _, err := os.Stat(name); (err == nil) != want {
			t.Errorf("%s written: %v, want %v", name, err == nil, want)
		}
	}
	reqs := p.srv.Requests()
	if diff := cmp.Diff("write a", prompts(p.srv)[0]); diff != "" {
		t.Errorf("first prompt (-want +got):\n%s", diff)
	}
	for i, req := range reqs {
		if plan := strings.Contains(systemOf(t, req), "Plan mode is on"); plan != (i == 2 || i == 3) {
			t.Errorf("request %d asks for a plan: %v", i+1, plan)
		}
	}
}

// TestREPLModelCostCompact checks /model (shown, switched by alias, the
// conversation kept), /cost, and /compact, which summarises the earlier
// turns at once.
func TestREPLModelCostCompact(t *testing.T) {
	var replies []anthropictest.Reply
	for _, s := range []string{"one", "two", "three", "four", "five", "six", "<summary>We counted.</summary>", "<summary>We counted.</summary>", "<summary>We counted.</summary>", "seven"} {
		// The usage the fake's count_tokens would find: the system
		// prompt and the tools take most of it.
		replies = append(replies, anthropictest.NewStream().Usage(2000, 0, 0, 0).Text(s).Stop("end_turn", 5))
	}
	p, at := replPTY(t, replies, "--compaction", "client")
	p.send("/model\r")
	at = p.expect(at, "model: claude-sonnet-5-5")
	at = p.expect(at, "> ")
	p.send("/model haiku\r")
	at = p.expect(at, "(model: claude-haiku-5-5)")
	at = p.expect(at, "> ")
	for _, s := range []string{"one", "two", "three", "four", "five", "six"} {
		p.send("say " + s + "\r")
		at = p.expect(at, s)
		at = p.expect(at, "> ")
	}
	p.send("/cost\r")
	at = p.expect(at, "6 runs: ")
	at = p.expect(at, "> ")
	p.send("/compact\r")
	at = p.expect(at, "(compacted from about ")
	at = p.expect(at, "> ")
	p.send("go on\r")
	at = p.expect(at, "seven")
	p.expect(at, "> ")
	p.exit()
	reqs := p.srv.Requests()
	for i, r := range reqs {
		params, err := r.Params()
		if err != nil {
			t.Fatal(err)
		}
		if params.Model != "claude-haiku-5-5" {
			t.Errorf("request %d went to %s", i+1, params.Model)
		}
	}
	if n := len(reqs[5].Messages()); n != 11 {
		t.Errorf("the sixth turn sent %d messages, want 11", n)
	}
	last := reqs[len(reqs)-1].Messages()
	if len(last) >= 13 || !strings.Contains(last[0].Text, "We counted.") {
		t.Errorf("the turn after /compact sent %d messages, the first %q; want the summary first, and fewer", len(last), last[0].Text)
	}
}

// toolCall is a reply that calls tool with input.
func toolCall(tool, input string) anthropictest.Reply {
	return anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_"+tool, tool, input).Stop("tool_use", 5)
}

// TestREPLShiftTabFromPlan checks that a session started in plan mode says
// so, and that leaving plan mode with Shift-Tab says the write tools are
// still not there.
func TestREPLShiftTabFromPlan(t *testing.T) {
	p := startPTY(t, nil, nil, "--permission-mode", "plan")
	at := p.expect(0, "permission mode: plan")
	at = p.expect(at, "> ")
	p.send("\x1b[Z")
	p.expect(at, "permission mode: bypassPermissions: every call runs without asking, unless a --deny rule forbids it (but this session started in plan mode, so it has only the read-only tools)")
	p.exit()
}
