//go:build linux || darwin

package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// ptyCommand is the command under test, running on a pseudo-terminal.
type ptyCommand struct {
	t    *testing.T
	srv  *anthropictest.Server // the fake API it talks to
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  strings.Builder
	more chan struct{} // signalled after each read
	done chan struct{} // closed when the terminal closes
}

// noColor is startPTY's env for output compared as plain text.
var noColor = map[string]string{"NO_COLOR": "1"}

// startPTY starts the command with args on a new pseudo-terminal, as its
// controlling terminal, so that a ^C typed into it is a real SIGINT,
// against a fake API that gives replies (p.srv, closed when the test
// ends), with the variables of env besides the key and the API's URL.
func startPTY(t *testing.T, env map[string]string, replies []anthropictest.Reply, args ...string) *ptyCommand {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := anthropictest.NewServer(replies...)
	t.Cleanup(srv.Close)
	cmd := exec.Command(exe, args...)
	cmd.Env = []string{"AGENTLOOP_TEST_MAIN=1", "TERM=xterm", "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_API_KEY=" + testKey, "ANTHROPIC_BASE_URL=" + srv.URL}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	p := &ptyCommand{t: t, srv: srv, cmd: cmd, tty: tty, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
	})
	return p
}

// expect waits until the output, from offset from, contains s, and returns
// the offset just past it.
func (p *ptyCommand) expect(from int, s string) int {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if i := strings.Index(out[from:], s); i >= 0 {
			return from + i + len(s)
		}
		select {
		case <-p.more:
		case <-p.done:
			p.t.Fatalf("terminal closed before %q appeared; output:\n%s", s, out)
		case <-ctx.Done():
			p.t.Fatalf("%q did not appear; output:\n%s", s, out)
		}
	}
}

func (p *ptyCommand) send(s string) {
	if _, err := io.WriteString(p.tty, s); err != nil {
		p.t.Fatal(err)
	}
}

// wait returns the command's exit status.
func (p *ptyCommand) wait() int {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0
}

// exits waits for the command to end and checks its exit status.
func (p *ptyCommand) exits(want int) {
	p.t.Helper()
	if code := p.wait(); code != want {
		p.t.Errorf("exit status %d, want %d", code, want)
	}
}

// output returns what the terminal showed.
func (p *ptyCommand) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// TestPTY runs the REPL on a real pseudo-terminal: the terminal check, a
// conversation, the spinner, Ctrl-C interrupting a turn, and a second
// Ctrl-C exiting.
func TestPTY(t *testing.T) {
	arrived := make(chan struct{})
	p := startPTY(t, nil, []anthropictest.Reply{
		text("Hello from the fake API."),
		anthropictest.ReplyFunc(func(*anthropictest.Request) anthropictest.Reply {
			close(arrived)
			return anthropictest.Replay(nil).Stall()
		}),
	})

	at := p.expect(0, "> ")
	p.send("hello\r")
	at = p.expect(at, "Hello from the fake API.")
	at = p.expect(at, "> ")
	p.send("think forever\r")
	<-arrived
	// On a terminal the spinner shows while the model thinks.
	at = p.expect(at, "thinking…")
	p.send("\x03") // Ctrl-C: the terminal sends SIGINT
	at = p.expect(at, "(interrupted)")
	at = p.expect(at, "> ")
	p.send("\x03")
	p.expect(at, pasteOff) // the terminal is given back as it was
	p.exits(exitInterrupted)
	if strings.Contains(p.output(), testKey) {
		t.Error("the key was printed")
	}
}

