package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/tools/sandbox"
)

// bashReply asks for one bash call of command.
func bashReply(command string) anthropictest.Reply {
	return anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_1", "bash", `{"command":`+quoteJSON(command)+`}`).Stop("tool_use", 5)
}

func quoteJSON(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestSandboxBash: by default, where the kernel can, bash writes in the
// working directory but not outside it; --sandbox off lifts that.
func TestSandboxBash(t *testing.T) {
	if err := sandbox.Check(); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		args    []string
		outside bool // the write outside happens
	}{
		{nil, false},
		{[]string{"--sandbox", "workspace"}, false},
		{[]string{"--sandbox", "off"}, true},
	} {
		// The temporary directory is writable too: out is outside it.
		work, out := t.TempDir(), t.TempDir()
		t.Setenv("TMPDIR", t.TempDir())
		t.Chdir(work)
		h := newHarness(t, bashReply("echo in > in.txt; echo out > "+out+"/x; cat in.txt"), text("done"))
		h.run(strings.NewReader(""), append(tc.args, "--yes", "write")...).check(t, 0)
		res := h.srv.Requests()[1].ToolResults()
		if len(res) != 1 || !strings.Contains(res[0].Content[0].Text, "in\n") {
			t.Fatalf("%q: tool_results %+v", tc.args, res)
		}
		_, err := os.Stat(filepath.Join(out, "x"))
		if got := err == nil; got != tc.outside {
			t.Errorf("%q: the write outside happened: %v, want %v (%s)", tc.args, got, tc.outside, res[0].Content[0].Text)
		}
		if !tc.outside && !strings.Contains(res[0].Content[0].Text, "Permission denied") {
			t.Errorf("%q: the model is not told why the write failed: %s", tc.args, res[0].Content[0].Text)
		}
		if sys := systemOf(t, h.srv.Requests()[0]); tc.outside != strings.Contains(sys, "bash is not confined") {
			t.Errorf("%q: the system prompt does not say how bash runs:\n%s", tc.args, sys)
		}
	}
}

// TestSandboxUnsupported: where the kernel cannot confine, the default is
// off with a notice, and asking for workspace is a usage error.
func TestSandboxUnsupported(t *testing.T) {
	t.Chdir(t.TempDir())
	check := sandboxCheck
	t.Cleanup(func() { sandboxCheck = check })
	sandboxCheck = func() error { return errors.New("sandbox: not supported: no Landlock here") }

	h := newHarness(t, text("ok"))
	r := h.run(strings.NewReader(""), "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "bash runs unconfined: sandbox: not supported: no Landlock here") {
		t.Errorf("no notice that bash is unconfined:\n%s", r.stderr)
	}
	if sys := systemOf(t, h.srv.Requests()[0]); !strings.Contains(sys, "bash is not confined") {
		t.Errorf("the system prompt does not say bash is unconfined:\n%s", sys)
	}

	r = newHarness(t, text("ok")).run(strings.NewReader(""), "--sandbox", "off", "hi")
	r.check(t, 0)
	if strings.Contains(r.stderr, "unconfined") {
		t.Errorf("--sandbox off still gives the notice:\n%s", r.stderr)
	}
	r = newHarness(t).run(strings.NewReader(""), "--sandbox", "workspace", "hi")
	r.check(t, 2)
	if !strings.Contains(r.stderr, "--sandbox workspace: sandbox: not supported") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestSandboxFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sandbox", "strict", "hi"}, `--sandbox "strict": the modes are workspace and off`},
		{[]string{"--sandbox", "off", "--sandbox-net", "hi"}, "--sandbox-net gives a sandbox network access, but --sandbox is off"},
	} {
		r := newHarness(t).run(strings.NewReader(""), tc.args...)
		r.check(t, 2)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
	}
}
