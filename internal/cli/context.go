package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/tools/skills"
)

// instructionsCapBytes caps each instructions file given to the model: a
// long file costs its tokens on every request.
const instructionsCapBytes = 40_000

// contextOptions are the flags of the project's context: its instructions
// files (AGENTS.md, CLAUDE.md) and skills, and the user's own.
type contextOptions struct {
	off       bool   // --no-project-context
	configDir string // the user's config directory, "" if unknown
}

func (c *contextOptions) define(fs *flag.FlagSet) {
	fs.BoolVar(&c.off, "no-project-context", false, "")
}

// An instructionsFile is one AGENTS.md or CLAUDE.md given to the model.
type instructionsFile struct {
	path string
	text string // cut to instructionsCapBytes, with a note
}

// instructionsFiles returns the instructions files for dir, in the order
// the model reads them: the user's own (agentloop/AGENTS.md in the config
// directory) first, then one per directory from the repository's root down
// to dir, so that the nearest comes last and counts most. In each
// directory AGENTS.md is read, else CLAUDE.md. Without a repository (no
// .git in dir or above it) only dir is read.
//
// A file that cannot be read is skipped, with a warning.
func (c *contextOptions) instructionsFiles(dir string) ([]instructionsFile, []string) {
	if c.off {
		return nil, nil
	}
	var paths []string
	if c.configDir != "" {
		paths = append(paths, filepath.Join(c.configDir, "agentloop", "AGENTS.md"))
	}
	for _, d := range repoDirs(dir) {
		p := filepath.Join(d, "AGENTS.md")
		if !isRegular(p) {
			p = filepath.Join(d, "CLAUDE.md")
		}
		paths = append(paths, p)
	}
	var out []instructionsFile
	var warnings []string
	for _, p := range paths {
		if !isRegular(p) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			warnings = append(warnings, "agentloop: skipping an instructions file: "+err.Error())
			continue
		}
		text := strings.TrimSpace(string(b))
		if len(text) > instructionsCapBytes {
			// Cut on a rune boundary.
			text = strings.ToValidUTF8(text[:instructionsCapBytes], "") +
				fmt.Sprintf("\n[agentloop: this file has %d bytes; only the first %d are shown here: read it with read_file for the rest]", len(b), instructionsCapBytes)
		}
		if text != "" {
			out = append(out, instructionsFile{path: p, text: text})
		}
	}
	return out, warnings
}

// repoDirs returns the directories from the root of the repository dir is
// in down to dir, or dir alone outside a repository.
func repoDirs(dir string) []string {
	dirs := []string{dir}
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			// dirs runs from dir up to the root: the model reads it downwards.
			for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
				dirs[i], dirs[j] = dirs[j], dirs[i]
			}
			return dirs
		}
		up := filepath.Dir(d)
		if up == d {
			return []string{dir}
		}
		d = up
		dirs = append(dirs, d)
	}
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// withInstructionsFiles returns system with the instructions files after
// it, each labelled with its path, and a line that names them.
func withInstructionsFiles(system string, files []instructionsFile) string {
	if len(files) == 0 {
		return system
	}
	var b strings.Builder
	b.WriteString(system)
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.path
	}
	fmt.Fprintf(&b, "Instructions files loaded: %s. They are the user's and the project's instructions for your work here: follow them. Where they disagree, the later file, nearer the working directory, wins.", strings.Join(paths, ", "))
	for _, f := range files {
		fmt.Fprintf(&b, "\n\n<instructions path=%q>\n%s\n</instructions>", f.path, f.text)
	}
	return b.String()
}

// contextDirs are where files of a kind ("skills", "agents") are looked
// for, in the one order in which the first of a name wins: the working
// directory's .claude/KIND, where Claude Code reads them, then its
// .agents/KIND, the cross-tool convention, so a project that keeps both
// gets Claude Code's; then the user's agentloop/KIND in the config
// directory, so a project's stands in for a user's of its name, as Claude
// Code's project subagents do.
func (c *contextOptions) contextDirs(dir, kind string) []string {
	if c.off {
		return nil
	}
	dirs := []string{filepath.Join(dir, ".claude", kind), filepath.Join(dir, ".agents", kind)}
	if c.configDir != "" {
		dirs = append(dirs, filepath.Join(c.configDir, "agentloop", kind))
	}
	return dirs
}

// findSkills returns the skills for dir, and a warning for each malformed
// SKILL.md, which is skipped.
func (c *contextOptions) findSkills(dir string) ([]skills.Skill, []string) {
	found, err := skills.Find(c.contextDirs(dir, "skills")...)
	if err == nil {
		return found, nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	warnings := make([]string, len(errs))
	for i, e := range errs {
		warnings[i] = "agentloop: skipping a skill: " + e.Error()
	}
	return found, warnings
}