// TestPTYLineEditing checks the REPL's line editing on a real terminal:
// Left moves the cursor, Up recalls the last prompt, Ctrl-R searches the
// earlier ones, and no escape code reaches the model.
func TestPTYLineEditing(t *testing.T) {
	p := startPTY(t, nil, []anthropictest.Reply{text("one"), text("two"), text("three"), text("four")})
	at := p.expect(0, "> ")
	p.send("helo\x1b[Dl\r") // Left, then the missing l
	at = p.expect(at, "one")
	at = p.expect(at, "> ")
	p.send("\x1b[A\r") // Up: the last prompt again
	at = p.expect(at, "two")
	at = p.expect(at, "> ")
	p.send("another\r")
	at = p.expect(at, "three")
	at = p.expect(at, "> ")
	p.send("\x12hel\r") // Ctrl-R: the last prompt with "hel" in it
	at = p.expect(at, "four")
	p.expect(at, "> ")
	p.send("/exit\r")
	p.exits(0)
	if diff := cmp.Diff([]string{"hello", "hello", "another", "hello"}, prompts(p.srv)); diff != "" {
		t.Errorf("prompts sent (-want +got):\n%s", diff)
	}
}

// TestPTYDiscardErased checks that on a terminal the partial text of a turn
// that failed mid-stream and was retried is erased before the retry's
// text: the cursor goes back to where the turn began and the screen is
// cleared from there.
func TestPTYDiscardErased(t *testing.T) {
	p := startPTY(t, nil, []anthropictest.Reply{
		anthropictest.NewStream().Text("Parti").ErrorEvent("overloaded_error", "Overloaded"),
		text("Whole."),
	}, "hi")
	at := p.expect(0, "Parti")
	at = p.expect(at, "\r\x1b[J")
	p.expect(at, "Whole.")
	p.exits(0)
}

// TestPTYResumedHistory checks that in a resumed --session, Up recalls the
// prompts of the earlier runs.
func TestPTYResumedHistory(t *testing.T) {
	path := t.TempDir() + "/chat.jsonl"
	h := newHarness(t, text("Noted."))
	h.run(strings.NewReader(""), "--session", path, "remember the number 42").check(t, 0)

	p := startPTY(t, nil, []anthropictest.Reply{text("It was 42.")}, "--session", path)
	at := p.expect(0, "resuming")
	at = p.expect(at, "> ")
	p.send("\x1b[A\r")
	at = p.expect(at, "It was 42.")
	p.expect(at, "> ")
	p.send("\x04") // Ctrl-D ends the session
	p.exits(0)
	msgs := p.srv.Requests()[0].Messages()
	if got := msgs[len(msgs)-1].Text; got != "remember the number 42" {
		t.Errorf("Up recalled %q, want the resumed session's prompt", got)
	}
}

// TestPTYEscapes checks on a real terminal that nothing a tool or the
// model sends reaches it raw: read_file (which runs without asking) of a
// file that clears the screen, paints a fake prompt and sets the window
// title shows those sequences escaped, and so does the model's answer.
func TestPTYEscapes(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("evil.txt", []byte("\x1b]0;PWNED\x07\x1b[2J\x1b[Hagentloop$ \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPTY(t, nil, []anthropictest.Reply{
		anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_1", "read_file", `{"path":"evil.txt"}`).Stop("tool_use", 5),
		text("\x1b]2;RETITLED\x07\x1b[31mDone.")}, "read evil.txt")
	at := p.expect(0, `\x1b]0;PWNED\a\x1b[2J\x1b[Hagentloop$`)
	p.expect(at, `\x1b]2;RETITLED\a\x1b[31mDone.`)
	p.exits(0)
	out := p.output()
	for _, raw := range []string{"\x1b]", "\x07", "\x1b[2J", "\x1b[H", "\x1b[31m"} {
		if strings.Contains(out, raw) {
			t.Errorf("the terminal got %q raw:\n%q", raw, out)
		}
	}
}

// TestPTYSummary checks that a one-shot run on a real terminal streams its
// whole answer, narration included, and ends with the summary line.
func TestPTYSummary(t *testing.T) {
	p := startPTY(t, noColor, []anthropictest.Reply{
		anthropictest.NewStream().Usage(10, 0, 0, 0).Text("Step 1: adding.").
			ToolUse("toolu_1", "calculator", `{"a": 3, "b": 5, "operation": "add"}`).Stop("tool_use", 5),
		text("Done: 8."),
	}, "--tools", "calculator", "add 3 and 5")
	at := p.expect(0, "Step 1: adding.")
	at = p.expect(at, "Done: 8.")
	p.expect(at, "2 turns · 30 tokens · $0.0001 · 0 files changed")
	p.exits(0)
}
