package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a workspace on a temp directory, with a sibling directory
// outside it.
type env struct {
	t       *testing.T
	dir     string // the working directory
	outside string // a directory beside it, not a root
	ws      *Workspace
	reg     *tool.Registry
}

func newEnv(t *testing.T, files map[string]string, addDirs ...string) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{t: t, dir: filepath.Join(base, "work"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{e.dir, e.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(e.outside, "secret.txt"), []byte("outside secret\n"), 0o644)
	for name, content := range files {
		e.write(name, content)
	}
	for i, d := range addDirs {
		addDirs[i] = filepath.Join(base, d)
		os.MkdirAll(addDirs[i], 0o755)
	}
	ws, err := Open(Config{Dir: e.dir, AddDirs: addDirs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	e.ws = ws
	e.reg = tool.NewRegistry(tool.Config{})
	if err := e.reg.Register(ws.Tools()...); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(name, content string) {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// call runs one call and returns its result.
func (e *env) call(name string, input any) llm.ToolResult {
	e.t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.reg.Run(e.t.Context(), []llm.ToolUse{{ID: "toolu_1", Name: name, Input: b}})[0]
}

// text runs one call and returns its text and whether it failed.
func (e *env) text(name string, input any) (string, bool) {
	e.t.Helper()
	res := e.call(name, input)
	return llm.TextOf(res.Content), res.IsError
}

type in = map[string]any

func TestReadFile(t *testing.T) {
	var long strings.Builder
	for i := 1; i <= 3000; i++ {
		long.WriteString("line\n")
	}
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
	e := newEnv(t, map[string]string{
		"a.txt":     "one\ntwo\nthree\n",
		"noeol.txt": "one\ntwo",
		"crlf.txt":  "one\r\ntwo\r\n",
		"empty.txt": "",
		"long.txt":  long.String(),
		"wide.txt":  strings.Repeat("x", 100_000) + "\nnext\n",
		"bin.dat":   "ELF\x00\x01\x02binary",
		"img.png":   png,
		"latin.txt": "caf\xe9\n",
		"dir/x.txt": "x\n",
	})
	tests := []struct {
		name    string
		input   in
		want    string // the whole text, or with wantPre its start
		prefix  bool
		isError bool
	}{
		{"whole", in{"path": "a.txt"}, "     1\tone\n     2\ttwo\n     3\tthree\n", false, false},
		{"no final newline", in{"path": "noeol.txt"}, "     1\tone\n     2\ttwo\n", false, false},
		{"offset and limit", in{"path": "a.txt", "offset": 2, "limit": 1},
			"     2\ttwo\n\n[shown: lines 2 to 2 of a 14-byte file, which goes on; call read_file with offset 3 to read more]", false, false},
		{"absolute path", in{"path": filepath.Join(e.dir, "a.txt"), "limit": 1}, "     1\tone\n\n[shown", true, false},
		{"CRLF", in{"path": "crlf.txt"}, "     1\tone\n     2\ttwo\n[the file has CRLF line endings; edit_file keeps them]\n", false, false},
		{"empty", in{"path": "empty.txt"}, "(the file is empty)", false, false},
		{"huge file is cut", in{"path": "long.txt"}, "", false, false},
		{"offset past the end", in{"path": "a.txt", "offset": 9}, "offset 9 is past the end: a.txt has 3 lines", false, true},
		{"negative", in{"path": "a.txt", "offset": -1}, "offset and limit must not be negative", false, true},
		{"binary", in{"path": "bin.dat"}, "bin.dat is a binary file (application/octet-stream, 12 bytes); read_file shows only text and images", false, true},
		{"not UTF-8", in{"path": "latin.txt"}, "latin.txt is a binary file", true, true},
		{"directory", in{"path": "dir"}, "dir is a directory; use glob to list its files", false, true},
		{"missing", in{"path": "nope.txt"}, "reading nope.txt: no such file or directory", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isErr := e.text("read_file", tt.input)
			if isErr != tt.isError {
				t.Fatalf("is_error = %v, want %v: %s", isErr, tt.isError, got)
			}
			switch {
			case tt.name == "huge file is cut":
				if !strings.HasSuffix(got, "[shown: lines 1 to 2000 of a 15000-byte file, which goes on; call read_file with offset 2001 to read more]") ||
					!strings.Contains(got, "  2000\tline\n") || strings.Contains(got, "2001\t") {
					t.Errorf("huge file: got %d bytes ending %q", len(got), got[max(0, len(got)-200):])
				}
			case tt.prefix:
				if !strings.HasPrefix(got, tt.want) {
					t.Errorf("got %q, want it to start with %q", got, tt.want)
				}
			default:
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}

	t.Run("long line is cut", func(t *testing.T) {
		got, _ := e.text("read_file", in{"path": "wide.txt"})
		want := "     1\t" + strings.Repeat("x", 2000) + "… [line cut at 2000 bytes]\n     2\tnext\n"
		if got != want {
			t.Errorf("got %d bytes %.80q…, want the line cut and the next one whole", len(got), got)
		}
	})
	t.Run("a 32 MB file reads its first lines only", func(t *testing.T) {
		e := newEnv(t, nil)
		line := strings.Repeat("0123456789", 10) + "\n"
		os.WriteFile(filepath.Join(e.dir, "huge.txt"), []byte(strings.Repeat(line, 32<<20/len(line))), 0o644)
		got, isErr := e.text("read_file", in{"path": "huge.txt", "offset": 100, "limit": 10000})
		if isErr || !strings.HasPrefix(got, "   100\t0123") || len(got) > maxOutputBytes+2*len(line)+200 ||
			!strings.Contains(got, "call read_file with offset ") {
			t.Errorf("got %d bytes: %.100q … %q", len(got), got, got[max(0, len(got)-150):])
		}
	})
	t.Run("image", func(t *testing.T) {
		res := e.call("read_file", in{"path": "img.png"})
		img, ok := res.Content[0].(llm.Image)
		if res.IsError || !ok || img.MediaType != "image/png" || img.Data == "" {
			t.Errorf("result = %+v, want a PNG image block", res)
		}
	})
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t, map[string]string{"old.sh": "echo old\n"})
	os.Chmod(filepath.Join(e.dir, "old.sh"), 0o755)

	got, isErr := e.text("write_file", in{"path": "new/deep/file.txt", "content": "hello\n"})
	if isErr || got != "wrote new/deep/file.txt (6 bytes)" || e.read("new/deep/file.txt") != "hello\n" {
		t.Errorf("creating with parents: %q, is_error %v", got, isErr)
	}
	got, isErr = e.text("write_file", in{"path": "old.sh", "content": "echo new\n"})
	if isErr || got != "overwrote old.sh (9 bytes)" || e.read("old.sh") != "echo new\n" {
		t.Errorf("overwriting: %q, is_error %v", got, isErr)
	}
	if fi, _ := os.Stat(filepath.Join(e.dir, "old.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after overwrite = %v, want 0755 kept", fi.Mode().Perm())
	}
	got, isErr = e.text("write_file", in{"path": "new", "content": "x"})
	if !isErr || got != "new is a directory" {
		t.Errorf("writing a directory: %q, is_error %v", got, isErr)
	}
	// The temporary files are gone.
	for _, d := range []string{e.dir, filepath.Join(e.dir, "new/deep")} {
		entries, _ := os.ReadDir(d)
		for _, en := range entries {
			if strings.Contains(en.Name(), ".tmp-") {
				t.Errorf("temporary file %s left behind", en.Name())
			}
		}
	}
}

func TestEditFile(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		input   in
		want    string // the result text
		isError bool
		after   string // the file afterwards
	}{
		{"once", "a\nb\nc\n", in{"old_string": "b", "new_string": "B"}, "edited f: replaced 1 occurrence", false, "a\nB\nc\n"},
		{"multi-line", "func f() {\n\treturn 1\n}\n", in{"old_string": "\treturn 1\n}", "new_string": "\treturn 2\n}"},
			"edited f: replaced 1 occurrence", false, "func f() {\n\treturn 2\n}\n"},
		{"not found", "a\nb\n", in{"old_string": "x", "new_string": "y"},
			"old_string was not found in f; it must match exactly, whitespace and indentation included (read the file again with read_file)", true, "a\nb\n"},
		{"indentation differs", "\tx := 1\n", in{"old_string": "    x := 1", "new_string": "x := 2"},
			"old_string was not found in f; it must match exactly, whitespace and indentation included (read the file again with read_file)", true, "\tx := 1\n"},
		{"ambiguous", "x\nx\nx\n", in{"old_string": "x", "new_string": "y"},
			"old_string matches 3 times in f; include more surrounding lines to make it unique, or set replace_all to replace all 3", true, "x\nx\nx\n"},
		{"replace all", "x\nx\nx\n", in{"old_string": "x", "new_string": "y", "replace_all": true}, "edited f: replaced 3 occurrences", false, "y\ny\ny\n"},
		{"CRLF kept", "a\r\nb\r\nc\r\n", in{"old_string": "a\nb", "new_string": "A\nB\nB2"}, "edited f: replaced 1 occurrence", false, "A\r\nB\r\nB2\r\nc\r\n"},
		{"CRLF given", "a\r\nb\r\n", in{"old_string": "a\r\n", "new_string": "z\r\n"}, "edited f: replaced 1 occurrence", false, "z\r\nb\r\n"},
		{"mixed endings: others kept", "a\nb\r\nc\n", in{"old_string": "b\nc", "new_string": "B\nC"}, "edited f: replaced 1 occurrence", false, "a\nB\r\nC\n"},
		{"CRLF: a line break only in new_string", "a\r\nb\r\n", in{"old_string": "b", "new_string": "B\nC"}, "edited f: replaced 1 occurrence", false, "a\r\nB\r\nC\r\n"},
		{"CRLF in old_string, LF in new_string", "a\r\nb\r\n", in{"old_string": "a\r\nb", "new_string": "A\nB"}, "edited f: replaced 1 occurrence", false, "A\r\nB\r\n"},
		{"LF: a line break only in new_string", "a\nb\n", in{"old_string": "b", "new_string": "B\nC"}, "edited f: replaced 1 occurrence", false, "a\nB\nC\n"},
		{"mixed, mostly LF: as most lines", "a\r\nb\nc\n", in{"old_string": "c", "new_string": "C\nD"}, "edited f: replaced 1 occurrence", false, "a\r\nb\nC\nD\n"},
		{"mixed, mostly CRLF: as old_string's break", "a\r\nb\r\nc\nd\r\n", in{"old_string": "c\nd", "new_string": "C\nD\nE"}, "edited f: replaced 1 occurrence", false, "a\r\nb\r\nC\nD\nE\r\n"},
		{"empty old_string", "a\n", in{"old_string": "", "new_string": "b"}, "old_string is empty: to create a file, use write_file", true, "a\n"},
		{"no change", "a\n", in{"old_string": "a", "new_string": "a"}, "old_string and new_string are the same: there is nothing to change", true, "a\n"},
		{"binary", "a\x00b", in{"old_string": "a", "new_string": "b"}, "f is a binary file; edit_file edits only text", true, "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, map[string]string{"f": tt.file})
			os.Chmod(filepath.Join(e.dir, "f"), 0o750)
			tt.input["path"] = "f"
			got, isErr := e.text("edit_file", tt.input)
			if got != tt.want || isErr != tt.isError {
				t.Errorf("result %q (is_error %v), want %q (is_error %v)", got, isErr, tt.want, tt.isError)
			}
			if after := e.read("f"); after != tt.after {
				t.Errorf("file afterwards = %q, want %q", after, tt.after)
			}
			if fi, _ := os.Stat(filepath.Join(e.dir, "f")); fi.Mode().Perm() != 0o750 {
				t.Errorf("mode = %v, want 0750 kept", fi.Mode().Perm())
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		e := newEnv(t, nil)
		os.WriteFile(filepath.Join(e.dir, "big"), nil, 0o644)
		os.Truncate(filepath.Join(e.dir, "big"), maxEditBytes+1) // sparse: no disk used
		got, isErr := e.text("edit_file", in{"path": "big", "old_string": "a", "new_string": "b"})
		if !isErr || got != "big has 16777217 bytes, more than edit_file loads (16777216); use bash, for example sed" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		e := newEnv(t, nil)
		got, isErr := e.text("edit_file", in{"path": "nope", "old_string": "a", "new_string": "b"})
		if !isErr || !strings.Contains(got, "no such file") {
			t.Errorf("got %q, is_error %v", got, isErr)
		}
	})
}

func TestPreview(t *testing.T) {
	e := newEnv(t, map[string]string{"f.go": "package f\n\nvar x = 1\n"})
	diff, ok, err := e.ws.Preview("edit_file", json.RawMessage(`{"path":"f.go","old_string":"x = 1","new_string":"x = 2"}`))
	want := "--- a/f.go\n+++ b/f.go\n@@ -1,3 +1,3 @@\n package f\n \n-var x = 1\n+var x = 2\n"
	if !ok || err != nil || diff != want {
		t.Errorf("edit preview = %q, %v, %v; want %q", diff, ok, err, want)
	}
	diff, _, err = e.ws.Preview("write_file", json.RawMessage(`{"path":"new.txt","content":"hi\n"}`))
	if err != nil || !strings.HasPrefix(diff, "--- /dev/null\n+++ b/new.txt\n") || !strings.Contains(diff, "+hi\n") {
		t.Errorf("write preview = %q, %v", diff, err)
	}
	if _, _, err := e.ws.Preview("edit_file", json.RawMessage(`{"path":"f.go","old_string":"nope","new_string":"x"}`)); err == nil {
		t.Error("preview of a failing edit: no error")
	}
	if _, ok, _ := e.ws.Preview("bash", json.RawMessage(`{}`)); ok {
		t.Error("preview of bash: ok")
	}
	if e.read("f.go") != "package f\n\nvar x = 1\n" {
		t.Error("a preview changed the file")
	}
}

func TestGlob(t *testing.T) {
	e := newEnv(t, map[string]string{
		".gitignore":          "*.log\nbuild/\n!keep.log\n",
		"main.go":             "",
		"cmd/tool/main.go":    "",
		"cmd/tool/.gitignore": "gen_*.go\n",
		"cmd/tool/gen_x.go":   "",
		"build/out.go":        "",
		"debug.log":           "",
		"keep.log":            "",
		".git/HEAD.go":        "",
		"README.md":           "",
	})
	// Modification times decide the order: newest first.
	now := time.Now()
	for i, f := range []string{"main.go", "cmd/tool/main.go"} {
		os.Chtimes(filepath.Join(e.dir, f), now, now.Add(time.Duration(-i)*time.Hour))
	}
	tests := []struct {
		name  string
		input in
		want  string
	}{
		{"go files, gitignore honoured, newest first", in{"pattern": "**/*.go"}, "main.go\ncmd/tool/main.go\n"},
		{"negation", in{"pattern": "*.log"}, "keep.log\n"},
		{"under a path", in{"pattern": "*.go", "path": "cmd/tool"}, "cmd/tool/main.go\n"},
		{"alternatives", in{"pattern": "*.{md,log}"}, "README.md\nkeep.log\n"},
		{"nothing", in{"pattern": "*.rs"}, "no files match *.rs in ."},
	}
	// README.md and keep.log have the same time as written; give them a
	// known order.
	os.Chtimes(filepath.Join(e.dir, "README.md"), now, now.Add(time.Minute))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isErr := e.text("glob", tt.input)
			if isErr {
				t.Fatal(got)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("ignore files above the working directory", func(t *testing.T) {
		// The working directory is a subdirectory of a work tree whose
		// top .gitignore and .git/info/exclude apply to it.
		top := t.TempDir()
		for name, content := range map[string]string{
			".gitignore":        "node_modules/\n/sub/anchored.txt\n",
			".git/info/exclude": "*.tmp\n",
			"sub/.gitignore":    "local.txt\n",
			"sub/a.txt":         "", "sub/anchored.txt": "", "sub/local.txt": "", "sub/x.tmp": "",
			"sub/node_modules/m.txt": "", "sub/deep/anchored.txt": "",
		} {
			os.MkdirAll(filepath.Dir(filepath.Join(top, name)), 0o755)
			os.WriteFile(filepath.Join(top, name), []byte(content), 0o644)
		}
		ws, err := Open(Config{Dir: filepath.Join(top, "sub")})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		got, err := ws.glob(t.Context(), GlobInput{Pattern: "**/*.{txt,tmp}"})
		lines := strings.Fields(got)
		slices.Sort(lines)
		if diff := cmp.Diff([]string{"a.txt", "deep/anchored.txt"}, lines); diff != "" || err != nil {
			t.Errorf("err %v; (-want +got):\n%s", err, diff)
		}
	})
	t.Run("bad pattern", func(t *testing.T) {
		if got, isErr := e.text("glob", in{"pattern": "[a"}); !isErr || !strings.Contains(got, "invalid pattern") {
			t.Errorf("got %q", got)
		}
	})
	t.Run("capped", func(t *testing.T) {
		e := newEnv(t, nil)
		for i := range 150 {
			e.write(filepath.Join("many", strings.Repeat("f", 1)+string(rune('a'+i%26))+string(rune('a'+i/26))+".txt"), "")
		}
		got, _ := e.text("glob", in{"pattern": "**/*.txt"})
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 101 || lines[100] != "[50 more files match; use a narrower pattern or path]" {
			t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
		}
	})
}

func TestGrep(t *testing.T) {
	var big strings.Builder
	for i := range 5000 {
		big.WriteString("match " + strings.Repeat("y", i%50) + "\n")
	}
	e := newEnv(t, map[string]string{
		".gitignore":    "vendor/\n",
		"a.go":          "package a\n\nfunc Hello() {}\n\nfunc World() {}\n",
		"b.txt":         "hello there\r\nHELLO again\r\n",
		"vendor/v.go":   "func Hello() {}\n",
		"bin.dat":       "Hello\x00\x01",
		"sub/c.go":      "// Hello\n",
		"big/big.txt":   big.String(),
		"ctx.txt":       "1\n2\nx\n4\n5\n6\n7\nx\n9\n",
		"longline.txt":  strings.Repeat("z", 2<<20) + "\nHello after\n",
		"sub/deep/d.md": "Hello\n",
	})
	tests := []struct {
		name  string
		input in
		want  string
	}{
		{"plain", in{"pattern": "func Hello", "path": "a.go"}, "a.go:3:func Hello() {}\n"},
		{"directory, gitignore and binary skipped", in{"pattern": "Hello", "glob": "*.go"}, "a.go:3:func Hello() {}\nsub/c.go:1:// Hello\n"},
		{"case-insensitive, CRLF", in{"pattern": "(?i)^hello", "path": "b.txt"}, "b.txt:1:hello there\nb.txt:2:HELLO again\n"},
		{"glob with a slash", in{"pattern": "Hello", "glob": "sub/**/*.md"}, "sub/deep/d.md:1:Hello\n"},
		{"context", in{"pattern": "x", "path": "ctx.txt", "context": 1},
			"ctx.txt-2-2\nctx.txt:3:x\nctx.txt-4-4\n--\nctx.txt-7-7\nctx.txt:8:x\nctx.txt-9-9\n--\n"},
		{"max results", in{"pattern": "match", "path": "big", "max_results": 2},
			"big/big.txt:1:match \nbig/big.txt:2:match y\n[stopped at 2 matching lines; narrow the pattern, path or glob, or raise max_results]\n"},
		{"a line over 1 MB", in{"pattern": "Hello", "path": "longline.txt"}, "[longline.txt: skipped the rest of the file, which has a line over 1 MB]\n"},
		{"no match", in{"pattern": "nothing here", "path": "sub"}, "no matches for nothing here in sub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isErr := e.text("grep", tt.input)
			if isErr {
				t.Fatal(got)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("huge output is capped", func(t *testing.T) {
		got, _ := e.text("grep", in{"pattern": "match", "path": "big", "max_results": 100000})
		if len(got) > maxOutputBytes+200 || !strings.HasSuffix(got, "[stopped: the output is too long; narrow the pattern, path or glob]\n") {
			t.Errorf("got %d bytes ending %q", len(got), got[len(got)-100:])
		}
	})
	t.Run("a file over 8 MB is streamed", func(t *testing.T) {
		e := newEnv(t, nil)
		line := strings.Repeat("filler ", 15) + "\n"
		n := (wholeFileBytes / len(line)) + 10
		e.write("big.txt", strings.Repeat(line, n)+"the NEEDLE\n")
		got, _ := e.text("grep", in{"pattern": "NEEDLE"})
		if want := fmt.Sprintf("big.txt:%d:the NEEDLE\n", n+1); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("bad pattern", func(t *testing.T) {
		if got, isErr := e.text("grep", in{"pattern": "(a"}); !isErr || !strings.HasPrefix(got, "invalid pattern: ") {
			t.Errorf("got %q", got)
		}
	})
}

func TestCancelled(t *testing.T) {
	e := newEnv(t, map[string]string{"a.txt": "a\n", "b/c.txt": "c\n"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.ws.grep(ctx, GrepInput{Pattern: "a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("grep: err = %v, want context.Canceled", err)
	}
	if _, err := e.ws.glob(ctx, GlobInput{Pattern: "**"}); !errors.Is(err, context.Canceled) {
		t.Errorf("glob: err = %v, want context.Canceled", err)
	}
}

// TestWriteThenEdit checks that a write and an edit of one file in one turn
// both take effect, in the order the model wrote them.
func TestWriteThenEdit(t *testing.T) {
	for range 20 { // the race this guards against lost one call in three
		e := newEnv(t, map[string]string{"race.txt": "zero\n"})
		calls := []llm.ToolUse{
			{ID: "toolu_1", Name: "write_file", Input: json.RawMessage(`{"path": "race.txt", "content": "one two\n"}`)},
			{ID: "toolu_2", Name: "edit_file", Input: json.RawMessage(`{"path": "race.txt", "old_string": "two", "new_string": "three"}`)},
		}
		for _, res := range e.reg.Run(t.Context(), calls) {
			if res.IsError {
				t.Fatalf("%s: %s", res.ToolUseID, llm.TextOf(res.Content))
			}
		}
		if got := e.read("race.txt"); got != "one three\n" {
			t.Fatalf("race.txt = %q, want the write, then the edit", got)
		}
	}
}
