// Package files gives the model the files of a working directory: the
// read_file, write_file, edit_file, glob and grep tools, confined to that
// directory and to any others the user adds.
//
//	ws, err := files.Open(files.Config{Dir: ".", AddDirs: []string{"../docs"}})
//	defer ws.Close()
//	reg.Register(ws.Tools()...)
//
// # Confinement
//
// Every path the model gives is made absolute against the working
// directory and has its symbolic links resolved, component by component,
// before it is checked against the roots; "../", an absolute path outside
// and a link that points out are refused with a message naming the roots.
// The file is then opened through an [os.Root] for the root it lies in, so
// that a link swapped in after the check cannot lead the write outside
// either: os.Root resolves each component itself and refuses to leave.
// Nothing is ever written outside the roots.
//
// The tools read and write only regular files. A named pipe or a device
// is refused, judged on what was opened, and the open never waits on one,
// so a call cannot hang on a pipe with no writer, holding its slot.
//
// glob and grep honour .gitignore files, read with go-git's gitignore
// package (the matcher of the most used pure-Go git implementation), and
// always skip .git directories.
package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// Limits on what the tools read and return. The registry caps every
// result again (tool.Config.MaxOutputBytes), but these cuts come with a
// note telling the model how to read on.
const (
	// DefaultReadLines is how many lines read_file returns when no limit
	// is given.
	DefaultReadLines = 2000
	// maxLineBytes cuts each line read_file or grep shows.
	maxLineBytes = 2000
	// maxOutputBytes caps the text of one result.
	maxOutputBytes = 60_000
	// maxEditBytes is the largest file edit_file loads whole.
	maxEditBytes = 16 << 20
	// maxImageBytes is the API's limit for one image.
	maxImageBytes = 5 << 20
	// DefaultMaxResults caps glob's paths and grep's matches.
	DefaultMaxResults = 100
	// sniffBytes is how much of a file is read to tell text from binary.
	sniffBytes = 8192
)

// Config configures a [Workspace].
type Config struct {
	// Dir is the working directory: relative paths are resolved against
	// it, and it is the first root. Default ".", the process's working
	// directory.
	Dir string
	// AddDirs are more directories the tools may read and write.
	// Relative ones are resolved against Dir. Default none.
	AddDirs []string
	// ReadDirs are directories the tools may read but never write, such
	// as the folders of skills. Relative ones are resolved against Dir.
	// Default none.
	ReadDirs []string
}

// A Workspace is a set of root directories and the file tools confined to
// them. Make one with [Open] and close it when done.
type Workspace struct {
	dir   string // the working directory, absolute, links resolved
	roots []*root
}

// A root is one directory the tools may use.
type root struct {
	path     string // absolute, links resolved
	r        *os.Root
	readOnly bool // one of Config.ReadDirs
}

// Open opens the roots cfg names. Each must be an existing directory.
func Open(cfg Config) (*Workspace, error) {
	dir := cfg.Dir
	if dir == "" {
		dir = "."
	}
	w := &Workspace{}
	dirs := append([]string{dir}, cfg.AddDirs...)
	for i, d := range append(dirs, cfg.ReadDirs...) {
		if i > 0 && !filepath.IsAbs(d) {
			d = filepath.Join(w.dir, d)
		}
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("files: directory %s: %w", d, err)
		}
		r, err := os.OpenRoot(abs)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("files: directory %s: %w", d, err)
		}
		if i == 0 {
			w.dir = abs
		}
		w.roots = append(w.roots, &root{path: abs, r: r, readOnly: i >= len(dirs)})
	}
	return w, nil
}

// Close releases the roots.
func (w *Workspace) Close() error {
	var errs []error
	for _, r := range w.roots {
		errs = append(errs, r.r.Close())
	}
	w.roots = nil
	return errors.Join(errs...)
}

// Dir returns the working directory, absolute and with links resolved.
func (w *Workspace) Dir() string { return w.dir }

// Roots returns the directories the tools may read and write, the working
// directory first; Config.ReadDirs are not among them.
func (w *Workspace) Roots() []string {
	var paths []string
	for _, r := range w.roots {
		if !r.readOnly {
			paths = append(paths, r.path)
		}
	}
	return paths
}

