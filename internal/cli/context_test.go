package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
)

// tree makes the files of a tree under dir: path → content; a path ending
// in / is a directory.
func tree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		p := filepath.Join(dir, path)
		if strings.HasSuffix(path, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInstructionsFiles: AGENTS.md (else CLAUDE.md) from each directory
// between the repository's root and the working directory, the user's own
// first and the nearest last, with --system too, each cut at the cap.
func TestInstructionsFiles(t *testing.T) {
	base := t.TempDir()
	base, _ = filepath.EvalSymlinks(base)
	long := strings.Repeat("x", instructionsCapBytes+100)
	tree(t, base, map[string]string{
		"AGENTS.md":                     "above the repository: never read",
		"config/agentloop/AGENTS.md":    "user rules",
		"repo/.git/":                    "",
		"repo/AGENTS.md":                "root rules",
		"repo/sub/CLAUDE.md":            "sub rules",
		"repo/sub/deep/AGENTS.md":       "deep rules",
		"repo/sub/deep/CLAUDE.md":       "deep CLAUDE.md: AGENTS.md wins",
		"repo/long/AGENTS.md":           long,
		"norepo/AGENTS.md":              "outside any repository",
		"norepo/inner/AGENTS.md":        "inner",
		"repo/sub/deep/.claude/skills/": "",
	})
	user := filepath.Join(base, "config", "agentloop", "AGENTS.md")
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		want []string // the files' paths and texts, in order
		not  []string
	}{
		{"nested", "repo/sub/deep", nil,
			[]string{user, "user rules", filepath.Join(base, "repo/AGENTS.md"), "root rules", filepath.Join(base, "repo/sub/CLAUDE.md"), "sub rules",
				filepath.Join(base, "repo/sub/deep/AGENTS.md"), "deep rules"},
			[]string{"never read", "AGENTS.md wins"}},
		{"with --system", "repo/sub/deep", []string{"--system", "Be brief.", "--append-system", "Use tabs."},
			[]string{"Be brief.", "root rules", "deep rules", "Use tabs."}, nil},
		{"off", "repo/sub/deep", []string{"--no-project-context"}, nil, []string{"rules"}},
		{"outside a repository", "norepo/inner", nil, []string{"user rules", "inner"}, []string{"outside any repository"}},
		{"cut", "repo/long", nil, []string{"root rules", strings.Repeat("x", instructionsCapBytes) + "\n[agentloop: this file has 40100 bytes; only the first 40000 are shown here: read it with read_file for the rest]\n</instructions>"},
			[]string{strings.Repeat("x", instructionsCapBytes+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(filepath.Join(base, tc.dir))
			h := newHarness(t, text("ok"))
			h.env["XDG_CONFIG_HOME"] = filepath.Join(base, "config")
			r := h.run(strings.NewReader(""), append(tc.args, "-v", "hi")...)
			r.check(t, 0)
			sys := systemOf(t, h.srv.Requests()[0])
			at := 0
			for _, w := range tc.want {
				i := strings.Index(sys[at:], w)
				if i < 0 {
					t.Fatalf("the system prompt lacks %q after byte %d:\n%s", w, at, sys)
				}
				at += i + len(w)
			}
			for _, w := range tc.not {
				if strings.Contains(sys, w) {
					t.Errorf("the system prompt has %q:\n%s", w, sys)
				}
			}
			if tc.name == "nested" {
				if !strings.Contains(sys, "Instructions files loaded: "+user+", ") {
					t.Errorf("the system prompt does not say which files it loaded:\n%s", sys)
				}
				if !strings.Contains(r.stderr, "instructions file loaded") || !strings.Contains(r.stderr, filepath.Join(base, "repo/sub/CLAUDE.md")) {
					t.Errorf("-v does not name the files:\n%s", r.stderr)
				}
			}
		})
	}
}

// TestSkills: a project's skills are offered by name and description; the
// skill tool returns one's instructions, its files are readable but not
// writable, and a malformed SKILL.md is skipped with a warning naming it.
func TestSkills(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	t.Chdir(dir)
	tree(t, dir, map[string]string{
		".claude/skills/release/SKILL.md":       "---\nname: release\ndescription: Cut a release.\n---\nRun scripts/tag.sh, then push.",
		".claude/skills/release/scripts/tag.sh": "git tag v1\n",
		".agents/skills/broken/SKILL.md":        "---\nname: broken\n---\nno description",
	})
	tag := filepath.Join(dir, ".claude/skills/release/scripts/tag.sh")
	call := func(id, name, input string) anthropictest.Reply {
		return anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse(id, name, input).Stop("tool_use", 5)
	}
	h := newHarness(t,
		call("toolu_1", "skill", `{"name":"release"}`),
		call("toolu_2", "read_file", `{"path":".claude/skills/release/scripts/tag.sh"}`),
		call("toolu_3", "write_file", `{"path":".claude/skills/release/scripts/tag.sh","content":"rm -rf /\n"}`),
		text("done"))
	r := h.run(strings.NewReader(""), "--yes", "release it")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "agentloop: skipping a skill: skills: "+filepath.Join(dir, ".agents/skills/broken/SKILL.md")+": the front matter has no description") {
		t.Errorf("no warning naming the malformed skill:\n%s", r.stderr)
	}
	reqs := h.srv.Requests()
	if names := toolNames(t, reqs[0]); !contains(names, "skill") {
		t.Fatalf("no skill tool offered: %v", names)
	}
	for i, want := range []struct {
		text    string
		isError bool
	}{
		{"Run scripts/tag.sh, then push.\n</skill>\n\nThe skill's files, relative to " + filepath.Join(dir, ".claude/skills/release"), false},
		{"git tag v1", false},
		{"may read but not write", true},
	} {
		res := reqs[i+1].ToolResults()
		if len(res) != 1 || res[0].IsError != want.isError || !strings.Contains(res[0].Content[0].Text, want.text) {
			t.Errorf("call %d: tool_results %+v, want %q", i+1, res, want.text)
		}
	}
	if b, _ := os.ReadFile(tag); string(b) != "git tag v1\n" {
		t.Errorf("the skill's file was written: %q", b)
	}
}

