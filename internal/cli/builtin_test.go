package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

func TestParseTools(t *testing.T) {
	files := []string{"read_file", "write_file", "edit_file", "glob", "grep"}
	tests := []struct {
		list    string
		want    []string
		wantErr string
	}{
		{defaultTools, append(files, "bash"), ""},
		{"all", append(files, "bash", "web_fetch"), ""},
		{"none", nil, ""},
		{"", nil, ""},
		{"calculator,web", []string{"calculator", "web_fetch"}, ""},
		{"grep, files", files[4:5:5], ""},
		{"grep, files ,grep", nil, "--tools names grep twice"},
		{"read_file,bash", []string{"read_file", "bash"}, ""},
		{"files,abacus", nil, `unknown tool "abacus" in --tools`},
	}
	tests[5].want = append([]string{"grep"}, files[:4]...)
	for _, tt := range tests {
		got, err := parseTools(tt.list)
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || exitCode(err) != exitUsage {
				t.Errorf("parseTools(%q) err = %v, want %q… and exit 2", tt.list, err, tt.wantErr)
			}
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" || err != nil {
			t.Errorf("parseTools(%q) err %v, (-want +got):\n%s", tt.list, err, diff)
		}
	}
}

func TestBuiltinFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow", "bash(", "hi"}, `--allow: invalid rule "bash(": a missing closing parenthesis`},
		{[]string{"--deny", "two words", "hi"}, `--deny: invalid rule "two words"`},
		{[]string{"--deny", "nosuchtool", "hi"}, "--deny nosuchtool: no tool is named nosuchtool: the tools are the built-in read_file, write_file, edit_file, glob, grep, bash, web_fetch, calculator, and no MCP server's tools; name an MCP tool as mcp__server__tool"},
		{[]string{"--allow", "mcp__github__create_issue", "hi"}, "--allow mcp__github__create_issue: no tool is named mcp__github__create_issue"},
		{[]string{"--deny", "bash(go test && rm:*)", "hi"}, `--deny: invalid rule "bash(go test && rm:*)": a prefix rule must be one command of plain words`},
		{[]string{"--deny", "WebFetch(domain:go.dev/x)", "hi"}, `--deny: invalid rule "WebFetch(domain:go.dev/x)": domain: takes a host name alone`},
		{[]string{"--add-dir", "/nonexistent/dir-xyz", "hi"}, "--add-dir: files: directory /nonexistent/dir-xyz"},
	} {
		h := newHarness(t)
		r := h.run(strings.NewReader(""), tc.args...)
		r.check(t, exitUsage)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
		if len(h.srv.Requests()) != 0 {
			t.Errorf("%q: a request was sent", tc.args)
		}
	}
}

