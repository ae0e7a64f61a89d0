package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/testenv"
)

// shellLine returns words as one --mcp line, each word quoted as a shell
// would, so that a clone whose path holds a space still splits back into
// the same words.
func shellLine(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// TestMCPEverything drives the CLI with --mcp against the reference MCP
// server from npm: the scripted model calls the server's echo tool, and the
// server's real answer must come back to the model as the tool_result.
func TestMCPEverything(t *testing.T) {
	line := shellLine(testenv.EverythingServer(t))
	// The servers get this marker through --mcp-env, and what they start
	// inherits it, so that any process left behind can be found afterwards.
	marker := "agentloop-mcp-test-" + strconv.Itoa(os.Getpid())
	t.Setenv("AGENTLOOP_TEST_MARKER", marker)

	// The server names itself, and its echo tool is mcp__<that>__echo.
	h := newHarness(t,
		anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
			echo := ""
			if p, err := r.Params(); err == nil {
				for _, raw := range p.Tools {
					var tool struct{ Name string }
					if json.Unmarshal(raw, &tool) == nil && strings.HasPrefix(tool.Name, "mcp__") && strings.HasSuffix(tool.Name, "__echo") {
						echo = tool.Name
					}
				}
			}
			return anthropictest.NewStream().Text("Echoing.").
				ToolUse("toolu_e", echo, `{"mess`, `age": "hello from`, ` agentloop"}`).Stop("tool_use")
		}),
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
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp__") && strings.HasSuffix(n, "__echo") }) ||
		!contains(names, "calculator") {
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
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_model", Description: "Asks the client's model, by sampling."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			// Multi round-trip (SEP-2322): the first call asks for the
			// completion; the client retries it with the answer.
			answer, ok := req.Params.InputResponses["pong"]
			if !ok {
				//lint:ignore SA1019 sampling is what this tool tests.
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"pong": &mcp.CreateMessageParams{
					MaxTokens: 100, Temperature: 0.7, // a hint the client must not send on
					//lint:ignore SA1019 sampling is what this tool tests.
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say pong."}}},
				}}}, nil, nil
			}
			var said string
			//lint:ignore SA1019 sampling is what this tool tests.
			if res, ok := answer.(*mcp.CreateMessageWithToolsResult); ok && len(res.Content) == 1 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					said = tc.Text
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("model said: %s", said)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", Description: "Asks the user for their name and age."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			answer, ok := req.Params.InputResponses["q"]
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{
					Message: "Who are you?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
						"name": map[string]any{"type": "string"},
						"age":  map[string]any{"type": "integer", "default": 30},
					}, "required": []any{"name"}},
				}}}, nil, nil
			}
			b, _ := json.Marshal(answer)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	if os.Getenv("AGENTLOOP_TEST_MCP_MUTE") != "" {
		io.Copy(io.Discard, os.Stdin) // never answers the handshake
		os.Exit(0)
	}
	if os.Getenv("AGENTLOOP_TEST_MCP_NOLIST") != "" {
		// Completes the handshake, but never lists its tools.
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
	}
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
		anthropictest.NewStream().ToolUse("toolu_g", "mcp__crashy__greet", `{}`).Stop("tool_use"),
		anthropictest.NewStream().ToolUse("toolu_c", "mcp__crashy__crash", `{}`).Stop("tool_use"),
		anthropictest.NewStream().
			ToolUse("toolu_g2", "mcp__crashy__greet", `{}`).
			ToolUse("toolu_k", "calculator", `{"a":6,"b":7,"operation":"multiply"}`).Stop("tool_use"),
		text("The server crashed; 6 × 7 = 42."),
	)
	r := h.run(strings.NewReader(""), "--tools", "calculator", "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "go")
	r.check(t, 0)
	for _, want := range []string{"← mcp__crashy__greet#1 hello", `✗ mcp__crashy__crash#2 error:`, `"crashy"`, "✗ mcp__crashy__greet#3 error:", "← calculator#4 42"} {
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
				anthropictest.NewStream().ToolUse("toolu_e", "mcp__crashy__env", `{}`).Stop("tool_use"),
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

// TestMCPEnvInvalid checks that a bad --mcp-env exits 2 naming the flag
// and what is wrong, without showing a value.
func TestMCPEnvInvalid(t *testing.T) {
	const names = ": want NAME=VALUE or NAME, with a name of letters, digits and underscores"
	for _, tt := range []struct{ arg, want string }{
		{"1BAD=sk-SECRET", `--mcp-env: environment entry "1BAD" is not NAME=VALUE` + names},
		{"=x", `--mcp-env: environment entry "" is not NAME=VALUE` + names},
		{"UNSET_VARIABLE_XYZ", "--mcp-env UNSET_VARIABLE_XYZ: UNSET_VARIABLE_XYZ is not set in this environment"},
	} {
		arg := tt.arg
		h := newHarness(t)
		r := h.run(strings.NewReader(""), "--mcp", "true", "--mcp-env", arg, "hi")
		r.check(t, 2)
		if !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "SECRET") {
			t.Errorf("--mcp-env %s: stderr = %q, want %q in it", arg, r.stderr, tt.want)
		}
		if n := len(h.srv.Requests()); n != 0 {
			t.Errorf("--mcp-env %s: %d requests sent", arg, n)
		}
	}
}

// TestMCPHandshakeTimeout checks that a server that never completes the
// handshake is given up on after --mcp-timeout, named, and the run goes on.
func TestMCPHandshakeTimeout(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, text("fine"))
	r := h.run(strings.NewReader(""), "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "--mcp-env", "AGENTLOOP_TEST_MCP_MUTE=1",
		"--mcp-timeout", "200ms", "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "handshake timed out") || !strings.Contains(r.stderr, exe) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestMCPListTimeout checks that a server that completes the handshake
// but never lists its tools does not hold the start up: --mcp-timeout
// bounds the listing too, and the run goes on without it.
func TestMCPListTimeout(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, text("fine"))
	r := h.run(strings.NewReader(""), "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "--mcp-env", "AGENTLOOP_TEST_MCP_NOLIST=1",
		// Long enough for the handshake of a race-built test binary on a loaded
		// machine (200ms failed there), which the listing then waits out.
		"--mcp-timeout", "3s", "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "some of its tools are not available") || r.stdout != "fine\n" {
		t.Errorf("stdout %q, stderr:\n%s", r.stdout, r.stderr)
	}
}

// TestMCPSampling checks that --mcp-sampling serves a server's sampling
// request with the agent's model, and that without it (and no terminal)
// sampling is off.
func TestMCPSampling(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			replies := []anthropictest.Reply{anthropictest.NewStream().ToolUse("toolu_s", "mcp__crashy__ask_model", `{}`).Stop("tool_use")}
			if on {
				replies = append(replies, text("pong"))
			}
			replies = append(replies, text("done"))
			h := newHarness(t, replies...)
			args := []string{"--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1"}
			if on {
				args = append(args, "--mcp-sampling")
			}
			r := h.run(strings.NewReader(""), append(args, "go")...)
			r.check(t, 0)
			reqs := h.srv.Requests()
			res := reqs[len(reqs)-1].ToolResults()
			want := "model said: pong"
			if !on {
				want = "does not support CreateMessage"
			}
			if len(res) != 1 || !strings.Contains(res[0].Content[0].Text, want) {
				t.Errorf("tool results = %+v, want %q\n%s", res, want, r.stderr)
			}
		})
	}
}

