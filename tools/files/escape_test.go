package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapes tries every way out of the roots with every tool, and checks
// that each is refused, that nothing outside was read or written.
func TestEscapes(t *testing.T) {
	e := newEnv(t, map[string]string{"inside.txt": "inside\n", "sub/x.txt": "x\n"})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(e.outside, "secret.txt"), filepath.Join(e.dir, "link.txt")))
	must(os.Symlink(e.outside, filepath.Join(e.dir, "ldir")))
	must(os.Symlink("../../outside", filepath.Join(e.dir, "sub", "rel")))
	must(os.Symlink(filepath.Join(e.outside, "created.txt"), filepath.Join(e.dir, "dangling")))

	outside := e.outside + "/secret.txt"
	paths := []struct {
		name, path, why string
	}{
		{"dot-dot", "../outside/secret.txt", "refused: ../outside/secret.txt is outside the working directory"},
		{"dot-dot inside a path", "sub/../../outside/secret.txt", "refused: sub/../../outside/secret.txt is outside the working directory"},
		{"absolute", outside, "refused: " + outside + " is outside the working directory"},
		{"root", "/", "refused: / is outside the working directory"},
		{"file link out", "link.txt", "refused: link.txt leads, through a symbolic link, to " + outside + ", which is outside the working directory"},
		{"directory link out", "ldir/secret.txt", "refused: ldir/secret.txt leads, through a symbolic link, to " + outside},
		{"relative link out", "sub/rel/secret.txt", "refused: sub/rel/secret.txt leads, through a symbolic link, to " + outside},
		{"dangling link out", "dangling", "refused: dangling leads, through a symbolic link, to " + e.outside + "/created.txt"},
	}
	calls := []struct {
		tool  string
		input func(p string) in
	}{
		{"read_file", func(p string) in { return in{"path": p} }},
		{"write_file", func(p string) in { return in{"path": p, "content": "pwned\n"} }},
		{"edit_file", func(p string) in { return in{"path": p, "old_string": "outside", "new_string": "pwned"} }},
		{"glob", func(p string) in { return in{"pattern": "*", "path": p} }},
		{"grep", func(p string) in { return in{"pattern": "secret", "path": p} }},
	}
	for _, c := range calls {
		for _, p := range paths {
			t.Run(c.tool+"/"+p.name, func(t *testing.T) {
				got, isErr := e.text(c.tool, c.input(p.path))
				if !isErr || !strings.HasPrefix(got, p.why) {
					t.Errorf("got %q (is_error %v), want it refused: %q…", got, isErr, p.why)
				}
			})
		}
	}
	// Nothing outside changed.
	if b, _ := os.ReadFile(outside); string(b) != "outside secret\n" {
		t.Errorf("the file outside now holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(e.outside, "created.txt")); err == nil {
		t.Error("a file was created outside")
	}
	// Searching the working directory does not follow the links out.
	if got, _ := e.text("grep", in{"pattern": "secret"}); got != "no matches for secret in ." {
		t.Errorf("grep of the working directory: %q", got)
	}
	if got, _ := e.text("glob", in{"pattern": "**/secret.txt"}); got != "no files match **/secret.txt in ." {
		t.Errorf("glob of the working directory: %q", got)
	}
}

