package files

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/agentloop/agentloop/tool"
)

// GlobInput is glob's input.
type GlobInput struct {
	Pattern string `json:"pattern" jsonschema:"the pattern to match file paths against, relative to path: * matches within a name, ** matches any number of directories, {a,b} either; for example **/*.go or src/*.{ts,tsx}"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search in (default the working directory)"`
}

// GrepInput is grep's input.
type GrepInput struct {
	Pattern    string `json:"pattern" jsonschema:"the regular expression to search for, in Go (RE2) syntax; (?i) makes it case-insensitive"`
	Path       string `json:"path,omitempty" jsonschema:"the file or directory to search (default the working directory)"`
	Glob       string `json:"glob,omitempty" jsonschema:"search only files whose name matches this glob, such as *.go; a glob with a slash matches the path relative to path, such as cmd/**/*.go"`
	Context    int    `json:"context,omitempty" jsonschema:"how many lines to show before and after each match (default 0)"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"the most matching lines to return (default 100)"`
}

const globDescription = `Find files by name inside the working directory or an added directory (paths outside them are refused).
Returns matching file paths, newest first (by modification time), one per line, at most 100; a note says when there are more. Files ignored by .gitignore, and .git directories, are skipped.
Use it to find files by name or extension, for example **/*_test.go. To search file contents, use grep.`

const grepDescription = `Search file contents with a regular expression (Go RE2 syntax) inside the working directory or an added directory (paths outside them are refused).
Returns matching lines as path:line:text, like grep -n, with context lines as path-line-text and -- between groups. Files ignored by .gitignore, .git directories and binary files are skipped. At most max_results matching lines are returned (default 100); a note says when it stops.
Use glob to restrict the files searched, for example *.go.`

// Glob returns the glob tool.
func (w *Workspace) Glob() *tool.Tool {
	return must(tool.New("glob", globDescription, w.glob))
}

// Grep returns the grep tool.
func (w *Workspace) Grep() *tool.Tool {
	return must(tool.New("grep", grepDescription, w.grep))
}

func (w *Workspace) glob(ctx context.Context, in GlobInput) (string, error) {
	if !doublestar.ValidatePattern(in.Pattern) || path.IsAbs(in.Pattern) {
		return "", fmt.Errorf("invalid pattern %q: use a relative glob such as **/*.go, and path for the directory", in.Pattern)
	}
	r, dir, err := w.locate(cmp.Or(in.Path, "."))
	if err != nil {
		return "", err
	}
	dir = pathOf(dir)
	type hit struct {
		name string
		mod  time.Time
	}
	var hits []hit
	err = walk(ctx, r, dir, func(p string, d fs.DirEntry) error {
		if ok, _ := doublestar.Match(in.Pattern, relTo(dir, p)); !ok {
			return nil
		}
		h := hit{name: w.display(r, p)}
		if fi, err := d.Info(); err == nil {
			h.mod = fi.ModTime()
		}
		hits = append(hits, h)
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return fmt.Sprintf("no files match %s in %s", in.Pattern, w.display(r, dir)), nil
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		return cmp.Or(b.mod.Compare(a.mod), strings.Compare(a.name, b.name))
	})
	var b strings.Builder
	for i, h := range hits {
		if i == DefaultMaxResults {
			fmt.Fprintf(&b, "[%d more files match; use a narrower pattern or path]\n", len(hits)-i)
			break
		}
		b.WriteString(h.name + "\n")
	}
	return b.String(), nil
}

