//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestSessionUntrusted checks that a --session file that someone else may
// have written is not loaded: the model would take it as its own past
// turns. Nothing is sent, and the file stays as it was.
func TestSessionUntrusted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string) // given a saved session at path
		why   string
	}{
		{"writable by all", func(t *testing.T, path string) { chmod(t, path, 0o666) }, "others may write it (mode 0666)"},
		{"writable by the group", func(t *testing.T, path string) { chmod(t, path, 0o620) }, "others may write it (mode 0620)"},
		{"another user's", func(t *testing.T, path string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a file away")
			}
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "it belongs to another user (uid 65534)"},
		{"a symbolic link", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(path+".real", path); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link (to "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat.jsonl")
			h := newHarness(t, text("Hello."))
			h.run(strings.NewReader(""), "--session", path, "hi").check(t, 0)
			tc.setup(t, path)
			before, _ := os.ReadFile(path)

			r := h.run(strings.NewReader(""), "--session", path, "and now?")
			r.check(t, exitUsage)
			for _, want := range []string{"--session " + path, tc.why} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if n := len(h.srv.Requests()); n != 1 {
				t.Errorf("%d requests, want only the first run's", n)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("the refused run changed the file:\n%s", after)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestLockSession checks the --session lock with two real opens of its
// file: the second finds it held, naming the holder; once unlocked the
// file is gone and the lock free, as it is when a dead run left its file.
func TestLockSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	unlock, err := lockSession(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockSession(path)
	if want := fmt.Sprintf("it is in use by another agentloop (pid %d)", os.Getpid()); !errors.Is(err, errSessionBusy) || err.Error() != want {
		t.Errorf("second lock: %v, want %q", err, want)
	}
	unlock()
	if _, err := os.Lstat(lockName(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after unlock, the lock file: %v; want it removed", err)
	}
	// A run that died left its file, unlocked.
	if err := os.WriteFile(lockName(path), []byte("999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, err = lockSession(path)
	if err != nil {
		t.Fatalf("lock after a dead run: %v", err)
	}
	unlock()
}

// TestSessionLockedAcrossProcesses checks that a run on a --session file
// that a running agentloop, a real child process, holds stops at once with
// an error naming that process, before any request, instead of saving
// over its turn later; and that the file is free again once that run
// ends, with both runs' prompts in it.
func TestSessionLockedAcrossProcesses(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	arrived := make(chan struct{})
	h := newHarness(t, anthropictest.ReplyFunc(func(*anthropictest.Request) anthropictest.Reply {
		close(arrived)
		return anthropictest.NewStream().Usage(10, 0, 0, 0).Text("Once upon a time").Stall()
	}), text("The end."))
	cmd := exec.Command(exe, "--session", path, "tell me a story")
	cmd.Env = []string{"AGENTLOOP_TEST_MAIN=1", "ANTHROPIC_API_KEY=" + testKey, "ANTHROPIC_BASE_URL=" + h.srv.URL, "PATH=" + os.Getenv("PATH")}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case <-arrived: // the child holds the lock, and is in its turn
	case <-exited:
		t.Fatalf("the first run ended before its request: %v\n%s", waitErr, stderr.String())
	}

	r := h.run(strings.NewReader(""), "--session", path, "a second prompt")
	r.check(t, exitUsage)
	if want := fmt.Sprintf("--session %s cannot be used: it is in use by another agentloop (pid %d)", path, cmd.Process.Pid); !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if n := len(h.srv.Requests()); n != 1 {
		t.Errorf("%d requests, want only the first run's", n)
	}

	// Interrupted, the first run saves its turn and lets go.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-exited
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("first run: %v, want exit status %d\n%s", waitErr, exitInterrupted, stderr.String())
	}
	h.run(strings.NewReader(""), "--session", path, "and then?").check(t, 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tell me a story", "and then?"} {
		if !strings.Contains(string(b), p) {
			t.Errorf("the session lacks %q:\n%s", p, b)
		}
	}
	if _, err := os.Lstat(lockName(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file is left: %v", err)
	}
}

// TestContinueBusy checks that --continue on a session another run holds
// stops at once, naming it, rather than saving over its turns.
func TestContinueBusy(t *testing.T) {
	h, dir := sessionHarness(t, text("one"), text("never sent"))
	h.run(strings.NewReader(""), "hi").check(t, 0)
	names := sessionFiles(t, dir)
	unlock, err := lockSession(filepath.Join(dir, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	r := h.run(strings.NewReader(""), "-c", "more")
	r.check(t, exitUsage)
	id := strings.TrimSuffix(names[0], ".jsonl")
	if want := "session " + id + " cannot be used: it is in use by another agentloop"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
}

// TestPruneSessions checks that a session unchanged for the retention
// period is deleted at the start of a run, unless another run holds it,
// and that pruning runs at most once a day.
func TestPruneSessions(t *testing.T) {
	h, dir := sessionHarness(t, text("one"), text("two"), text("three"))
	h.run(strings.NewReader(""), "hi").check(t, 0)
	fresh := sessionFiles(t, dir)[0]
	old := time.Now().Add(-sessionRetention - time.Hour)
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"role":"user","content":[{"type":"text","text":"old"}]}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		return p
	}
	stale, held := write("11111111-0000-4000-8000-000000000000.jsonl"), write("22222222-0000-4000-8000-000000000000.jsonl")
	tmp := write(".33333333-0000-4000-8000-000000000000.jsonl.tmp123")
	unlock, err := lockSession(held)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	// Another project's, left empty by the pruning.
	other := filepath.Join(filepath.Dir(dir), "other-project")
	os.MkdirAll(other, 0o700)
	otherOld := filepath.Join(other, "44444444-0000-4000-8000-000000000000.jsonl")
	os.WriteFile(otherOld, nil, 0o600)
	os.Chtimes(otherOld, old, old)
	os.Remove(filepath.Join(filepath.Dir(dir), ".pruned")) // the first run pruned already

	h.run(strings.NewReader(""), "hi").check(t, 0)
	for _, p := range []string{stale, tmp, other} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was not pruned", filepath.Base(p))
		}
	}
	for _, p := range []string{held, filepath.Join(dir, fresh)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was pruned: %v", filepath.Base(p), err)
		}
	}
	// Within a day of that, a run does not prune again.
	stale = write(filepath.Base(stale))
	h.run(strings.NewReader(""), "hi").check(t, 0)
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("a second run on the same day pruned: %v", err)
	}
}

// TestOpenSession checks openSession, the REPL's /resume: it makes a
// saved session the conversation, by a start of its id, and holds its
// lock; an unknown id is an error that leaves the current one as it was.
func TestOpenSession(t *testing.T) {
	h, dir := sessionHarness(t, text("one"), text("two"), text("three"))
	h.run(strings.NewReader(""), "first").check(t, 0)
	first := strings.TrimSuffix(sessionFiles(t, dir)[0], ".jsonl")
	h.run(strings.NewReader(""), "second").check(t, 0)

	var stdout, stderr syncBuffer
	getenv := func(k string) string { return h.env[k] }
	o, err := parseFlags([]string{"third"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	o.baseURL = getenv("ANTHROPIC_BASE_URL") // as run sets it
	s, err := h.cli(nil, &stdout, &stderr).setup(t.Context(), o, testKey, "", strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	current := s.id
	if err := s.openSession("ffff"); err == nil || !strings.Contains(err.Error(), "no session ffff") || s.id != current {
		t.Fatalf("openSession(unknown) = %v, and the session is %s; want an error naming it, and %s kept", err, s.id, current)
	}
	if err := s.openSession(first[:6]); err != nil || s.id != first {
		t.Fatalf("openSession(%s) = %v, and the session is %s; want %s", first[:6], err, s.id, first)
	}
	if _, err := lockSession(filepath.Join(dir, first+".jsonl")); !errors.Is(err, errSessionBusy) {
		t.Errorf("the opened session is not locked: lockSession = %v", err)
	}
	if err := s.turn(t.Context(), o.prompt, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(h.srv.Requests()[2].Messages()); n != 3 {
		t.Errorf("the turn after openSession sent %d messages, want the opened session's 2 and the prompt", n)
	}
}

// TestConcurrentSessions checks runs at the same time in one directory:
// while one continues a session, a second --continue of it stops at once,
// and a new conversation is a session of its own; each is saved whole.
func TestConcurrentSessions(t *testing.T) {
	h, dir := sessionHarness(t, text("one"), anthropictest.NewStream().Usage(10, 0, 0, 0).Text("Once upon a time").Stall(), text("two"))
	h.run(strings.NewReader(""), "hi").check(t, 0)
	first := sessionFiles(t, dir)[0]

	h.terminals["stdout"] = true // the partial answer shows, and says the turn is under way
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- h.cli(nil, &stdout, &stderr).main(t.Context(), []string{"-c", "tell me a story"}, strings.NewReader(""), &stdout, &stderr)
	}()
	stdout.waitFor(t, "Once upon a time")

	r := h.run(strings.NewReader(""), "-c", "me too")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "in use by another agentloop") {
		t.Errorf("the second --continue does not say the session is in use:\n%s", r.stderr)
	}
	h.run(strings.NewReader(""), "a new one").check(t, 0)

	h.interrupts <- os.Interrupt
	if got := <-code; got != exitInterrupted {
		t.Fatalf("exit status %d, want %d; stderr:\n%s", got, exitInterrupted, stderr.String())
	}
	names := sessionFiles(t, dir)
	if len(names) != 2 {
		t.Fatalf("the sessions directory holds %q, want the two sessions alone", names)
	}
	for _, name := range names {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		want := []string{"a new one"}
		if name == first {
			want = []string{"hi", "tell me a story", "Once upon a time"}
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("session %s lacks %q:\n%s", name, w, b)
			}
		}
		if strings.Contains(string(b), "me too") {
			t.Errorf("session %s holds the refused run's prompt:\n%s", name, b)
		}
	}
}
