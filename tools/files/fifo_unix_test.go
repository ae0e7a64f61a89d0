//go:build unix

package files

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSpecialFiles checks that a named pipe is refused at once: opening one
// blocks until a writer comes, whatever the call's context says.
func TestSpecialFiles(t *testing.T) {
	e := newEnv(t, nil)
	if err := syscall.Mkfifo(filepath.Join(e.dir, "fifo"), 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	for _, tt := range []struct {
		tool  string
		input in
	}{
		{"read_file", in{"path": "fifo"}},
		{"edit_file", in{"path": "fifo", "old_string": "a", "new_string": "b"}},
		{"write_file", in{"path": "fifo", "content": "x"}},
	} {
		got, isErr := e.text(tt.tool, tt.input)
		if !isErr || !strings.Contains(got, "fifo is not a regular file") {
			t.Errorf("%s on a named pipe = %q, %v; want it refused", tt.tool, got, isErr)
		}
	}
}
