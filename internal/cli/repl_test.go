package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestREPL drives the interactive session through pipes, with stdin
// declared a terminal.
func TestREPL(t *testing.T) {
	h := newHarness(t, text("Hi Ada."), text("You are Ada."), text("Fresh start."))
	h.terminals["stdin"] = true
	in := "my name is Ada\n\n/usage\nwho am I?\n/clear\nhello\n/bogus\n/help\n/exit\nnever sent\n"
	r := h.run(strings.NewReader(in), "--context-limit", "5000")
	r.check(t, 0)
	if diff := cmp.Diff("Hi Ada.\nYou are Ada.\nFresh start.\n", r.stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	for _, want := range []string{"/help for the commands", "1 run: ", "$0.0001", "of the 5000 that trigger compaction",
		"conversation cleared", "unknown command /bogus", "/exit            end the session"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	reqs := h.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var lens []int
	for _, req := range reqs {
		lens = append(lens, len(req.Messages()))
	}
	// The conversation carries to the second turn; /clear empties it.
	if diff := cmp.Diff([]int{1, 3, 1}, lens); diff != "" {
		t.Errorf("messages per request (-want +got):\n%s", diff)
	}
}

// TestREPLInterrupt checks that Ctrl-C during a turn interrupts only that
// turn, and that the session goes on.
func TestREPLInterrupt(t *testing.T) {
	arrived := make(chan struct{})
	h := newHarness(t,
		anthropictest.ReplyFunc(func(*anthropictest.Request) anthropictest.Reply {
			close(arrived)
			return anthropictest.Replay(nil).Stall()
		}),
		text("Still here."),
	)
	h.terminals["stdin"] = true
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "think forever\n")
		<-arrived
		h.interrupts <- os.Interrupt
		io.WriteString(pw, "are you there?\n")
		pw.Close()
	}()
	r := h.run(pr)
	r.check(t, 0)
	if !strings.Contains(r.stderr, "(interrupted)") {
		t.Errorf("stderr does not say the turn was interrupted:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "Still here.") {
		t.Errorf("the session did not go on after the interrupt:\n%s", r.stdout)
	}
	// The interrupted turn left a history the API accepts.
	if err := anthropictest.CheckRequest(h.srv.Requests()[1].Body); err != nil {
		t.Errorf("the request after an interrupt breaks the API's rules: %v", err)
	}
}

// TestREPLDoubleInterrupt checks that two Ctrl-C in a row exit with 130,
// whether or not a turn is running.
func TestREPLDoubleInterrupt(t *testing.T) {
	t.Run("at the prompt", func(t *testing.T) {
		h := newHarness(t)
		h.terminals["stdin"] = true
		pr, pw := io.Pipe()
		defer pw.Close()
		stderr := &syncBuffer{}
		code := make(chan int, 1)
		go func() {
			var stdout syncBuffer
			code <- h.cli(pr, &stdout, stderr).main(context.Background(), nil, pr, &stdout, stderr)
		}()
		stderr.waitFor(t, "> ")
		h.interrupts <- os.Interrupt
		stderr.waitFor(t, "Ctrl-C again")
		h.interrupts <- os.Interrupt
		if got := <-code; got != exitInterrupted {
			t.Errorf("exit status %d, want %d; stderr:\n%s", got, exitInterrupted, stderr.String())
		}
	})
	t.Run("during a turn", func(t *testing.T) {
		arrived := make(chan struct{})
		h := newHarness(t, anthropictest.ReplyFunc(func(*anthropictest.Request) anthropictest.Reply {
			close(arrived)
			return anthropictest.Replay(nil).Stall()
		}))
		h.terminals["stdin"] = true
		pr, pw := io.Pipe()
		defer pw.Close()
		go func() {
			io.WriteString(pw, "think forever\n")
			<-arrived
			h.interrupts <- os.Interrupt
			h.interrupts <- os.Interrupt
		}()
		h.run(pr).check(t, exitInterrupted)
	})
}

// TestREPLSession checks that the REPL resumes a --session file and saves
// it after each turn.
func TestREPLSession(t *testing.T) {
	path := t.TempDir() + "/s.jsonl"
	h := newHarness(t, text("one"), text("two"))
	h.run(strings.NewReader(""), "--session", path, "first").check(t, 0)
	h.terminals["stdin"] = true
	r := h.run(strings.NewReader("second\n"), "--session", path)
	r.check(t, 0)
	if !strings.Contains(r.stderr, "resuming") {
		t.Errorf("stderr does not say the session resumed:\n%s", r.stderr)
	}
	if n := len(h.srv.Requests()[1].Messages()); n != 3 {
		t.Errorf("second turn sent %d messages, want 3", n)
	}
}

// TestScannerRefusesEscapes checks that a line typed on a terminal without
// line editing, holding an arrow key's escape code, is asked for again
// rather than sent to the model; piped input is taken as it is.
func TestScannerRefusesEscapes(t *testing.T) {
	in := "\x1b[A\x1b[Dhello\nworld\n"
	var prompts strings.Builder
	typed := newScanner(strings.NewReader(in), &prompts, true)
	if line, err := typed.readLine("> "); line != "world" || err != nil {
		t.Errorf("typed: readLine = %q, %v; want the second line", line, err)
	}
	if !strings.Contains(prompts.String(), "escape codes") {
		t.Errorf("no word about the refused line: %q", prompts.String())
	}
	piped := newScanner(strings.NewReader(in), io.Discard, false)
	if line, _ := piped.readLine("> "); line != "\x1b[A\x1b[Dhello" {
		t.Errorf("piped: readLine = %q, want the line as it is", line)
	}
}

// TestKeyFilter checks what the line editor's filter hands liner for the
// keys liner cannot read, and what it reports of each line end, whatever
// the reads the input arrives in.
func TestKeyFilter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads []string
		want  string
		ends  []bool // true: Shift-Tab
		lines map[string]string
	}{
		{"plain keys", []string{"hi\x1b[D\r"}, "hi\x1b[D\r", []bool{false}, nil},
		{"alt-enter", []string{"a\x1b\rb\r"}, "a\\\rb\r", []bool{false, false}, nil},
		{"shift-tab", []string{"ab\x1b[Z"}, "ab\r", []bool{true}, nil},
		{"paste of one line", []string{"\x1b[200~plain\x1b[201~\r"}, "plain\r", []bool{false}, nil},
		{"paste of lines", []string{"x \x1b[200~a\r\nb\rc\x1b[201~"}, "x [Pasted text #1 +2 lines]", nil,
			map[string]string{"x [Pasted text #1 +2 lines]": "x a\nb\nc"}},
		{"paste split across reads", []string{"\x1b[200~a\tb", "\x1b[2", "01~\r"}, "[Pasted text #1]\r", []bool{false},
			map[string]string{"[Pasted text #1] [Pasted text #9]": "a\tb [Pasted text #9]"}},
		{"a paste holds keys", []string{"\x1b[200~\x1b[Z\r\x1b\r\x1b[201~"}, "[Pasted text #1 +1 line]", nil,
			map[string]string{"[Pasted text #1 +1 line]": "\x1b[Z\n\x1b\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &keyFilter{pastes: map[string]string{}}
			pr, pw := io.Pipe()
			go func() {
				for _, r := range tc.reads {
					pw.Write([]byte(r))
				}
				pw.Close()
			}()
			var out bytes.Buffer
			k.run(pr, nopCloser{&out})
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("liner reads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ends, k.ends); diff != "" {
				t.Errorf("line ends (-want +got):\n%s", diff)
			}
			for line, want := range tc.lines {
				if got := k.expand(line); got != want {
					t.Errorf("expand(%q) = %q, want %q", line, got, want)
				}
			}
		})
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestAtPaths(t *testing.T) {
	for in, want := range map[string][]string{
		"explain @main.go":                  {"main.go"},
		"@a.go and @b/c.go, then @a.go?":    {"a.go", "b/c.go"},
		`read @"my notes.txt" please`:       {"my notes.txt"},
		"mail me at me@example.com, or @ x": nil,
		"@":                                 nil,
	} {
		if diff := cmp.Diff(want, atPaths(in)); diff != "" {
			t.Errorf("atPaths(%q) (-want +got):\n%s", in, diff)
		}
	}
}

// TestREPLResume checks /resume over the --session files: it lists the
// transcripts beside --session, those /clear set aside among them, and goes
// on with the one picked; a line ending in \ goes on to the next.
func TestREPLResume(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/chat.jsonl"
	h := newHarness(t, text("Noted."), text("Fresh."), text("It was 42."))
	h.terminals["stdin"] = true
	in := "remember \\\nthe number 42\n/clear\nhello\n/resume\n/resume 9\n/resume 2\nwhat was the number?\n"
	r := h.run(strings.NewReader(in), "--session", path)
	r.check(t, 0)
	for _, want := range []string{"  1  ", path + "  hello\n", "  2  ", dir + "/chat.1.jsonl  remember the number 42\n", "/resume 9: there are 2 transcripts",
		"(resumed " + dir + "/chat.1.jsonl: 2 messages)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	reqs := h.srv.Requests()
	if got := reqs[0].Messages()[0].Text; got != "remember \nthe number 42" {
		t.Errorf("first prompt %q, want its two lines", got)
	}
	if n := len(reqs[2].Messages()); n != 3 {
		t.Errorf("the turn after /resume sent %d messages, want 3", n)
	}
}
