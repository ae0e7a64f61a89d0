package skills

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// ToolName is the skill tool's name, as the model calls it.
const ToolName = "skill"

// Input is the skill tool's input.
type Input struct {
	Name string `json:"name" jsonschema:"the name of the skill to load"`
}

// maxListed caps the files a loaded skill lists; the model can glob for
// more.
const maxListed = 50

// Tool returns the skill tool, which offers skills to the model: its
// description lists each skill's name and description, and a call returns
// that skill's instructions, the path of its folder and the files in it.
// Reading those files is the file tools' job: give them the skills' folders
// (read-only, for instance with files.Config.ReadDirs).
func Tool(skills []Skill) *tool.Tool {
	var d strings.Builder
	d.WriteString("Load a skill: instructions, and often files, for a kind of task. Before you start a task that a skill below covers, call this tool with its name and follow the instructions it returns. Load a skill only when it applies.\n\nSkills:")
	names := make([]string, len(skills))
	for i, s := range skills {
		names[i] = s.Name
		fmt.Fprintf(&d, "\n- %s: %s", s.Name, strings.Join(strings.Fields(s.Description), " "))
	}
	t, err := tool.New(ToolName, d.String(), func(ctx context.Context, in Input) (string, error) {
		i := slices.IndexFunc(skills, func(s Skill) bool { return s.Name == in.Name })
		if i < 0 {
			return "", fmt.Errorf("no skill is named %q; the skills are %s", in.Name, strings.Join(names, ", "))
		}
		return load(skills[i])
	})
	if err != nil {
		panic("skills: " + err.Error()) // Input is fixed: this cannot happen
	}
	return t
}

// load returns what a call of the tool returns for s.
func load(s Skill) (string, error) {
	body, err := s.Instructions()
	if err != nil {
		return "", err
	}
	var files []string
	filepath.WalkDir(s.Dir, func(path string, e fs.DirEntry, err error) error {
		switch {
		case err != nil || len(files) > maxListed:
			return fs.SkipAll
		case e.IsDir() && strings.HasPrefix(e.Name(), ".") && path != s.Dir:
			return fs.SkipDir
		case !e.IsDir() && path != filepath.Join(s.Dir, FileName):
			rel, _ := filepath.Rel(s.Dir, path)
			files = append(files, rel)
		}
		return nil
	})
	var b strings.Builder
	fmt.Fprintf(&b, "<skill name=%q dir=%q>\n%s\n</skill>", s.Name, s.Dir, body)
	if len(files) > 0 {
		if len(files) > maxListed {
			files = append(files[:maxListed], "…")
		}
		fmt.Fprintf(&b, "\n\nThe skill's files, relative to %s (read them with the file tools when the instructions call for them):\n%s", s.Dir, strings.Join(files, "\n"))
	}
	return b.String(), nil
}
