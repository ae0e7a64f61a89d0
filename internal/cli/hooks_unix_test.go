//go:build unix

package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHookTimeoutKillsGroup: at its timeout a hook is killed with all it
// started. The hook's background sleep holds a FIFO open for writing, so
// the test's read of it ends only when the sleep is gone.
func TestHookTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	gone := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo) // waits for the sleep to open it
		if err == nil {
			_, err = io.Copy(io.Discard, f) // EOF: the sleep has exited
			f.Close()
		}
		gone <- err
	}()
	script := `sleep 1000 > "$AGENTLOOP_PROJECT_DIR/fifo" & wait`
	h := newHarness(t, bashCall("echo ran"), text("done"))
	r := h.run(strings.NewReader(""), "--yes", "--settings", hookSettings(t, dir, "PreToolUse", "", script, 0.2), "go")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "timed out after 200ms, and was killed") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if err := <-gone; err != nil {
		t.Fatal(err)
	}
}