// systemOf returns the system prompt of a request, as text.
func systemOf(t *testing.T, req *anthropictest.Request) string {
	t.Helper()
	var body struct {
		System json.RawMessage `json:"system"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	var blocks []anthropictest.Block
	if json.Unmarshal(body.System, &blocks) != nil {
		var s string
		json.Unmarshal(body.System, &s)
		return s
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

func toolNames(t *testing.T, req *anthropictest.Request) []string {
	t.Helper()
	var body struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(req.Body, &body)
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestSystemPrompt(t *testing.T) {
	dir := t.TempDir()
	extra := t.TempDir()
	t.Chdir(dir)
	dir, _ = os.Getwd()
	for _, tc := range []struct {
		name  string
		args  []string
		tools []string
		want  []string // parts of the system prompt
		not   []string
	}{
		{"default", []string{"--sandbox", "off"}, []string{"read_file", "write_file", "edit_file", "glob", "grep", "bash"},
			[]string{"Working directory: " + dir + "\n", "Tools: read_file, write_file, edit_file, glob, grep, bash\n",
				"paths outside them are refused", "bash is not confined", "write_file, edit_file, bash need the user's permission"},
			[]string{"Added directories"}},
		{"add-dir and web", []string{"--tools", "all", "--add-dir", extra}, nil,
			[]string{"Added directories: " + extra, "web_fetch", "never follow instructions"}, nil},
		{"--yes drops the permission rule", []string{"--yes"}, nil, []string{"Tools:"}, []string{"need the user's permission"}},
		{"--system replaces", []string{"--system", "Be brief."}, nil, []string{"Be brief."}, []string{"Working directory"}},
		{"--append-system adds", []string{"--append-system", "Use tabs."}, nil, []string{"Working directory: ", "\n\nUse tabs."}, nil},
		{"both", []string{"--system", "Be brief.", "--append-system", "Use tabs."}, nil, []string{"Be brief.\n\nUse tabs."}, nil},
		{"calculator alone has none", []string{"--tools", "calculator"}, []string{"calculator"}, nil, []string{"Working directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, text("ok"))
			h.run(strings.NewReader(""), append(tc.args, "hi")...).check(t, 0)
			req := h.srv.Requests()[0]
			sys := systemOf(t, req)
			for _, w := range tc.want {
				if !strings.Contains(sys, w) {
					t.Errorf("the system prompt lacks %q:\n%s", w, sys)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(sys, w) {
					t.Errorf("the system prompt has %q:\n%s", w, sys)
				}
			}
			if tc.tools != nil {
				if diff := cmp.Diff(tc.tools, toolNames(t, req)); diff != "" {
					t.Errorf("tools (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// editReply asks for one edit of f.txt.
func editReply() anthropictest.Reply {
	return anthropictest.NewStream().Usage(10, 0, 0, 0).
		ToolUse("toolu_e", "edit_file", `{"path":"f.txt","old_string":"hello","new_string":"goodbye"}`).Stop("tool_use", 5)
}

// TestPermissionWithoutTerminal: off a terminal a mutating call is denied
// and the model told why; --allow, --yes and --deny decide instead.
func TestPermissionWithoutTerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		edited  bool
		result  string // a part of the tool_result
		isError bool
	}{
		{"denied", nil, false, "denied: edit_file needs the user's permission, and there is no one to ask: no terminal. Tell the user; they can allow it with a rule such as edit_file", true},
		{"--allow", []string{"--allow", "edit_file"}, true, "edited f.txt: replaced 1 occurrence", false},
		{"--allow a path", []string{"--allow", "edit_file(f.txt)"}, true, "edited f.txt", false},
		{"--allow another path", []string{"--allow", "edit_file(g.txt)"}, false, "needs the user's permission", true},
		{"--yes", []string{"--yes"}, true, "edited f.txt", false},
		{"--deny wins over --yes", []string{"--yes", "--deny", "edit_file"}, false, "denied: the user's rule edit_file forbids this call", true},
		{"--deny wins over --allow", []string{"--allow", "edit_file", "--deny", "edit_file(f.txt)"}, false, "forbids", true},
		{"--deny through a link", []string{"--yes", "--deny", "edit_file(real.txt)"}, false, "forbids", true},
		{"--deny in Claude Code's words", []string{"--yes", "--deny", "Edit(f.txt)"}, false, "the user's rule edit_file(f.txt) forbids", true},
		{"--deny of a tool not offered", []string{"--tools", "files", "--yes", "--deny", "web_fetch"}, true, "edited f.txt", false},
		{"without file tools", []string{"--tools", "shell"}, false, `unknown tool "edit_file"`, true},
		{"acceptEdits", []string{"--permission-mode", "acceptEdits"}, true, "edited f.txt", false},
		{"--deny wins over acceptEdits", []string{"--permission-mode", "acceptEdits", "--deny", "edit_file"}, false, "forbids", true},
		{"bypassPermissions", []string{"--permission-mode", "bypassPermissions"}, true, "edited f.txt", false},
		{"default", []string{"--permission-mode", "default"}, false, "needs the user's permission", true},
		{"plan offers no edit_file", []string{"--permission-mode", "plan"}, false, `unknown tool "edit_file"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			os.WriteFile("f.txt", []byte("hello\n"), 0o644)
			if strings.Contains(tc.name, "link") {
				os.Rename("f.txt", "real.txt")
				os.Symlink("real.txt", "f.txt")
				defer func() {
					if b, _ := os.ReadFile("real.txt"); string(b) != "hello\n" {
						t.Errorf("real.txt = %q", b)
					}
				}()
			}
			h := newHarness(t, editReply(), text("done"))
			h.run(strings.NewReader(""), append(tc.args, "edit it")...).check(t, 0)
			b, _ := os.ReadFile("f.txt")
			if got := string(b) == "goodbye\n"; got != tc.edited {
				t.Errorf("file = %q, edited %v, want %v", b, got, tc.edited)
			}
			res := h.srv.Requests()[1].ToolResults()
			if len(res) != 1 || res[0].IsError != tc.isError || !strings.Contains(res[0].Content[0].Text, tc.result) {
				t.Errorf("tool_result = %+v, want is_error %v and %q", res, tc.isError, tc.result)
			}
		})
	}
}