func (w *Workspace) grep(ctx context.Context, in GrepInput) (string, error) {
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return "", fmt.Errorf("invalid pattern: %v", err)
	}
	if in.Glob != "" && !doublestar.ValidatePattern(in.Glob) {
		return "", fmt.Errorf("invalid glob %q", in.Glob)
	}
	if in.Context < 0 || in.MaxResults < 0 {
		return "", errors.New("context and max_results must not be negative")
	}
	limit := cmp.Or(in.MaxResults, DefaultMaxResults)
	r, start, err := w.locate(cmp.Or(in.Path, "."))
	if err != nil {
		return "", err
	}
	start = pathOf(start)
	g := newGrepper(re, in.Context, limit)
	search := func(p string) error {
		if g.left == 0 || g.out.Len() > maxOutputBytes {
			return fs.SkipAll
		}
		f, _, err := openFile(r, p, p, "searching")
		if err != nil {
			return nil // unreadable, no longer a file, or a link out of the root: skip it
		}
		defer f.Close()
		return g.file(w.display(r, p), f)
	}
	if fi, serr := r.r.Stat(start); serr == nil && !fi.IsDir() {
		// One file, named: say why it cannot be searched.
		f, _, oerr := openFile(r, start, in.Path, "searching")
		if oerr != nil {
			return "", oerr
		}
		defer f.Close()
		err = g.file(w.display(r, start), f)
	} else {
		err = walk(ctx, r, start, func(p string, d fs.DirEntry) error {
			if in.Glob != "" {
				name := d.Name()
				if strings.Contains(in.Glob, "/") {
					name = relTo(start, p)
				}
				if ok, _ := doublestar.Match(in.Glob, name); !ok {
					return nil
				}
			}
			return search(p)
		})
	}
	if err != nil && !errors.Is(err, fs.SkipAll) {
		return "", err
	}
	switch {
	case g.out.Len() == 0:
		return fmt.Sprintf("no matches for %s in %s", in.Pattern, w.display(r, start)), nil
	case g.left == 0:
		fmt.Fprintf(&g.out, "[stopped at %d matching lines; narrow the pattern, path or glob, or raise max_results]\n", limit)
	case g.out.Len() > maxOutputBytes:
		g.out.WriteString("[stopped: the output is too long; narrow the pattern, path or glob]\n")
	}
	return g.out.String(), nil
}

// wholeFileBytes is the largest file grep reads whole, to look for the
// pattern's literal prefix in one pass before it splits the file in lines.
const wholeFileBytes = 8 << 20

// A grepper searches files one by one, writing what it finds. Its buffers
// are reused from file to file.
type grepper struct {
	re      *regexp.Regexp
	prefix  []byte // what every match contains, if the pattern starts with a literal
	context int
	left    int // matching lines still to report
	matches int
	out     strings.Builder
	data    bytes.Buffer
	lines   []byte
}

func newGrepper(re *regexp.Regexp, context, limit int) *grepper {
	g := &grepper{re: re, context: context, left: limit, lines: make([]byte, 64<<10)}
	if p, _ := re.LiteralPrefix(); p != "" {
		g.prefix = []byte(p)
	}
	return g
}

// file searches one file, unless it is binary.
func (g *grepper) file(name string, f io.Reader) error {
	g.data.Reset()
	n, err := g.data.ReadFrom(io.LimitReader(f, wholeFileBytes+1))
	if err != nil {
		return nil // unreadable: skip it
	}
	data := g.data.Bytes()
	if binary(data[:min(len(data), sniffBytes)]) {
		return nil
	}
	var r io.Reader = bytes.NewReader(data)
	switch {
	case n > wholeFileBytes:
		r = io.MultiReader(r, f) // too big to hold: stream the rest
	case g.prefix != nil && !bytes.Contains(data, g.prefix):
		return nil // no line can match: most files end here
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(g.lines, 1<<20)
	var before []string // the last lines, for context
	lastShown, after := 0, 0
	for n := 1; sc.Scan() && g.left > 0 && g.out.Len() <= maxOutputBytes; n++ {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		switch {
		case g.re.Match(line):
			if lastShown > 0 && n-len(before) > lastShown+1 {
				g.out.WriteString("--\n")
			}
			for i, l := range before {
				fmt.Fprintf(&g.out, "%s-%d-%s\n", name, n-len(before)+i, cutLine([]byte(l)))
			}
			before = before[:0]
			fmt.Fprintf(&g.out, "%s:%d:%s\n", name, n, cutLine(line))
			g.matches++
			g.left--
			lastShown, after = n, g.context
		case after > 0:
			fmt.Fprintf(&g.out, "%s-%d-%s\n", name, n, cutLine(line))
			lastShown = n
			after--
		case g.context > 0:
			if len(before) == g.context {
				before = before[1:]
			}
			before = append(before, string(line))
		}
	}
	if lastShown > 0 && g.context > 0 {
		g.out.WriteString("--\n")
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		fmt.Fprintf(&g.out, "[%s: skipped the rest of the file, which has a line over 1 MB]\n", name)
	}
	return nil
}

// walk calls fn for each regular file under dir, a path relative to r, in
// lexical order. It skips .git directories and whatever the repository's
// ignore rules ignore: the .gitignore files of dir, of its parents up to
// the top of the git work tree (which may lie above the root), and of its
// subdirectories, and .git/info/exclude.
func walk(ctx context.Context, r *root, dir string, fn func(p string, d fs.DirEntry) error) error {
	fsys := r.r.FS()
	dir = pathOf(dir)
	// Paths are matched relative to the work tree's top: prefix is the
	// root's path from there.
	prefix, ps := outerIgnores(r.path)
	parts := splitSlash(dir)
	for i := 0; i <= len(parts); i++ {
		ps = append(ps, readIgnore(r, parts[:i], prefix)...)
	}
	return fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable directory: skip it
		}
		if p == dir {
			return nil
		}
		parts := splitSlash(p)
		ignored := gitignore.NewMatcher(ps).Match(append(slices.Clone(prefix), parts...), d.IsDir())
		switch {
		case d.IsDir() && (d.Name() == ".git" || ignored):
			return fs.SkipDir
		case d.IsDir():
			ps = append(ps, readIgnore(r, parts, prefix)...)
			return nil
		case ignored || !d.Type().IsRegular():
			return nil
		}
		return fn(p, d)
	})
}

