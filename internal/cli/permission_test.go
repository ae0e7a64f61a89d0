//go:build linux || darwin

package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestPermissionPTY answers the permission question on a real terminal:
// yes, no and always, with the diff or the command shown.
func TestPermissionPTY(t *testing.T) {
	bash := anthropictest.NewStream().Usage(10, 0, 0, 0).
		ToolUse("toolu_b", "bash", `{"command":"echo from-bash"}`).Stop("tool_use", 5)
	twoEdits := anthropictest.NewStream().Usage(10, 0, 0, 0).
		ToolUse("toolu_1", "edit_file", `{"path":"f.txt","old_string":"hello","new_string":"goodbye"}`).
		ToolUse("toolu_2", "write_file", `{"path":"g.txt","content":"new\n"}`).
		ToolUse("toolu_3", "edit_file", `{"path":"f.txt","old_string":"world","new_string":"moon"}`).Stop("tool_use", 5)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<h1>Fetched</h1>")
	}))
	defer page.Close()
	fetch := anthropictest.NewStream().Usage(10, 0, 0, 0).
		ToolUse("toolu_w", "web_fetch", fmt.Sprintf(`{"url":%q}`, page.URL)).Stop("tool_use", 5)
	for _, tc := range []struct {
		name    string
		args    []string
		replies []anthropictest.Reply
		// dialogue alternates what to wait for and what to type.
		dialogue []string
		file     string   // f.txt afterwards
		results  []string // a part of each tool_result of the second request
		errors   []bool
	}{
		{"yes", nil, []anthropictest.Reply{editReply(), text("done")},
			[]string{"edit_file wants to change f.txt:", "", "-hello", "", "+goodbye", "", "Allow?", "y\r"},
			"goodbye\nworld\n", []string{"edited f.txt"}, []bool{false}},
		{"no", nil, []anthropictest.Reply{editReply(), text("done")},
			[]string{"edit_file wants to change f.txt:", "", "Allow?", "n\r"},
			"hello\nworld\n", []string{"denied: the user said no"}, []bool{true}},
		{"a command", nil, []anthropictest.Reply{bash, text("done")},
			[]string{"bash wants to run a command in ", "", "$ echo from-bash", "", "this exact command", "yes\r"},
			"hello\nworld\n", []string{"from-bash\n[exit status 0]"}, []bool{false}},
		{"a URL", []string{"--tools", "web"}, []anthropictest.Reply{fetch, text("done")},
			[]string{"web_fetch wants to fetch " + page.URL, "", "every fetch from 127.0.0.1", "y\r"},
			"hello\nworld\n", []string{"# Fetched"}, []bool{false}},
		{"always", nil, []anthropictest.Reply{twoEdits, text("done")},
			// The first edit is asked about, the write too (another tool);
			// the second edit is not.
			[]string{"every edit_file call", "a\r", "write_file wants to change g.txt:", "", "+new", "", "Allow?", "y\r"},
			"goodbye\nworld\n", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			os.WriteFile("f.txt", []byte("hello\nworld\n"), 0o644)
			srv := anthropictest.NewServer(tc.replies...)
			defer srv.Close()
			p := startPTY(t, map[string]string{"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": srv.URL}, append(tc.args, "do it")...)
			at := 0
			for i := 0; i < len(tc.dialogue); i += 2 {
				at = p.expect(at, tc.dialogue[i])
				if tc.dialogue[i+1] != "" {
					p.send(tc.dialogue[i+1])
				}
			}
			p.expect(at, "done")
			if code := p.wait(); code != 0 {
				t.Errorf("exit status %d", code)
			}
			p.mu.Lock()
			out := p.out.String()
			p.mu.Unlock()
			if tc.name == "always" {
				if n := strings.Count(out, "Allow?"); n != 2 {
					t.Errorf("asked %d times, want 2 (the second edit_file was allowed by always):\n%s", n, out)
				}
				tc.file = "goodbye\nmoon\n"
				if b, _ := os.ReadFile("g.txt"); string(b) != "new\n" {
					t.Errorf("g.txt = %q", b)
				}
			}
			if b, _ := os.ReadFile("f.txt"); string(b) != tc.file {
				t.Errorf("f.txt = %q, want %q", b, tc.file)
			}
			res := srv.Requests()[1].ToolResults()
			for i, want := range tc.results {
				if i >= len(res) || res[i].IsError != tc.errors[i] || !strings.Contains(res[i].Content[0].Text, want) {
					t.Errorf("tool_results %+v, want %q (is_error %v)", res, want, tc.errors[i])
				}
			}
		})
	}
}

// TestPermissionREPL: in the REPL, the answer is read from the same
// input as the prompts, and the session goes on afterwards.
func TestPermissionREPL(t *testing.T) {
	t.Chdir(t.TempDir())
	os.WriteFile("f.txt", []byte("hello\nworld\n"), 0o644)
	srv := anthropictest.NewServer(editReply(), text("edited it"), text("second answer"))
	defer srv.Close()
	p := startPTY(t, map[string]string{"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": srv.URL})
	at := p.expect(0, "> ")
	p.send("edit f.txt\r")
	at = p.expect(at, "Allow?")
	p.send("y\r")
	at = p.expect(at, "edited it")
	at = p.expect(at, "> ")
	p.send("and now?\r")
	at = p.expect(at, "second answer")
	p.expect(at, "> ")
	p.send("/exit\r")
	if code := p.wait(); code != 0 {
		t.Errorf("exit status %d", code)
	}
	if b, _ := os.ReadFile("f.txt"); string(b) != "goodbye\nworld\n" {
		t.Errorf("f.txt = %q", b)
	}
	if got := srv.Requests()[2].Messages(); len(got) != 5 || got[4].Text != "and now?" {
		t.Errorf("the third request's messages: %+v", got)
	}
}

// TestPermissionInterrupt: Ctrl-C at the question ends the run, and the
// call does not run.
func TestPermissionInterrupt(t *testing.T) {
	t.Chdir(t.TempDir())
	os.WriteFile("f.txt", []byte("hello\nworld\n"), 0o644)
	srv := anthropictest.NewServer(editReply(), text("done"))
	defer srv.Close()
	p := startPTY(t, map[string]string{"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": srv.URL}, "do it")
	p.expect(0, "Allow?")
	p.send("\x03")
	if code := p.wait(); code != exitInterrupted {
		t.Errorf("exit status %d, want %d", code, exitInterrupted)
	}
	if b, _ := os.ReadFile("f.txt"); string(b) != "hello\nworld\n" {
		t.Errorf("f.txt = %q", b)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