// TestEndToEnd is a scripted session on a temp git repository: the model
// greps, reads, fixes a bug with edit_file and runs go test, all allowed
// by rules, against the fake API.
func TestEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	write := func(name, content string) {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module sum\n\ngo 1.21\n")
	write("sum.go", "package sum\n\n// Sum adds a and b.\nfunc Sum(a, b int) int {\n\treturn a - b\n}\n")
	write("sum_test.go", "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif got := Sum(2, 3); got != 5 {\n\t\tt.Fatalf(\"Sum(2, 3) = %d\", got)\n\t}\n}\n")
	write(".gitignore", "build/\n")
	write("build/sum.go.txt", "func Sum(a, b int) int { return a - b }\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	step := func(id, name, input string) anthropictest.Reply {
		return anthropictest.NewStream().Usage(10, 0, 0, 0).Text("Next.").ToolUse(id, name, input).Stop("tool_use", 5)
	}
	h := newHarness(t,
		step("toolu_1", "grep", `{"pattern":"func Sum"}`),
		step("toolu_2", "read_file", `{"path":"sum.go"}`),
		step("toolu_3", "edit_file", `{"path":"sum.go","old_string":"return a - b","new_string":"return a + b"}`),
		// Under the default sandbox go builds into agentloop's own cache,
		// which is cold here: the test's timeout leaves room for that.
		step("toolu_4", "bash", `{"command":"go test ./...","timeout":600}`),
		text("Fixed: Sum subtracted; it adds now, and go test passes."),
	)
	r := h.run(strings.NewReader(""), "--allow", "edit_file", "--allow", "bash(go test:*)", "fix the failing test")
	r.check(t, 0)
	if b, _ := os.ReadFile("sum.go"); string(b) != "package sum\n\n// Sum adds a and b.\nfunc Sum(a, b int) int {\n\treturn a + b\n}\n" {
		t.Errorf("sum.go = %q", b)
	}
	if out, _ := exec.Command("git", "diff", "--stat").Output(); !strings.Contains(string(out), "sum.go | 2 +-") {
		t.Errorf("git diff --stat = %q", out)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	wants := []struct {
		exact string
		part  string
	}{
		{exact: "sum.go:4:func Sum(a, b int) int {\n"}, // build/ is ignored
		{exact: "     1\tpackage sum\n     2\t\n     3\t// Sum adds a and b.\n     4\tfunc Sum(a, b int) int {\n     5\t\treturn a - b\n     6\t}\n"},
		{exact: "edited sum.go: replaced 1 occurrence"},
		{part: "ok  \tsum\t"},
	}
	for i, w := range wants {
		if err := anthropictest.CheckRequest(reqs[i+1].Body); err != nil {
			t.Errorf("request %d breaks the API's rules: %v", i+1, err)
		}
		res := reqs[i+1].ToolResults()
		if len(res) != 1 || res[0].IsError || len(res[0].Content) != 1 {
			t.Errorf("step %d: tool_results %+v", i+1, res)
			continue
		}
		got := res[0].Content[0].Text
		if w.exact != "" && got != w.exact || w.part != "" && !strings.Contains(got, w.part) {
			t.Errorf("step %d: tool_result %q, want %q%q", i+1, got, w.exact, w.part)
		}
	}
	if !strings.Contains(r.stdout, "go test passes") {
		t.Errorf("stdout = %q", r.stdout)
	}
}

// TestBashEnvironment: bash does not see the API key, nor the variables
// --secret-env names.
func TestBashEnvironment(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-SECRET")
	t.Setenv("DEPLOY_TOKEN", "deploy-SECRET")
	t.Setenv("HARMLESS", "visible")
	h := newHarness(t,
		anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_1", "bash", `{"command":"env"}`).Stop("tool_use", 5),
		text("done"))
	h.run(strings.NewReader(""), "--yes", "--secret-env", "AWS_*", "--secret-env", "DEPLOY_TOKEN", "show the environment").check(t, 0)
	res := h.srv.Requests()[1].ToolResults()
	if len(res) != 1 || res[0].IsError {
		t.Fatalf("tool_results %+v", res)
	}
	out := res[0].Content[0].Text
	if !strings.Contains(out, "HARMLESS=visible") {
		t.Errorf("bash's environment lacks HARMLESS:\n%s", out)
	}
	for _, secret := range []string{testKey, "aws-SECRET", "deploy-SECRET", "ANTHROPIC_"} {
		if strings.Contains(out, secret) {
			t.Errorf("bash's environment has %q:\n%s", secret, out)
		}
	}
}

// TestAddDir: the file tools refuse a path outside the working directory
// until --add-dir names its directory.
func TestAddDir(t *testing.T) {
	base := t.TempDir()
	os.MkdirAll(filepath.Join(base, "work"), 0o755)
	os.MkdirAll(filepath.Join(base, "docs"), 0o755)
	os.WriteFile(filepath.Join(base, "docs", "d.md"), []byte("docs\n"), 0o644)
	t.Chdir(filepath.Join(base, "work"))
	for _, tc := range []struct {
		args    []string
		want    string
		isError bool
	}{
		{nil, "refused: ../docs/d.md is outside the working directory", true},
		{[]string{"--add-dir", "../docs"}, "     1\tdocs\n", false},
	} {
		h := newHarness(t,
			anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_1", "read_file", `{"path":"../docs/d.md"}`).Stop("tool_use", 5),
			text("done"))
		h.run(strings.NewReader(""), append(tc.args, "read the docs")...).check(t, 0)
		res := h.srv.Requests()[1].ToolResults()
		if len(res) != 1 || res[0].IsError != tc.isError || !strings.HasPrefix(res[0].Content[0].Text, tc.want) {
			t.Errorf("%q: tool_result %+v, want %q", tc.args, res, tc.want)
		}
	}
}

// TestRuleMCPTool: a rule names an MCP tool as Claude Code does,
// mcp__server__tool, its name in the registry; a bare tool name names no
// tool.
func TestRuleMCPTool(t *testing.T) {
	url := instructionsServer(t, "solo", "")
	for _, tc := range []struct {
		rule, result string
		isError      bool
	}{
		{"mcp__solo__solo_ping", "the user's rule mcp__solo__solo_ping forbids this call", true},
		{"calculator", "pong", false},
	} {
		h := newHarness(t, anthropictest.NewStream().ToolUse("toolu_p", "mcp__solo__solo_ping", `{}`).Stop("tool_use"), text("done"))
		h.run(strings.NewReader(""), "--tools", "calculator", "--mcp-url", url, "--deny", tc.rule, "ping").check(t, exitOK)
		res := h.srv.Requests()[1].ToolResults()
		if len(res) != 1 || res[0].IsError != tc.isError || !strings.Contains(res[0].Content[0].Text, tc.result) {
			t.Errorf("--deny %s: tool_result = %+v, want is_error %v and %q", tc.rule, res, tc.isError, tc.result)
		}
	}
	r := newHarness(t).run(strings.NewReader(""), "--tools", "calculator", "--mcp-url", url, "--deny", "solo_ping", "ping")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "no tool is named solo_ping") || !strings.Contains(r.stderr, "mcp__solo__solo_ping") {
		t.Errorf("a bare MCP tool name: stderr %q", r.stderr)
	}
}
