package files

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/agentloop/agentloop/tool"
)

// WriteInput is write_file's input.
type WriteInput struct {
	Path    string `json:"path" jsonschema:"the file to write, relative to the working directory or absolute"`
	Content string `json:"content" jsonschema:"the whole new content of the file"`
}

// EditInput is edit_file's input.
type EditInput struct {
	Path       string `json:"path" jsonschema:"the file to edit, relative to the working directory or absolute"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace, including its indentation; it must occur exactly once in the file unless replace_all is true"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_string, not just one (default false)"`
}

const writeDescription = `Write a file inside the working directory or an added directory (paths outside them are refused), replacing it if it exists.
Creates missing parent directories. The write is atomic: the content goes to a temporary file that is then renamed over the target, so the file is never left half-written. An existing file keeps its permissions.
Prefer edit_file to change part of an existing file; use write_file for new files or complete rewrites.`

const editDescription = `Replace text in a file inside the working directory or an added directory (paths outside them are refused).
old_string must match the file's text exactly, whitespace and indentation included, and must occur exactly once unless replace_all is true; otherwise the edit is refused and the error says how many times it matched, so add surrounding lines to make it unique. Read the file with read_file first and copy the text without the line-number prefix.
The file's line endings (LF or CRLF) and permissions are kept. The write is atomic.`

// writeQueue is the one queue of write_file and edit_file calls: each reads
// a file and renames a new one in its place, so a write and an edit of one
// file in one turn would otherwise race, and one of them be lost. Calls run
// in the order the model wrote them.
const writeQueue = "tools/files: writes"

// WriteFile returns the write_file tool.
func (w *Workspace) WriteFile() *tool.Tool {
	t := must(tool.New("write_file", writeDescription, func(ctx context.Context, in WriteInput) (string, error) {
		c, err := w.planWrite(in, false)
		if err != nil {
			return "", err
		}
		if err := c.commit(); err != nil {
			return "", err
		}
		verb := "wrote"
		if c.exists {
			verb = "overwrote"
		}
		return fmt.Sprintf("%s %s (%d bytes)", verb, in.Path, len(in.Content)), nil
	}))
	t.Queue = writeQueue
	return t
}

// EditFile returns the edit_file tool.
func (w *Workspace) EditFile() *tool.Tool {
	t := must(tool.New("edit_file", editDescription, func(ctx context.Context, in EditInput) (string, error) {
		c, err := w.planEdit(in)
		if err != nil {
			return "", err
		}
		if err := c.commit(); err != nil {
			return "", err
		}
		s := ""
		if c.count > 1 {
			s = "s"
		}
		return fmt.Sprintf("edited %s: replaced %d occurrence%s", in.Path, c.count, s), nil
	}))
	t.Queue = writeQueue
	return t
}

// A change is a planned write of one file: what it holds now and what it
// will hold.
type change struct {
	r        *root
	rel      string
	display  string
	old, new string
	exists   bool
	mode     fs.FileMode
	count    int // edits: occurrences replaced
}

// planWrite plans in; the file's old content is read only for a preview,
// whose diff needs it: the write itself does not.
func (w *Workspace) planWrite(in WriteInput, preview bool) (*change, error) {
	r, rel, err := w.locateWrite(in.Path)
	if err != nil {
		return nil, err
	}
	c := &change{r: r, rel: rel, display: w.display(r, rel), new: in.Content, mode: 0o644}
	fi, err := r.r.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("writing %s: %w", in.Path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", in.Path)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s)", in.Path, fi.Mode().Type())
	}
	c.exists, c.mode = true, fi.Mode().Perm()
	if preview && fi.Size() <= maxEditBytes {
		if f, _, err := openFile(r, rel, in.Path, "writing"); err == nil {
			b, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
			if err == nil && len(b) <= maxEditBytes {
				c.old = string(b)
			}
			f.Close()
		}
	}
	return c, nil
}