// TestMCPElicitation checks a server's form: asked on a terminal, field by
// field, with a bad answer asked again and an empty one taking the
// default; declined when not interactive and a required field has no
// default.
func TestMCPElicitation(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		terminal bool
		input    string
		want     string
	}{
		{"terminal", true, "y\nthirty\n\nGrace\n", `{"action":"accept","content":{"age":30,"name":"Grace"}}`},
		{"terminal, declined", true, "n\n", `{"action":"decline"}`},
		{"not interactive", false, "", `{"action":"decline"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t,
				anthropictest.NewStream().ToolUse("toolu_a", "mcp__crashy__ask", `{}`).Stop("tool_use"),
				text("done"),
			)
			h.terminals["stdin"], h.terminals["stderr"] = tc.terminal, tc.terminal
			r := h.run(strings.NewReader(tc.input), "--mcp", exe, "--mcp-env", "AGENTLOOP_TEST_MCP=1", "go")
			r.check(t, 0)
			res := h.srv.Requests()[1].ToolResults()
			if len(res) != 1 || res[0].Content[0].Text != tc.want {
				t.Errorf("tool results = %+v, want %s\n%s", res, tc.want, r.stderr)
			}
			if tc.terminal && !strings.Contains(r.stderr, "Who are you?") {
				t.Errorf("the question is not on stderr:\n%s", r.stderr)
			}
		})
	}
}

// TestElicitMalformedForm checks that a form whose schema is not a JSON
// Schema is declined without asking, saying why.
func TestElicitMalformedForm(t *testing.T) {
	var out strings.Builder
	term := &terminal{in: strings.NewReader("y\n"), out: &out}
	res, err := term.elicit(t.Context(), "srv", &mcp.ElicitParams{Message: "Who?", RequestedSchema: map[string]any{"type": 5}})
	if err != nil || res.Action != "decline" {
		t.Errorf("elicit = %+v, %v; want a decline", res, err)
	}
	if !strings.Contains(out.String(), "declined: mcptool: the requested schema is not a JSON Schema") || strings.Contains(out.String(), "Answer it?") {
		t.Errorf("the terminal shows:\n%s", out.String())
	}
}
