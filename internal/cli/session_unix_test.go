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
