package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/internal/testenv"
)

// instructionsServer starts a real MCP server (the go-sdk's) over
// streamable HTTP on loopback, named name, that gives instructions in its
// handshake, and returns its URL.
func instructionsServer(t *testing.T, name, instructions string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "v1"}, &mcp.ServerOptions{Instructions: instructions})
	mcp.AddTool(srv, &mcp.Tool{Name: name + "_ping", Description: "Answers pong."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// instructionsBlock is how the system prompt labels one server's
// instructions.
func instructionsBlock(name, instructions string) string {
	return fmt.Sprintf("The MCP server %s gives these instructions for its tools:\n<mcp_server_instructions server=%q>\n%s\n</mcp_server_instructions>",
		name, name, instructions)
}

// systemText returns the system prompt of a request body, sent as a string
// or as text blocks; "" when there is none.
func systemText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct{ Text string }
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("system %s: %v", raw, err)
	}
	var texts []string
	for _, b := range blocks {
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "")
}

// everythingInstructions returns the command line that starts the
// reference server from npm and the instructions it gives, read from the
// file it reads them from; it skips t when the server is not installed.
func everythingInstructions(t *testing.T) (string, string) {
	t.Helper()
	cmd := testenv.EverythingServer(t)
	bin, err := filepath.EvalSymlinks(cmd[0]) // .../server-everything/dist/index.js
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "docs", "instructions.md"))
	if err != nil {
		t.Fatal(err)
	}
	return shellLine(cmd), strings.TrimSpace(string(b))
}

// TestMCPInstructions checks that the instructions each connected MCP
// server gives reach the model's system prompt: after --system and
// --append-system, labelled with the server's name, in the order the
// servers are given, capped; and that a server without instructions adds
// nothing.
func TestMCPInstructions(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The cap is written out, 4096 bytes, so that a wrong instructionsCap
	// fails: 4,081 bytes of ASCII, then é after é, so that byte 4096 is the
	// second of an é and the cut, on a rune boundary, keeps 4095 bytes.
	long := strings.Repeat("Call the tools in order. ", 163) + "Then: " + strings.Repeat("é", 10000)
	for _, tt := range []struct {
		name string
		// setup returns the flags, given servers started for the case, and
		// the system prompt they must give.
		setup func(t *testing.T) (args []string, want string)
	}{{
		name: "no servers",
		setup: func(*testing.T) ([]string, string) {
			return []string{"--system", "Be brief."}, "Be brief."
		},
	}, {
		name: "a server without instructions adds nothing",
		setup: func(*testing.T) ([]string, string) {
			return []string{"--system", "Be brief.", "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1"}, "Be brief."
		},
	}, {
		name: "after --system and --append-system, in the order given",
		setup: func(t *testing.T) ([]string, string) {
			return []string{"--system", "Be brief.", "--append-system", "Say when done.",
					"--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", // no instructions
					"--mcp-url", instructionsServer(t, "zeta", "Zeta's tools are slow: call them once.\n"),
					"--mcp-url", instructionsServer(t, "alpha", "  Alpha answers in French.  ")},
				"Be brief.\n\nSay when done.\n\n" + instructionsBlock("zeta", "Zeta's tools are slow: call them once.") +
					"\n\n" + instructionsBlock("alpha", "Alpha answers in French.")
		},
	}, {
		name: "without a system prompt, only the instructions",
		setup: func(t *testing.T) ([]string, string) {
			return []string{"--mcp-url", instructionsServer(t, "solo", "Use solo_ping first.")},
				instructionsBlock("solo", "Use solo_ping first.")
		},
	}, {
		name: "capped at 4096 bytes, on a rune boundary",
		setup: func(t *testing.T) ([]string, string) {
			if len(long) != 24081 || utf8.RuneStart(long[4096]) || !utf8.RuneStart(long[4095]) {
				t.Fatalf("the input does not have byte 4096 inside an é (%d bytes)", len(long))
			}
			return []string{"--system", "Be brief.", "--mcp-url", instructionsServer(t, "chatty", long)},
				"Be brief.\n\n" + instructionsBlock("chatty", long[:4095]+"… [19986 more bytes]")
		},
	}, {
		name: "a config file's servers, by their config names",
		setup: func(t *testing.T) ([]string, string) {
			cfg := filepath.Join(t.TempDir(), "mcp.json")
			b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
				"second": map[string]string{"type": "http", "url": instructionsServer(t, "two", "Two.")},
				"first":  map[string]string{"type": "http", "url": instructionsServer(t, "one", "One.")},
			}})
			if err := os.WriteFile(cfg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"--system", "Be brief.", "--mcp-config", cfg},
				"Be brief.\n\n" + instructionsBlock("first", "One.") + "\n\n" + instructionsBlock("second", "Two.")
		},
	}, {
		name: "the reference server from npm",
		setup: func(t *testing.T) ([]string, string) {
			line, in := everythingInstructions(t)
			return []string{"--system", "Be brief.", "--mcp", line},
				"Be brief.\n\n" + instructionsBlock("mcp-servers_everything", in)
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			args, want := tt.setup(t)
			args = append([]string{"--tools", "calculator"}, args...)
			h := newHarness(t, text("ok"))
			r := h.run(strings.NewReader(""), append(args, "hi")...)
			r.check(t, 0)
			if strings.Contains(r.stderr, "not available") {
				t.Fatalf("a server failed:\n%s", r.stderr)
			}
			p, err := h.srv.Requests()[0].Params()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, systemText(t, p.System)); diff != "" {
				t.Errorf("system prompt (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPInstructionsWorker checks that a durable worker's system prompt,
// the one of the runs that bring none, has its servers' instructions too.
func TestMCPInstructionsWorker(t *testing.T) {
	h := newHarness(t)
	f := &fakeDurable{}
	h.runDurable(f, strings.NewReader(""), "worker", "--temporal", "localhost:7233", "--tools", "calculator",
		"--append-system", "Be brief.", "--mcp-url", instructionsServer(t, "solo", "Use solo_ping first.")).check(t, exitOK)
	want := "Be brief.\n\n" + instructionsBlock("solo", "Use solo_ping first.")
	if diff := cmp.Diff(want, f.worker.System); diff != "" {
		t.Errorf("worker's system prompt (-want +got):\n%s", diff)
	}
}

// TestMCPHandshakeTimeoutHint checks that a server given up on for its
// handshake is reported with the flag that gives it longer, and that
// another failure is not.
func TestMCPHandshakeTimeoutHint(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const hint = "if it is only slow to start, give it longer with --mcp-timeout, such as --mcp-timeout 400ms"
	for _, tt := range []struct {
		name     string
		args     []string
		wantHint bool
	}{
		// The test binary, made a server that reads its stdin and never
		// answers.
		{"never answers", []string{"--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "--mcp-env", "AGENTLOOP_TEST_MCP_MUTE=1"}, true},
		{"cannot start", []string{"--mcp", "/nonexistent/mcp-server-xyz"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, text("fine"))
			r := h.run(strings.NewReader(""), append(tt.args, "--tools", "calculator", "--mcp-timeout", "200ms", "hi")...)
			r.check(t, 0)
			if !strings.Contains(r.stderr, "is not available") {
				t.Fatalf("stderr does not report the server:\n%s", r.stderr)
			}
			if got := strings.Contains(r.stderr, hint); got != tt.wantHint {
				t.Errorf("stderr has the hint %q: %v, want %v:\n%s", hint, got, tt.wantHint, r.stderr)
			}
		})
	}
}