// TestRoots checks what is allowed: --add-dir roots, links within and
// between roots, and the working directory named through a link.
func TestRoots(t *testing.T) {
	e := newEnv(t, map[string]string{"a.txt": "a\n"}, "extra")
	extra := e.ws.Roots()[1]
	os.WriteFile(filepath.Join(extra, "e.txt"), []byte("extra\n"), 0o644)
	os.Symlink(filepath.Join(extra, "e.txt"), filepath.Join(e.dir, "to-extra"))
	os.Symlink("a.txt", filepath.Join(e.dir, "to-a"))
	alias := filepath.Join(filepath.Dir(e.dir), "alias")
	os.Symlink(e.dir, alias)

	for _, p := range []string{"to-a", filepath.Join(alias, "a.txt"), "sub/../a.txt"} {
		if got, isErr := e.text("read_file", in{"path": p}); isErr || got != "     1\ta\n" {
			t.Errorf("read %s: %q, is_error %v", p, got, isErr)
		}
	}
	for _, p := range []string{"to-extra", filepath.Join(extra, "e.txt"), "../extra/e.txt"} {
		if got, isErr := e.text("read_file", in{"path": p}); isErr || got != "     1\textra\n" {
			t.Errorf("read %s: %q, is_error %v", p, got, isErr)
		}
	}
	if got, isErr := e.text("edit_file", in{"path": "to-extra", "old_string": "extra", "new_string": "edited"}); isErr {
		t.Errorf("edit through a link into an added root: %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(extra, "e.txt")); string(b) != "edited\n" {
		t.Errorf("the added root's file holds %q", b)
	}
	// Writing to a link replaces the file it points to, inside the roots,
	// and leaves the link.
	if fi, err := os.Lstat(filepath.Join(e.dir, "to-extra")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if got, isErr := e.text("glob", in{"pattern": "*", "path": "../extra"}); isErr || got != filepath.Join(extra, "e.txt")+"\n" {
		t.Errorf("glob of the added root: %q", got)
	}
	os.Symlink("loop2", filepath.Join(e.dir, "loop1"))
	os.Symlink("loop1", filepath.Join(e.dir, "loop2"))
	if got, isErr := e.text("write_file", in{"path": "loop1/x", "content": "x"}); !isErr || got != "resolving loop1/x: too many levels of symbolic links" {
		t.Errorf("a link loop: %q", got)
	}
	_, err := Open(Config{Dir: e.dir, AddDirs: []string{"missing"}})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Open with a missing directory: %v", err)
	}
}

// TestSymlinkSwap swaps a directory for a link out of the root after the
// path was checked and before it is written: os.Root refuses the write.
func TestSymlinkSwap(t *testing.T) {
	for _, c := range []struct {
		tool  string
		input in
	}{
		{"write_file", in{"path": "sub/secret.txt", "content": "pwned\n"}},
		{"edit_file", in{"path": "sub/secret.txt", "old_string": "secret", "new_string": "pwned"}},
		{"read_file", in{"path": "sub/secret.txt"}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			e := newEnv(t, map[string]string{"sub/secret.txt": "inside secret\n"})
			sub := filepath.Join(e.dir, "sub")
			testHookLocated = func() {
				testHookLocated = nil
				if err := os.RemoveAll(sub); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(e.outside, sub); err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookLocated = nil }()
			got, isErr := e.text(c.tool, c.input)
			if !isErr || !strings.Contains(got, "path escapes from parent") {
				t.Errorf("got %q (is_error %v), want the swapped link refused", got, isErr)
			}
			if b, _ := os.ReadFile(filepath.Join(e.outside, "secret.txt")); string(b) != "outside secret\n" {
				t.Errorf("the file outside now holds %q", b)
			}
			entries, _ := os.ReadDir(e.outside)
			if len(entries) != 1 {
				t.Errorf("the outside directory has %d entries, want only secret.txt", len(entries))
			}
		})
	}
}

func TestResolve(t *testing.T) {
	e := newEnv(t, map[string]string{"secrets/k": "k\n"})
	os.Symlink("secrets", filepath.Join(e.dir, "innocent"))
	want := filepath.Join(e.ws.Dir(), "secrets", "k")
	for _, p := range []string{"secrets/k", "innocent/k", "./x/../innocent/k", filepath.Join(e.dir, "innocent/k")} {
		if got := e.ws.Resolve(p); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", p, got, want)
		}
	}
	if got := e.ws.Resolve("new/file"); got != filepath.Join(e.ws.Dir(), "new/file") {
		t.Errorf("Resolve of a new file = %q", got)
	}
}
