package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tools/sandbox"
)

// TestSandboxed runs the bash tool under a sandbox: writes in the
// workspace work, a write outside fails with the kernel's error, and the
// model is told the rules in the tool's description.
func TestSandboxed(t *testing.T) {
	if err := sandbox.Check(); err != nil {
		t.Skip(err)
	}
	dir, out := t.TempDir(), t.TempDir()
	cfg := Config{Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, Sandbox: &sandbox.Policy{Write: []string{dir}}}
	got, isErr := runBash(context.Background(), t, cfg, map[string]any{"command": "echo hi > in && cat in && touch " + out + "/x"})
	if !isErr || !strings.Contains(got, "hi\n") || !strings.Contains(got, "Permission denied") {
		t.Errorf("got %q (is_error %v), want hi, then the write outside denied", got, isErr)
	}
	if _, err := os.Stat(filepath.Join(out, "x")); !os.IsNotExist(err) {
		t.Errorf("the write outside happened: %v", err)
	}
	if desc := New(cfg).Spec().Description; !strings.Contains(desc, "sandbox") || !strings.Contains(desc, dir) {
		t.Errorf("the description does not tell the model the sandbox's rules: %s", desc)
	}
	if desc := New(Config{}).Spec().Description; !strings.Contains(desc, "NOT confined") {
		t.Errorf("an unconfined tool's description does not say so: %s", desc)
	}
}
