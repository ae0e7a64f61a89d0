package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/testenv"
)

// TestMCPEverything drives the CLI with --mcp against the reference MCP
// server from npm: the scripted model calls the server's echo tool, and the
// server's real answer must come back to the model as the tool_result.
func TestMCPEverything(t *testing.T) {
	line := testenv.EverythingServer(t)
	// The servers get this marker through --mcp-env, and what they start
	// inherits it, so that any process left behind can be found afterwards.
	marker := "agentloop-mcp-test-" + strconv.Itoa(os.Getpid())
	t.Setenv("AGENTLOOP_TEST_MARKER", marker)

	h := newHarness(t,
		anthropictest.NewStream().Text("Echoing.").
			ToolUse("toolu_e", "echo", `{"mess`, `age": "hello from`, ` agentloop"}`).Stop("tool_use"),
		text("The server said hello."),
	)
	r := h.run(strings.NewReader(""), "--tools", "calculator", "--mcp", line, "--mcp", "/nonexistent/mcp-server-xyz --flag",
		"--mcp-env", "AGENTLOOP_TEST_MARKER="+marker, "echo something")
	r.check(t, 0)

	// The broken server is named, and the run went on without it.
	if !strings.Contains(r.stderr, "/nonexistent/mcp-server-xyz") {
		t.Errorf("stderr does not name the server that failed:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "The server said hello.") {
		t.Errorf("stdout = %q", r.stdout)
	}

	reqs := h.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	p, err := reqs[0].Params()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, raw := range p.Tools {
		var tool struct{ Name string }
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !contains(names, "echo") || !contains(names, "calculator") {
		t.Errorf("tools offered = %v, want the server's echo and the built-in calculator", names)
	}
	results := reqs[1].ToolResults()
	if len(results) != 1 || results[0].IsError || len(results[0].Content) == 0 ||
		results[0].Content[0].Text != "Echo: hello from agentloop" {
		t.Errorf("tool results = %+v, want the server's echo", results)
	}

	// Close waited for the server; nothing it started may outlive the run.
	if pids := processesWith(t, marker); len(pids) > 0 {
		t.Errorf("processes left behind: %v", pids)
	}
}

// processesWith returns the ids of the processes, other than this one,
// whose environment contains marker.
func processesWith(t *testing.T, marker string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Logf("cannot look for orphans without /proc: %v", err)
		return nil
	}
	self := strconv.Itoa(os.Getpid())
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, []byte(marker)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestMCPFailure checks that a server that cannot start is reported by
// name, and that the agent works on with the other tools.
func TestMCPFailure(t *testing.T) {
	h := newHarness(t,
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"a":2,"b":2,"operation":"add"}`).Stop("tool_use"),
		text("4"),
	)
	r := h.run(strings.NewReader(""), "--tools", "calculator",
		"--mcp", "/nonexistent/mcp-server-xyz", "--mcp-url", "http://127.0.0.1:1/mcp", "2+2")
	r.check(t, 0)
	for _, want := range []string{"/nonexistent/mcp-server-xyz", "http://127.0.0.1:1/mcp", "← calculator#1 4"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "4\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
}

// crashServer is an MCP server over stdio with three tools: greet, which
// answers, env, which returns the server's environment, and crash, which
// kills the server mid-call.
func crashServer() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "crashy", Version: "v0"}, nil)
	type none struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Says hello."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "env", Description: "Returns the server's environment."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Crashes the server."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

// TestMCPCrash checks that a server crashing mid-run gives the model an
// error naming the server, shown on stderr, and that the run goes on with
// the other tools.
func TestMCPCrash(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The server is this test binary; the variable makes it one.
	h := newHarness(t,
		anthropictest.NewStream().ToolUse("toolu_g", "greet", `{}`).Stop("tool_use"),
		anthropictest.NewStream().ToolUse("toolu_c", "crash", `{}`).Stop("tool_use"),
		anthropictest.NewStream().
			ToolUse("toolu_g2", "greet", `{}`).
			ToolUse("toolu_k", "calculator", `{"a":6,"b":7,"operation":"multiply"}`).Stop("tool_use"),
		text("The server crashed; 6 × 7 = 42."),
	)
	r := h.run(strings.NewReader(""), "--tools", "calculator", "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "go")
	r.check(t, 0)
	for _, want := range []string{"← greet#1 hello", `✗ crash#2 error:`, `"crashy"`, "✗ greet#3 error:", "← calculator#4 42"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "The server crashed; 6 × 7 = 42.\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	results := h.srv.Requests()[3].ToolResults()
	if len(results) != 2 || !results[0].IsError || !strings.Contains(results[0].Content[0].Text, "crashy") || results[1].IsError {
		t.Errorf("tool results after the crash = %+v, want an error naming the server, then 42", results)
	}
}

// TestMCPEnv checks that a --mcp server does not inherit the API key or
// anything else of the command's environment beyond the basic variables,
// and that --mcp-env passes a variable on purpose, by value or by name.
func TestMCPEnv(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The key is in the real environment too, where a child would inherit
	// it from.
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-SECRET")
	for _, tc := range []struct {
		name    string
		flags   []string
		want    []string
		notWant []string
	}{
		{"default", nil, []string{"AGENTLOOP_TEST_MCP=1"}, []string{testKey, "aws-SECRET", "ANTHROPIC_API_KEY", "PASSED"}},
		{"by name", []string{"--mcp-env", "ANTHROPIC_API_KEY", "--mcp-env", "PASSED=yes"},
			[]string{"ANTHROPIC_API_KEY=" + testKey, "PASSED=yes"}, []string{"aws-SECRET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t,
				anthropictest.NewStream().ToolUse("toolu_e", "env", `{}`).Stop("tool_use"),
				text("done"),
			)
			args := append([]string{"--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1"}, tc.flags...)
			r := h.run(strings.NewReader(""), append(args, "go")...)
			r.check(t, 0)
			results := h.srv.Requests()[1].ToolResults()
			if len(results) != 1 || results[0].IsError {
				t.Fatalf("tool results = %+v", results)
			}
			env := "\n" + results[0].Content[0].Text + "\n"
			for _, w := range tc.want {
				if !strings.Contains(env, "\n"+w+"\n") {
					t.Errorf("server environment lacks %s:\n%s", w, env)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(env, nw) {
					t.Errorf("server environment holds %s:\n%s", nw, env)
				}
			}
		})
	}
}

// TestMCPEnvInvalid checks that a bad --mcp-env exits 2 naming the flag,
// without showing a value.
func TestMCPEnvInvalid(t *testing.T) {
	for _, arg := range []string{"1BAD=sk-SECRET", "=x", "UNSET_VARIABLE_XYZ"} {
		h := newHarness(t)
		r := h.run(strings.NewReader(""), "--mcp", "true", "--mcp-env", arg, "hi")
		r.check(t, 2)
		if !strings.Contains(r.stderr, "--mcp-env") || strings.Contains(r.stderr, "SECRET") {
			t.Errorf("--mcp-env %s: stderr = %q", arg, r.stderr)
		}
		if n := len(h.srv.Requests()); n != 0 {
			t.Errorf("--mcp-env %s: %d requests sent", arg, n)
		}
	}
}
