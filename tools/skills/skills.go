// Package skills offers the model skills: folders that hold a SKILL.md
// (YAML front matter with a name and a description, then instructions)
// and any files those instructions refer to. The model is told each
// skill's name and description only, in the description of the skill
// tool, and loads a skill's instructions by calling the tool when it needs
// them, so that many skills cost little context.
//
//	found, err := skills.Find(".claude/skills", filepath.Join(configDir, "agentloop", "skills"))
//	// err names each malformed SKILL.md, which Find skipped
//	reg.Register(skills.Tool(found))
//
// The format is Claude Code's and the Agent Skills standard's: name is
// lower-case letters, digits and hyphens, at most 64, and the same as the
// skill's folder; description says what the skill does and when to use
// it, at most 1024 characters. Other front matter fields are allowed and
// ignored.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// FileName is the name of a skill's instructions file in its folder.
const FileName = "SKILL.md"

// A Skill is one skill found by [Find].
type Skill struct {
	// Name is the skill's name, from its front matter.
	Name string
	// Description says what the skill does and when to use it.
	Description string
	// Dir is the skill's folder, absolute: its SKILL.md and files.
	Dir string
}

// maxSkillBytes caps a SKILL.md: instructions are meant to be read whole.
const maxSkillBytes = 256 << 10

var validName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Find returns the skills in dirs, each a folder that holds one folder per
// skill (dir/NAME/SKILL.md), in the order of dirs and then by name. A dir
// that does not exist holds none. A skill whose name an earlier one took
// is left out, so a project's skill can stand in for a user's of the same
// name when its folder comes first.
//
// A SKILL.md that cannot be read or is malformed is skipped; the error
// names each such file and what is wrong with it, and comes with the
// skills that were found.
func Find(dirs ...string) ([]Skill, error) {
	var out []Skill
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue // none, as when a directory on its path is a file
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("skills: %w", err))
			continue
		}
		for _, e := range entries {
			if !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			s, err := Load(filepath.Join(dir, e.Name()))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // a folder that is not a skill
			case err != nil:
				errs = append(errs, err)
			case slices.ContainsFunc(out, func(o Skill) bool { return o.Name == s.Name }):
				continue
			default:
				out = append(out, s)
			}
		}
	}
	return out, errors.Join(errs...)
}

// Load reads the skill in dir, from dir/SKILL.md. The error wraps
// fs.ErrNotExist when dir holds no SKILL.md.
func Load(dir string) (Skill, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Skill{}, err
	}
	path := filepath.Join(abs, FileName)
	meta, _, err := read(path)
	if err != nil {
		return Skill{}, err
	}
	s := Skill{Name: meta.Name, Description: strings.TrimSpace(meta.Description), Dir: abs}
	switch {
	case s.Name == "":
		return Skill{}, fmt.Errorf("skills: %s: the front matter has no name", path)
	case len(s.Name) > 64 || !validName.MatchString(s.Name):
		return Skill{}, fmt.Errorf("skills: %s: name %q: want lower-case letters, digits and single hyphens, at most 64", path, s.Name)
	case s.Name != filepath.Base(abs):
		return Skill{}, fmt.Errorf("skills: %s: name %q differs from its folder's, %q", path, s.Name, filepath.Base(abs))
	case s.Description == "":
		return Skill{}, fmt.Errorf("skills: %s: the front matter has no description", path)
	case len(s.Description) > 1024:
		return Skill{}, fmt.Errorf("skills: %s: the description has %d characters; at most 1024", path, len(s.Description))
	}
	return s, nil
}

// Instructions returns the body of the skill's SKILL.md: its text after
// the front matter, read now, so that an edit made since Find counts.
func (s Skill) Instructions() (string, error) {
	_, body, err := read(filepath.Join(s.Dir, FileName))
	return body, err
}

// frontMatter is the part of a SKILL.md's front matter this package reads.
type frontMatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// read parses the SKILL.md at path into its front matter and its body.
func read(path string) (frontMatter, string, error) {
	var meta frontMatter
	f, err := os.Open(path)
	if err != nil {
		return meta, "", fmt.Errorf("skills: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return meta, "", fmt.Errorf("skills: %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSkillBytes+1))
	if err != nil {
		return meta, "", fmt.Errorf("skills: %w", err)
	}
	if len(b) > maxSkillBytes {
		return meta, "", fmt.Errorf("skills: %s: larger than %d KiB", path, maxSkillBytes>>10)
	}
	yml, body, err := SplitFrontMatter(b)
	if err != nil {
		return meta, "", fmt.Errorf("skills: %s: %w", path, err)
	}
	if err := yaml.Unmarshal(yml, &meta); err != nil {
		return meta, "", fmt.Errorf("skills: %s: the front matter: %w", path, err)
	}
	return meta, body, nil
}

// SplitFrontMatter splits a Markdown file with YAML front matter, as
// Claude Code's skills and agent files are, into the front matter and the
// body after it, trimmed. It fails unless b begins with a line --- and has
// a closing one.
func SplitFrontMatter(b []byte) (yml []byte, body string, err error) {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return nil, "", errors.New("no front matter: the file must begin with a line ---")
	}
	yml, after, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		if yml, ok = bytes.CutSuffix(rest, []byte("\n---")); !ok {
			return nil, "", errors.New("the front matter has no closing line ---")
		}
	}
	return yml, strings.TrimSpace(string(after)), nil
}