// TestContextDirsOrder: skills and agent files of one name in the
// project's .claude and .agents and the user's config directory: the
// first of contextDirs' order wins for both kinds alike.
func TestContextDirsOrder(t *testing.T) {
	file := map[string]string{"skills": "skills/dup/SKILL.md", "agents": "agents/dup.md"}
	for _, tc := range []struct {
		name string
		have []string // of .claude, .agents, user
		want string
	}{
		{"all three", []string{".claude", ".agents", "user"}, ".claude"},
		{"project's .agents over the user's", []string{".agents", "user"}, ".agents"},
		{"the user's alone", []string{"user"}, "user"},
	} {
		for _, kind := range []string{"skills", "agents"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				files := map[string]string{"project/": ""}
				for _, from := range tc.have {
					root := "project/" + from + "/"
					if from == "user" {
						root = "config/agentloop/"
					}
					files[root+file[kind]] = "---\nname: dup\ndescription: from " + from + "\n---\nbody"
				}
				tree(t, dir, files)
				t.Chdir(filepath.Join(dir, "project"))
				h := newHarness(t, text("ok"))
				h.env["XDG_CONFIG_HOME"] = filepath.Join(dir, "config")
				h.run(strings.NewReader(""), "hi").check(t, 0)
				body := string(h.srv.Requests()[0].Body)
				if n := strings.Count(body, "- dup: from "); n != 1 || !strings.Contains(body, "- dup: from "+tc.want) {
					t.Errorf("the tool offers dup %d times, want once, from %s:\n%s", n, tc.want, body)
				}
			})
		}
	}
}
