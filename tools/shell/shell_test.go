package shell

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runBash runs one bash call with cfg under ctx.
func runBash(ctx context.Context, t *testing.T, cfg Config, input map[string]any) (string, bool) {
	t.Helper()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(New(cfg)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(input)
	res := reg.Run(ctx, []llm.ToolUse{{ID: "toolu_1", Name: Name, Input: b}})[0]
	return llm.TextOf(res.Content), res.IsError
}

func TestBash(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		Dir:     dir,
		Env:     []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-ant-SECRET", "ANTHROPIC_BASE_URL=http://x", "AWS_SECRET=s3", "MY_TOKEN=t", "KEEP=kept"},
		Secrets: []string{"AWS_*", "MY_TOKEN"},
	}
	tests := []struct {
		name    string
		input   map[string]any
		want    string
		isError bool
	}{
		{"output and status", map[string]any{"command": "echo hello"}, "hello\n[exit status 0]", false},
		{"stderr combined, in order", map[string]any{"command": "echo out; echo err >&2; echo out2"}, "out\nerr\nout2\n[exit status 0]", false},
		{"failure", map[string]any{"command": "echo no; exit 3"}, "no\n[exit status 3]", true},
		{"no output", map[string]any{"command": "true"}, "(no output)\n[exit status 0]", false},
		{"no final newline", map[string]any{"command": "printf x"}, "x\n[exit status 0]", false},
		{"working directory", map[string]any{"command": "pwd"}, dir + "\n[exit status 0]", false},
		{"stdin is empty", map[string]any{"command": "cat; echo done"}, "done\n[exit status 0]", false},
		{"secrets are not in the environment", map[string]any{"command": "env | grep -E 'ANTHROPIC|AWS|TOKEN|KEEP' | sort"}, "KEEP=kept\n[exit status 0]", false},
		{"killed by a signal", map[string]any{"command": "kill -TERM $$"}, "(no output)\n[killed by signal terminated]", true},
		{"empty command", map[string]any{"command": "  "}, "the command is empty", true},
		{"timeout over the maximum", map[string]any{"command": "true", "timeout": 601}, "timeout 601 is over the maximum of 600 seconds", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isErr := runBash(t.Context(), t, cfg, tt.input)
			if diff := cmp.Diff(tt.want, got); diff != "" || isErr != tt.isError {
				t.Errorf("is_error %v, want %v; (-want +got):\n%s", isErr, tt.isError, diff)
			}
		})
	}
}

func TestHugeOutput(t *testing.T) {
	got, isErr := runBash(t.Context(), t, Config{MaxOutputBytes: 1000},
		map[string]any{"command": "echo START; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END"})
	if isErr {
		t.Fatal(got)
	}
	if !strings.HasPrefix(got, "START\nxxx") || !strings.HasSuffix(got, "xxx\nEND\n[exit status 0]") ||
		!strings.Contains(got, "x\n[… 4999011 bytes of output cut here …]\nx") || len(got) > 1100 {
		t.Errorf("got %d bytes: %q", len(got), got)
	}
}

func TestHeadTailUTF8(t *testing.T) {
	h := newHeadTail(10)
	h.Write([]byte(strings.Repeat("é", 20)))
	if got := h.String(); got != "éé\n[… 32 bytes of output cut here …]\néé" {
		t.Errorf("got %q", got)
	}
}

// TestEmptyEnvironment checks that an environment with nothing left after
// the filter stays empty, rather than becoming exec.Cmd's nil "inherit
// everything", which would hand bash this process's real key.
func TestEmptyEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-FROM-THE-PARENT")
	for _, env := range [][]string{{}, {"ANTHROPIC_API_KEY=x"}} {
		got, _ := runBash(t.Context(), t, Config{Dir: t.TempDir(), Env: env}, map[string]any{"command": "echo \"[$ANTHROPIC_API_KEY]\""})
		if want := "[]\n[exit status 0]"; got != want {
			t.Errorf("Env %q: bash printed %q, want %q", env, got, want)
		}
	}
}

func TestEnviron(t *testing.T) {
	got := Environ([]string{"A=1", "ANTHROPIC_AUTH_TOKEN=x", "GH_TOKEN=y", "GITHUB_TOKEN=z", "B=2"}, []string{"*_TOKEN"})
	if diff := cmp.Diff([]string{"A=1", "B=2"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
