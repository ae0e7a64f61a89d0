//go:build linux

package shell

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gone reports whether process pid has ended, waiting up to 10 seconds
// for it to. The wait is on a pidfd, which becomes readable the moment the
// process exits: a process killed a moment ago may still be exiting (its
// files, the output pipe among them, are closed before it is a zombie).
func gone(t *testing.T, pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open: %v", err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 10_000)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// grandchild returns the pid a command printed on its first line.
func grandchild(t *testing.T, out string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.SplitN(out, "\n", 2)[0])
	if err != nil {
		t.Fatalf("no pid in %q", out)
	}
	return pid
}

// TestTimeoutKillsGroup: a command that times out is killed with its
// grandchild, a sleep that holds the output pipe; no process is left.
func TestTimeoutKillsGroup(t *testing.T) {
	got, isErr := runBash(t.Context(), t, Config{}, map[string]any{"command": "sleep 300 & echo $!; wait", "timeout": 1})
	if !isErr || !strings.HasSuffix(got, "\n[killed: the command timed out after 1s, and every process it started was killed]") {
		t.Errorf("got %q, is_error %v", got, isErr)
	}
	if pid := grandchild(t, got); !gone(t, pid) {
		t.Errorf("the sleep grandchild %d is still running", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestCancelKillsGroup: cancelling the call kills the whole group.
func TestCancelKillsGroup(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no fifo:", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	pids := make(chan int, 1)
	go func() {
		// Opening the fifo waits for the command to open it for writing.
		f, err := os.Open(fifo)
		if err != nil {
			pids <- 0
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		pid, _ := strconv.Atoi(strings.TrimSpace(line))
		pids <- pid
		cancel()
	}()
	// The handler itself, not the registry, which would stop waiting for
	// it as soon as ctx is cancelled: here the kill must be seen done.
	_, err := run(ctx, Config{DefaultTimeout: time.Minute, MaxOutputBytes: 100}, nil,
		Input{Command: "sleep 300 & echo $! > " + fifo + "; wait"})
	pid := <-pids
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if pid == 0 || !gone(t, pid) {
		t.Errorf("the sleep grandchild %d is still running", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestBackgroundKilled: a process left in the background is killed when
// the command ends. The group is killed before the output is drained, so
// the background process, which holds the output pipe, cannot keep the
// call waiting either; that is not timed here, since a test must not
// depend on the machine's speed.
func TestBackgroundKilled(t *testing.T) {
	got, isErr := runBash(t.Context(), t, Config{}, map[string]any{"command": "sleep 300 & echo $!"})
	if isErr || !strings.HasSuffix(got, "\n[exit status 0]") {
		t.Errorf("got %q, is_error %v", got, isErr)
	}
	if pid := grandchild(t, got); !gone(t, pid) {
		t.Errorf("the background sleep %d is still running", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
