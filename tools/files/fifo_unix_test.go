//go:build unix

package files

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// mkfifo makes a named pipe at name in dir, or skips the test.
func mkfifo(t *testing.T, dir, name string) {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
}

// TestSpecialFiles checks that a named pipe is refused at once: opening one
// blocks until a writer comes, whatever the call's context says. Before
// grep refused it, grep on a pipe hung, and held its slot in the registry
// for good.
func TestSpecialFiles(t *testing.T) {
	e := newEnv(t, nil)
	mkfifo(t, e.dir, "fifo")
	for _, tt := range []struct {
		tool  string
		input in
	}{
		{"read_file", in{"path": "fifo"}},
		{"edit_file", in{"path": "fifo", "old_string": "a", "new_string": "b"}},
		{"write_file", in{"path": "fifo", "content": "x"}},
		{"grep", in{"pattern": "x", "path": "fifo"}},
	} {
		got, isErr := e.text(tt.tool, tt.input)
		if !isErr || !strings.Contains(got, "fifo is not a regular file") {
			t.Errorf("%s on a named pipe = %q, %v; want it refused", tt.tool, got, isErr)
		}
	}
}

// TestGrepManyPipes checks that more grep calls on pipes than the registry
// runs at once all come back refused: none holds a slot.
func TestGrepManyPipes(t *testing.T) {
	e := newEnv(t, nil)
	mkfifo(t, e.dir, "fifo")
	var calls []llm.ToolUse
	for i := range 12 {
		calls = append(calls, llm.ToolUse{ID: fmt.Sprint("toolu_", i), Name: "grep", Input: json.RawMessage(`{"pattern":"x","path":"fifo"}`)})
	}
	for i, res := range e.reg.Run(t.Context(), calls) {
		if got := llm.TextOf(res.Content); !res.IsError || !strings.Contains(got, "not a regular file") {
			t.Errorf("call %d = %q, %v; want it refused", i, got, res.IsError)
		}
	}
}

// TestGrepSkipsPipes checks that a search of a directory passes over a
// named pipe in it and searches the files.
func TestGrepSkipsPipes(t *testing.T) {
	e := newEnv(t, map[string]string{"a.txt": "x marks\n", "z.txt": "x again\n"})
	mkfifo(t, e.dir, "m.fifo")
	got, isErr := e.text("grep", in{"pattern": "x"})
	if want := "a.txt:1:x marks\nz.txt:1:x again\n"; isErr || got != want {
		t.Errorf("grep = %q, %v; want %q", got, isErr, want)
	}
}

// TestSwappedForPipe checks that a file swapped for a named pipe after its
// path was checked is refused, not waited on: the type is checked on what
// was opened, and the open does not wait for a writer.
func TestSwappedForPipe(t *testing.T) {
	for _, tt := range []struct {
		tool  string
		input in
	}{
		{"read_file", in{"path": "f"}},
		{"edit_file", in{"path": "f", "old_string": "a", "new_string": "b"}},
		{"grep", in{"pattern": "a", "path": "f"}},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			e := newEnv(t, map[string]string{"f": "a\n"})
			testHookLocated = func() {
				testHookLocated = nil
				if err := os.Remove(filepath.Join(e.dir, "f")); err != nil {
					t.Error(err)
				}
				if err := syscall.Mkfifo(filepath.Join(e.dir, "f"), 0o644); err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookLocated = nil }()
			got, isErr := e.text(tt.tool, tt.input)
			if diff := cmp.Diff("f is not a regular file (p---------); the file tools work only on files", got); !isErr || diff != "" {
				t.Errorf("%s, is_error %v (-want +got):\n%s", tt.tool, isErr, diff)
			}
		})
	}
}

// TestPipeIgnoreFiles checks that glob and grep pass over a .gitignore
// that is a named pipe, in the directory searched or below it, instead of
// waiting on it for good.
func TestPipeIgnoreFiles(t *testing.T) {
	e := newEnv(t, map[string]string{"a.txt": "x\n", "sub/b.txt": "x\n"})
	mkfifo(t, e.dir, ".gitignore")
	mkfifo(t, filepath.Join(e.dir, "sub"), ".gitignore")
	for _, tt := range []struct {
		tool  string
		input in
		want  string
	}{
		{"glob", in{"pattern": "**/b.txt"}, "sub/b.txt\n"},
		{"grep", in{"pattern": "x"}, "a.txt:1:x\nsub/b.txt:1:x\n"},
	} {
		got, isErr := e.text(tt.tool, tt.input)
		if isErr || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.tool, got, isErr, tt.want)
		}
	}
}
