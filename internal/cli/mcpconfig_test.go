package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// writeConfig writes an .mcp.json into dir.
func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMCPConfig checks --mcp-config: a stdio server with its env (a
// ${VAR} from the environment), and bad entries reported by file and key,
// without their values, while the good server works.
func TestMCPConfig(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmdJSON, _ := json.Marshal(exe)
	path := writeConfig(t, t.TempDir(), `{"mcpServers": {
		"local": {"command": `+string(cmdJSON)+`, "args": [], "env": {"AGENTLOOP_TEST_MCP": "1", "TOKEN": "${MY_TOKEN}"}},
		"typo": {"comand": "x"},
		"missing": {"command": "/nonexistent/mcp-server", "args": ["--token", "${MY_TOKEN}"]},
		"unset": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${NOT_SET_ANYWHERE}"}},
		"wrongtype": {"command": "x", "args": "sk-SECRET"},
		"badenv": {"command": "x", "env": {"BAD-NAME": "sk-SECRET"}}
	}}`)
	h := newHarness(t,
		anthropictest.NewStream().ToolUse("toolu_e", "env", `{}`).Stop("tool_use"),
		text("done"),
	)
	h.env["MY_TOKEN"] = "tok-from-env"
	r := h.run(strings.NewReader(""), "--mcp-config", path, "go")
	r.check(t, 0)
	for _, want := range []string{path + ": mcpServers.typo: unknown key \"comand\"", "mcpServers.unset: headers.Authorization: ${NOT_SET_ANYWHERE} is not set",
		"mcpServers.wrongtype: args: want []string", `mcpServers.badenv: env: "BAD-NAME" is not a variable name`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "sk-SECRET") || strings.Contains(r.stderr, "tok-from-env") {
		t.Errorf("stderr shows a value from the file or the environment:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, `MCP server "missing" is not available`) {
		t.Errorf("stderr does not name the server that failed:\n%s", r.stderr)
	}
	res := h.srv.Requests()[1].ToolResults()
	if len(res) != 1 || !strings.Contains(res[0].Content[0].Text, "\nTOKEN=tok-from-env") {
		t.Errorf("the server's environment lacks its env: %+v", res)
	}

	// A file that is not JSON is named with the line of the error, and
	// the run goes on.
	bad := writeConfig(t, t.TempDir(), "{\n  \"mcpServers\": {,\n}")
	r = newHarness(t, text("fine")).run(strings.NewReader(""), "--mcp-config", bad, "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, bad+" is not valid JSON: line 2") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestMCPConfigInWorkingDirectory checks that a .mcp.json found in the
// working directory starts nothing unless the user agrees on a terminal.
func TestMCPConfigInWorkingDirectory(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmdJSON, _ := json.Marshal(exe)
	writeConfig(t, dir, `{"mcpServers": {"local": {"command": `+string(cmdJSON)+`, "env": {"AGENTLOOP_TEST_MCP": "1"}}}}`)
	t.Chdir(dir)
	for _, tc := range []struct {
		name     string
		terminal bool
		answer   string
		used     bool
	}{
		{"not a terminal", false, "", false},
		{"declined", true, "n\n", false},
		{"agreed", true, "y\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, text("ok"))
			h.terminals["stdin"], h.terminals["stderr"] = tc.terminal, tc.terminal
			r := h.run(strings.NewReader(tc.answer), "--tools", "none", "hi") // only the MCP server's tools count
			r.check(t, 0)
			p, err := h.srv.Requests()[0].Params()
			if err != nil {
				t.Fatal(err)
			}
			if got := len(p.Tools) > 0; got != tc.used {
				t.Errorf("servers used = %v, want %v\n%s", got, tc.used, r.stderr)
			}
			if !tc.terminal && !strings.Contains(r.stderr, "--mcp-config .mcp.json") {
				t.Errorf("no note about the unused .mcp.json:\n%s", r.stderr)
			}
		})
	}
}

// TestExpand checks the ${VAR} forms a config file may use.
func TestExpand(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "EMPTY": ""}
	for _, tc := range []struct{ in, want, err string }{
		{"Bearer ${TOKEN}", "Bearer t0k", ""},
		{"${MISSING:-fallback}/x", "fallback/x", ""},
		{"${EMPTY:-used}", "used", ""},
		{"$TOKEN and ${ not a ref", "$TOKEN and ${ not a ref", ""},
		{"${MISSING}", "", "k: ${MISSING} is not set"},
	} {
		x := expander{getenv: func(k string) string { return env[k] }}
		got := x.expand("k", tc.in)
		if tc.err != "" {
			if x.err == nil || !strings.Contains(x.err.Error(), tc.err) {
				t.Errorf("expand(%q) error = %v, want %q", tc.in, x.err, tc.err)
			}
			continue
		}
		if got != tc.want || x.err != nil {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, x.err, tc.want)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		line    string
		want    []string
		wantErr string
	}{
		{"npx -y @modelcontextprotocol/server-everything", []string{"npx", "-y", "@modelcontextprotocol/server-everything"}, ""},
		{"  srv\t--a  b  ", []string{"srv", "--a", "b"}, ""},
		{`srv 'two words' "and \"more\"" x\ y`, []string{"srv", "two words", `and "more"`, "x y"}, ""},
		{`srv '' "" 'it''s'`, []string{"srv", "", "", "its"}, ""},
		{`srv "a\nb" 'a\b'`, []string{"srv", `a\nb`, `a\b`}, ""},
		{`srv --path="/a b/c"`, []string{"srv", "--path=/a b/c"}, ""},
		{"", nil, "empty command"},
		{"   ", nil, "empty command"},
		{`srv 'open`, nil, "unterminated single quote"},
		{`srv "open`, nil, "unterminated double quote"},
		{`srv \`, nil, "trailing backslash"},
	}
	for _, tt := range tests {
		got, err := splitCommand(tt.line)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("splitCommand(%q) error = %v, want %q", tt.line, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("splitCommand(%q): %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("splitCommand(%q) (-want +got):\n%s", tt.line, diff)
		}
	}
}

// TestMCPFlagBadLine checks that an --mcp line that does not split is
// reported, naming the line and what is wrong with it, and the run goes on.
func TestMCPFlagBadLine(t *testing.T) {
	r := newHarness(t, text("fine")).run(strings.NewReader(""), "--mcp", `srv "unclosed`, "hi")
	r.check(t, 0)
	for _, want := range []string{`MCP server "srv \"unclosed" is not available`, "unterminated double quote"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}