// outerIgnores finds the top of the git work tree that holds dir, and
// returns dir's path components from there and the ignore patterns of
// .git/info/exclude and of the .gitignore files above dir. These files lie
// outside the root, but only their rules are read, never shown. Outside a
// work tree it returns nothing.
func outerIgnores(dir string) (prefix []string, ps []gitignore.Pattern) {
	top := dir
	for {
		if _, err := os.Stat(filepath.Join(top, ".git")); err == nil {
			break
		}
		up := filepath.Dir(top)
		if up == top {
			return nil, nil // not in a work tree
		}
		top = up
	}
	rel, _ := filepath.Rel(top, dir)
	prefix = splitSlash(filepath.ToSlash(rel))
	ps = parseIgnore(filepath.Join(top, ".git", "info", "exclude"), nil)
	for i := range prefix {
		ps = append(ps, parseIgnore(filepath.Join(top, filepath.Join(prefix[:i]...), ".gitignore"), prefix[:i])...)
	}
	return prefix, ps
}

// readIgnore reads the patterns of the .gitignore file in the root's
// directory whose path components are dir, if it has one.
func readIgnore(r *root, dir, prefix []string) []gitignore.Pattern {
	b, err := readRegular(r.r.OpenFile(filepath.Join(append(slices.Clone(dir), ".gitignore")...), openFlags, 0))
	if err != nil {
		return nil
	}
	return parsePatterns(b, append(slices.Clone(prefix), dir...))
}

// parseIgnore reads the patterns of the ignore file at path, if it exists.
func parseIgnore(path string, domain []string) []gitignore.Pattern {
	b, err := readRegular(os.OpenFile(path, openFlags, 0))
	if err != nil {
		return nil
	}
	return parsePatterns(b, domain)
}

// readRegular reads f, opened with openFlags, if it is a regular file, and
// closes it: an ignore file that is a named pipe must not hang a search.
func readRegular(f *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(f)
}

// parsePatterns parses the lines of an ignore file whose patterns apply
// under domain.
func parsePatterns(b []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, slices.Clone(domain)))
	}
	return ps
}

// pathOf turns a root-relative file path into an fs.FS path.
func pathOf(rel string) string {
	return path.Clean(strings.ReplaceAll(rel, `\`, "/"))
}

func splitSlash(p string) []string {
	if p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// relTo returns p, an fs.FS path under dir, relative to dir.
func relTo(dir, p string) string {
	if dir == "." {
		return p
	}
	return strings.TrimPrefix(p, dir+"/")
}