// Tools returns read_file, write_file, edit_file, glob and grep.
func (w *Workspace) Tools() []*tool.Tool {
	return []*tool.Tool{w.ReadFile(), w.WriteFile(), w.EditFile(), w.Glob(), w.Grep()}
}

// Resolve returns path as the tools would use it: absolute, against the
// working directory, with its symbolic links resolved. It is for
// permission rules (permission.Policy.Path), so that a link cannot dodge
// one; a path that cannot be resolved is returned absolute and clean.
func (w *Workspace) Resolve(path string) string {
	if !filepath.IsAbs(path) {
		path = filepath.Join(w.dir, path)
	}
	path = filepath.Clean(path)
	if real, err := resolveLinks(path); err == nil {
		return real
	}
	return path
}

// testHookLocated, when set by a test, runs after a path has been checked
// and before it is used: the window a symlink swap would exploit.
var testHookLocated func()

// locate resolves the path the model gave to the root it lies in and the
// path relative to that root, with no symbolic links left in it.
func (w *Workspace) locate(p string) (*root, string, error) {
	if p == "" {
		return nil, "", errors.New("the path is empty")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.dir, abs)
	}
	abs = filepath.Clean(abs)
	real, err := resolveLinks(abs)
	if err != nil {
		return nil, "", fmt.Errorf("resolving %s: %w", p, err)
	}
	// The deepest root that holds the path decides, so that a read-only
	// directory inside the working directory stays read-only.
	var found *root
	var foundRel string
	for _, r := range w.roots {
		if rel, ok := within(r.path, real); ok && (found == nil || len(r.path) > len(found.path)) {
			found, foundRel = r, rel
		}
	}
	if found != nil {
		if testHookLocated != nil {
			testHookLocated()
		}
		return found, foundRel, nil
	}
	if real != abs {
		return nil, "", fmt.Errorf("refused: %s leads, through a symbolic link, to %s, which is outside %s", p, real, w.rootList())
	}
	return nil, "", fmt.Errorf("refused: %s is outside %s", p, w.rootList())
}

// locateWrite is locate for a path to be written: a read-only root
// refuses it.
func (w *Workspace) locateWrite(p string) (*root, string, error) {
	r, rel, err := w.locate(p)
	if err == nil && r.readOnly {
		return nil, "", fmt.Errorf("refused: %s is in %s, which the file tools may read but not write", p, r.path)
	}
	return r, rel, err
}

// rootList names the roots for an error message.
func (w *Workspace) rootList() string {
	s := "the working directory " + w.dir
	if rw := w.Roots(); len(rw) > 1 {
		s += " and the added directories " + strings.Join(rw[1:], ", ")
	}
	var ro []string
	for _, r := range w.roots {
		if r.readOnly {
			ro = append(ro, r.path)
		}
	}
	if len(ro) > 0 {
		s += " (and, to read only, " + strings.Join(ro, ", ") + ")"
	}
	return s
}

// within reports whether p lies in dir, and returns its path relative to
// dir ("." for dir itself).
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// resolveLinks returns the absolute, clean path p with every symbolic link
// in it resolved. Unlike filepath.EvalSymlinks it accepts a path whose
// tail does not exist yet (a file about to be written), and resolves a
// dangling link to where it points.
func resolveLinks(p string) (string, error) {
	done := filepath.VolumeName(p) + string(filepath.Separator)
	rest := splitPath(p[len(done):])
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > 64 {
			return "", errors.New("too many levels of symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = filepath.VolumeName(target) + string(filepath.Separator)
			target = target[len(done):]
		}
		rest = append(splitPath(target), rest...)
	}
	return done, nil
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == filepath.Separator || r == '/' })
}

// display returns how a result names the file at rel in r: relative to
// the working directory when it is inside it, else absolute.
func (w *Workspace) display(r *root, rel string) string {
	abs := filepath.Join(r.path, rel)
	if d, ok := within(w.dir, abs); ok {
		return filepath.ToSlash(d)
	}
	return abs
}
