package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStdinWithPrompt checks that piped stdin and a prompt argument are
// both sent: the argument, then stdin as an attached document.
func TestStdinWithPrompt(t *testing.T) {
	for _, tc := range []struct {
		name, stdin, want string
	}{
		{"a diff", "diff --git a/x b/x\n+new line\n", "review this\n\n<document source=\"stdin\">\ndiff --git a/x b/x\n+new line\n</document>"},
		{"nothing", "", "review this"},
		{"blank", " \n\n", "review this"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, text("Looks good."))
			h.run(strings.NewReader(tc.stdin), "review", "this").check(t, 0)
			if diff := cmp.Diff(tc.want, h.srv.Requests()[0].Messages()[0].Text); diff != "" {
				t.Errorf("prompt (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPiped checks which stdins are read for an attachment: pipes and
// files, not devices such as /dev/null, whose reader might wait forever.
func TestPiped(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(file, []byte("x"), 0o600)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	c := &cli{isTerminal: func(any) bool { return false }}
	for _, tc := range []struct {
		name string
		in   io.Reader
		want bool
	}{
		{"a pipe", r, true},
		{"a file", f, true},
		{"/dev/null", null, false},
		{"a reader", strings.NewReader("x"), true},
	} {
		if got := c.piped(tc.in); got != tc.want {
			t.Errorf("%s: piped = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHelpCommand checks that "agentloop help" prints the help, while
// "agentloop -- help" and a longer prompt are prompts.
func TestHelpCommand(t *testing.T) {
	h := newHarness(t, text("ok"), text("ok"))
	r := h.run(strings.NewReader(""), "help")
	r.check(t, 0)
	if r.stdout != helpText() {
		t.Errorf("agentloop help printed %q, want the --help text", r.stdout)
	}
	h.run(strings.NewReader(""), "--", "help").check(t, 0)
	h.run(strings.NewReader(""), "help", "me").check(t, 0)
	var got []string
	for _, req := range h.srv.Requests() {
		got = append(got, req.Messages()[0].Text)
	}
	if diff := cmp.Diff([]string{"help", "help me"}, got); diff != "" {
		t.Errorf("prompts sent (-want +got):\n%s", diff)
	}
}

// TestUsageUnknownModel checks that /usage does not price a model it has
// no price for at $0.
func TestUsageUnknownModel(t *testing.T) {
	h := newHarness(t, text("ok"))
	h.terminals["stdin"] = true
	r := h.run(strings.NewReader("hi\n/usage\n"), "--model", "claude-from-the-future-9")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "1 run: 10 input tokens") || !strings.Contains(r.stderr, "output tokens, cost unknown\n") {
		t.Errorf("/usage does not say the cost is unknown:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "$0") {
		t.Errorf("/usage prices an unknown model:\n%s", r.stderr)
	}
}

// TestPlurals checks that counts of one read as one.
func TestPlurals(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 model turns"}, {1, "1 model turn"}, {2, "2 model turns"}} {
		if got := plural(tc.n, "model turn", "model turns"); got != tc.want {
			t.Errorf("plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
