package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// TestReadDirs: a read-only directory can be read, globbed and grepped,
// but not written or edited, and it is not among the Roots.
func TestReadDirs(t *testing.T) {
	e := newEnv(t, map[string]string{"a.txt": "a\n"})
	skill := filepath.Join(filepath.Dir(e.dir), "skill")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("steps\n"), 0o644)
	ws := e.reopen(Config{Dir: e.dir, ReadDirs: []string{skill}})
	md := filepath.Join(skill, "SKILL.md")
	for _, tc := range []struct {
		tool    string
		input   in
		want    string
		isError bool
	}{
		{"read_file", in{"path": md}, "steps", false},
		{"glob", in{"pattern": "*.md", "path": skill}, "SKILL.md", false},
		{"grep", in{"pattern": "steps", "path": skill}, "steps", false},
		{"write_file", in{"path": md, "content": "evil\n"}, "which the file tools may read but not write", true},
		{"write_file", in{"path": filepath.Join(skill, "new.txt"), "content": "evil\n"}, "may read but not write", true},
		{"edit_file", in{"path": md, "old_string": "steps", "new_string": "evil"}, "may read but not write", true},
		{"write_file", in{"path": "b.txt", "content": "b\n"}, "", false},
	} {
		got, isErr := e.text(tc.tool, tc.input)
		if isErr != tc.isError || !strings.Contains(got, tc.want) {
			t.Errorf("%s %v: %q (is_error %v), want %q", tc.tool, tc.input, got, isErr, tc.want)
		}
	}
	if b, _ := os.ReadFile(md); string(b) != "steps\n" {
		t.Errorf("SKILL.md was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(skill, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("a file was made in a read-only directory: %v", err)
	}
	if got := ws.Roots(); len(got) != 1 || got[0] != ws.Dir() {
		t.Errorf("Roots() = %v, want the working directory alone", got)
	}
}

// TestReadDirInside: a read-only directory inside the working directory
// stays read-only, while the rest of the working directory is writable.
func TestReadDirInside(t *testing.T) {
	e := newEnv(t, map[string]string{".claude/skills/s/SKILL.md": "steps\n", "a.txt": "a\n"})
	e.reopen(Config{Dir: e.dir, ReadDirs: []string{".claude/skills/s"}})
	if got, isErr := e.text("write_file", in{"path": ".claude/skills/s/SKILL.md", "content": "evil\n"}); !isErr || !strings.Contains(got, "may read but not write") {
		t.Errorf("write into the read-only directory: %q (is_error %v)", got, isErr)
	}
	if got, isErr := e.text("write_file", in{"path": ".claude/other.txt", "content": "ok\n"}); isErr {
		t.Errorf("write beside it: %q", got)
	}
	if got := e.read(".claude/skills/s/SKILL.md"); got != "steps\n" {
		t.Errorf("SKILL.md = %q", got)
	}
}

// reopen gives e a workspace of cfg, in place of its own.
func (e *env) reopen(cfg Config) *Workspace {
	e.t.Helper()
	ws, err := Open(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ws.Close() })
	e.ws, e.reg = ws, tool.NewRegistry(tool.Config{})
	if err := e.reg.Register(ws.Tools()...); err != nil {
		e.t.Fatal(err)
	}
	return ws
}
