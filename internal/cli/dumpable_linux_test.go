package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestEnvironmentHidden runs the real command as an unprivileged user (as
// nobody when the test runs as root, which can read any process) and has
// the model run a bash command that tries to read the command's
// environment, the key in it, from /proc/$PPID/environ, as the issue
// reproduced. The read must fail, the command's /proc files must be
// root's (the process is not dumpable), and bash's own must be the user's
// again (a child is dumpable after exec).
func TestEnvironmentHidden(t *testing.T) {
	const probe = `cat /proc/$PPID/environ >/dev/null 2>&1 && echo parent=readable || echo parent=denied
echo parent-owner=$(stat -c %u /proc/$PPID/environ)
echo self-owner=$(stat -c %u /proc/$$/environ)
echo uid=$(id -u)`
	input, _ := json.Marshal(map[string]string{"command": probe})
	h := newHarness(t,
		anthropictest.NewStream().ToolUse("toolu_p", "bash", string(input)).Stop("tool_use"),
		text("done"),
	)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "--tools", "shell", "--yes", "read the environment")
	uid := os.Getuid()
	if uid == 0 {
		// nobody must be able to run a copy of this binary, in a directory
		// it may enter.
		for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		copied := filepath.Join(dir, "agentloop.test")
		if err := copyFile(copied, exe); err != nil {
			t.Fatal(err)
		}
		uid = 65534
		cmd = exec.Command(copied, cmd.Args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: 65534}}
	}
	cmd.Dir = dir
	cmd.Env = []string{"AGENTLOOP_TEST_MAIN=1", "PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"ANTHROPIC_API_KEY=" + testKey, "ANTHROPIC_BASE_URL=" + h.srv.URL}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("agentloop: %v\n%s", err, out)
	}

	reqs := h.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	results := reqs[1].ToolResults()
	if len(results) != 1 || len(results[0].Content) == 0 {
		t.Fatalf("tool results = %+v, want the probe's", results)
	}
	got := results[0].Content[0].Text
	if strings.Contains(got, testKey) {
		t.Fatalf("bash read the key: %s", got)
	}
	var lines []string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "=") {
			lines = append(lines, l)
		}
	}
	u := strconv.Itoa(uid)
	want := []string{"parent=denied", "parent-owner=0", "self-owner=" + u, "uid=" + u}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("probe (-want +got):\n%s\nwhole result:\n%s", diff, got)
	}
}
