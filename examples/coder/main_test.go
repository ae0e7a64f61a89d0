package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
)

// session is a model that greps, reads, edits and runs go test.
func session() []anthropictest.Reply {
	step := func(id, name, input string) anthropictest.Reply {
		return anthropictest.NewStream().ToolUse(id, name, input).Stop("tool_use")
	}
	return []anthropictest.Reply{
		anthropictest.NewStream().Text("Let me find Sum.").ToolUse("toolu_1", "grep", `{"pattern":"func Sum"}`).Stop("tool_use"),
		step("toolu_2", "read_file", `{"path":"sum.go"}`),
		step("toolu_3", "edit_file", `{"path":"sum.go","old_string":"a - b","new_string":"a + b"}`),
		step("toolu_4", "bash", `{"command":"go test ./..."}`),
		anthropictest.NewStream().Text("Sum subtracted instead of adding. It adds now, and the test passes.").Stop("end_turn"),
	}
}

// repo makes a Go module with a failing test in a temp directory and
// makes it the working directory.
func repo(t *testing.T) {
	t.Chdir(t.TempDir())
	os.WriteFile("go.mod", []byte("module sum\n\ngo 1.21\n"), 0o644)
	os.WriteFile("sum.go", []byte("package sum\n\nfunc Sum(a, b int) int { return a - b }\n"), 0o644)
	os.WriteFile("sum_test.go", []byte("package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(Sum(2, 3))\n\t}\n}\n"), 0o644)
}

func TestCoder(t *testing.T) {
	for _, tc := range []struct {
		name, answers string
		args          []string
		want          []string
		fixed         bool
	}{
		{"yes", "", []string{"-yes", "fix", "the", "test"},
			[]string{"Let me find Sum.\n→ grep", "  sum.go:3:func Sum", "  edited sum.go", "$ go test ./...\n  ok  \tsum", "the test passes.\n\n[finished after 5 model calls"}, true},
		{"asked", "y\nn\n", []string{"fix the test"},
			[]string{"-func Sum(a, b int) int { return a - b }\n", "+func Sum(a, b int) int { return a + b }", "allow edit_file? [y/N/a(lways edit_file)] ",
				"allow bash? [y/N/a(lways bash(go test ./...))] ", "denied: the user said no"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo(t)
			srv := anthropictest.NewServer(session()...)
			defer srv.Close()
			env := map[string]string{"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": srv.URL}
			var out strings.Builder
			if err := run(t.Context(), tc.args, func(k string) string { return env[k] }, strings.NewReader(tc.answers), &out); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			b, _ := os.ReadFile("sum.go")
			if strings.Contains(string(b), "a + b") != tc.fixed {
				t.Errorf("sum.go = %q", b)
			}
			if res := srv.Requests()[4].ToolResults(); len(res) != 1 || tc.name == "yes" && !strings.Contains(res[0].Content[0].Text, "ok  \tsum") {
				t.Errorf("go test's tool_result: %+v", res)
			}
		})
	}
}

func TestNoTask(t *testing.T) {
	if err := run(t.Context(), nil, func(string) string { return "" }, strings.NewReader(""), new(strings.Builder)); err == nil {
		t.Error("no error without a task")
	}
}
