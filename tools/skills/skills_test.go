package skills_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/skills"
)

// write makes the files of a tree under dir: path → content.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const pdf = "---\nname: pdf\ndescription: Fill in PDF forms.\n  Use it for any .pdf file.\nlicense: MIT\n---\n# PDF\n\nRun scripts/fill.py.\n"

func TestFind(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	write(t, project, map[string]string{
		"pdf/SKILL.md":          pdf,
		"pdf/scripts/fill.py":   "print(1)\n",
		"crlf/SKILL.md":         "---\r\nname: crlf\r\ndescription: Windows line ends.\r\n---\r\nBody.\r\n",
		"notaskill/README.md":   "no SKILL.md here",
		"noname/SKILL.md":       "---\ndescription: d\n---\nbody",
		"nodesc/SKILL.md":       "---\nname: nodesc\n---\nbody",
		"wrongdir/SKILL.md":     "---\nname: other\ndescription: d\n---\n",
		"Upper/SKILL.md":        "---\nname: Upper\ndescription: d\n---\n",
		"nofront/SKILL.md":      "# just markdown\n",
		"unclosed/SKILL.md":     "---\nname: unclosed\ndescription: d\n",
		"badyaml/SKILL.md":      "---\nname: [badyaml\ndescription: d\n---\n",
		"long/SKILL.md":         "---\nname: long\ndescription: " + strings.Repeat("x", 1025) + "\n---\n",
		"onlyfront/SKILL.md":    "---\nname: onlyfront\ndescription: No body.\n---",
		"file-not-a-skill.md":   "stray",
		"pdf/.git/HEAD":         "ignored",
		"pdf/reference/form.md": "fields",
	})
	write(t, user, map[string]string{
		"pdf/SKILL.md":    "---\nname: pdf\ndescription: The user's own, shadowed by the project's.\n---\n",
		"review/SKILL.md": "---\nname: review\ndescription: Review a change.\n---\nLook hard.",
	})
	got, err := skills.Find(project, user, filepath.Join(project, "missing"))
	want := []skills.Skill{
		{Name: "crlf", Description: "Windows line ends.", Dir: filepath.Join(project, "crlf")},
		{Name: "onlyfront", Description: "No body.", Dir: filepath.Join(project, "onlyfront")},
		{Name: "pdf", Description: "Fill in PDF forms. Use it for any .pdf file.", Dir: filepath.Join(project, "pdf")},
		{Name: "review", Description: "Review a change.", Dir: filepath.Join(user, "review")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
	if err == nil {
		t.Fatal("no error for the malformed files")
	}
	for _, w := range []string{
		"noname/SKILL.md: the front matter has no name",
		"nodesc/SKILL.md: the front matter has no description",
		`wrongdir/SKILL.md: name "other" differs from its folder's, "wrongdir"`,
		`Upper/SKILL.md: name "Upper": want lower-case`,
		"nofront/SKILL.md: no front matter",
		"unclosed/SKILL.md: the front matter has no closing line",
		"badyaml/SKILL.md: the front matter:",
		"long/SKILL.md: the description has 1025 characters",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q:\n%v", w, err)
		}
	}
}

// call runs one call of the skill tool.
func call(t *testing.T, tl *tool.Tool, name string) llm.ToolResult {
	t.Helper()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(tl); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(skills.Input{Name: name})
	return reg.Run(context.Background(), []llm.ToolUse{{ID: "toolu_1", Name: skills.ToolName, Input: in}})[0]
}

func TestTool(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"pdf/SKILL.md": pdf, "pdf/scripts/fill.py": "print(1)\n", "pdf/.hidden/x": "x"})
	found, err := skills.Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	tl := skills.Tool(found)
	if d := tl.Spec().Description; !strings.Contains(d, "\n- pdf: Fill in PDF forms. Use it for any .pdf file.") || strings.Contains(d, "Run scripts") {
		t.Errorf("the description should list names and descriptions only:\n%s", d)
	}
	res := call(t, tl, "pdf")
	text := llm.TextOf(res.Content)
	skillDir := filepath.Join(dir, "pdf")
	want := "<skill name=\"pdf\" dir=\"" + skillDir + "\">\n# PDF\n\nRun scripts/fill.py.\n</skill>\n\nThe skill's files, relative to " + skillDir +
		" (read them with the file tools when the instructions call for them):\nscripts/fill.py"
	if res.IsError || text != want {
		t.Errorf("the skill tool returned (is_error %v):\n%s\nwant:\n%s", res.IsError, text, want)
	}
	// An edit since Find counts; a skill that is gone is an error for the model.
	write(t, dir, map[string]string{"pdf/SKILL.md": strings.Replace(pdf, "Run scripts/fill.py.", "Edited.", 1)})
	if text := llm.TextOf(call(t, tl, "pdf").Content); !strings.Contains(text, "Edited.") {
		t.Errorf("the instructions were not read at the call:\n%s", text)
	}
	res = call(t, tl, "nope")
	if !res.IsError || !strings.Contains(llm.TextOf(res.Content), `no skill is named "nope"; the skills are pdf`) {
		t.Errorf("unknown skill: %+v", res)
	}
}