func (w *Workspace) planEdit(in EditInput) (*change, error) {
	if in.OldString == "" {
		return nil, errors.New("old_string is empty: to create a file, use write_file")
	}
	if in.OldString == in.NewString {
		return nil, errors.New("old_string and new_string are the same: there is nothing to change")
	}
	r, rel, err := w.locateWrite(in.Path)
	if err != nil {
		return nil, err
	}
	f, fi, err := openFile(r, rel, in.Path, "editing")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > maxEditBytes {
		return nil, fmt.Errorf("%s has %d bytes, more than edit_file loads (%d); use bash, for example sed", in.Path, fi.Size(), maxEditBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("editing %s: %w", in.Path, err)
	case len(b) > maxEditBytes:
		return nil, fmt.Errorf("%s grew past %d bytes while it was read; use bash, for example sed", in.Path, maxEditBytes)
	}
	if binary(b[:min(len(b), sniffBytes)]) {
		return nil, fmt.Errorf("%s is a binary file; edit_file edits only text", in.Path)
	}
	text, old, repl := string(b), in.OldString, in.NewString
	n := strings.Count(text, old)
	if n == 0 && strings.Contains(text, "\r\n") && !strings.Contains(old, "\r\n") {
		// The model writes LF; the file has CRLF. Match in the file's own
		// line endings.
		old = toCRLF(old)
		n = strings.Count(text, old)
	}
	if crlfAt(text, old) {
		repl = toCRLF(repl)
	}
	switch {
	case n == 0:
		return nil, fmt.Errorf("old_string was not found in %s; it must match exactly, whitespace and indentation included (read the file again with read_file)", in.Path)
	case n > 1 && !in.ReplaceAll:
		return nil, fmt.Errorf("old_string matches %d times in %s; include more surrounding lines to make it unique, or set replace_all to replace all %d", n, in.Path, n)
	}
	if !in.ReplaceAll {
		n = 1
	}
	return &change{r: r, rel: rel, display: w.display(r, rel), old: text, new: strings.Replace(text, old, repl, n),
		exists: true, mode: fi.Mode().Perm(), count: n}, nil
}

// crlfAt reports whether the lines new_string adds in place of old in
// text end in CRLF: where old spans a line break, as that one does; else,
// as most of text's lines do.
func crlfAt(text, old string) bool {
	if i := strings.IndexByte(old, '\n'); i >= 0 {
		return i > 0 && old[i-1] == '\r'
	}
	crlf := strings.Count(text, "\r\n")
	return crlf > strings.Count(text, "\n")-crlf
}

// toCRLF turns the lone LFs of s into CRLF.
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// commit writes the change atomically: to a temporary file beside the
// target, then renamed over it. Both go through the root, so a symbolic
// link swapped in since the check cannot lead them outside it.
func (c *change) commit() error {
	if dir := filepath.Dir(c.rel); dir != "." {
		if err := c.r.r.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("writing %s: creating its directory: %w", c.display, err)
		}
	}
	tmp := filepath.Join(filepath.Dir(c.rel), "."+filepath.Base(c.rel)+".tmp-"+rand.Text()[:10])
	f, err := c.r.r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, c.mode)
	if err != nil {
		return fmt.Errorf("writing %s: %w", c.display, err)
	}
	_, err = f.WriteString(c.new)
	if err == nil {
		err = f.Chmod(c.mode) // the umask must not change an edited file's mode
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.r.r.Rename(tmp, c.rel)
	}
	if err != nil {
		c.r.r.Remove(tmp)
		return fmt.Errorf("writing %s: %w", c.display, err)
	}
	return nil
}

// diff is the change as a unified diff.
func (c *change) diff() string {
	d := udiff.Unified("a/"+c.display, "b/"+c.display, c.old, c.new)
	if !c.exists {
		d = strings.Replace(d, "--- a/"+c.display, "--- /dev/null", 1)
	}
	return d
}

// Preview returns, for a write_file or edit_file call, the unified diff
// of the change it would make, so that a person can approve it. It returns
// an error if the call would fail, saying why, and ok false for a call of
// another tool.
func (w *Workspace) Preview(name string, input json.RawMessage) (diff string, ok bool, err error) {
	var c *change
	switch name {
	case "write_file":
		var in WriteInput
		if err = json.Unmarshal(input, &in); err == nil {
			c, err = w.planWrite(in, true)
		}
	case "edit_file":
		var in EditInput
		if err = json.Unmarshal(input, &in); err == nil {
			c, err = w.planEdit(in)
		}
	default:
		return "", false, nil
	}
	if err != nil {
		return "", true, err
	}
	return c.diff(), true, nil
}
