package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/mcptest"
)

// TestBrowserHelper is the browser of the OAuth tests: run as
// "$BROWSER URL", it consents and follows the redirects back to the CLI.
// In a normal test run it has no URL and skips.
func TestBrowserHelper(t *testing.T) {
	if flag.NArg() != 1 || !strings.HasPrefix(flag.Arg(0), "http") {
		t.Skip("not run as a browser")
	}
	if err := mcptest.Browse(t.Context(), flag.Arg(0)); err != nil {
		t.Fatal(err)
	}
}

// TestMCPOAuth drives the CLI against a real OAuth-protected server:
// $BROWSER consents, the tool works, the token lands in the config
// directory with mode 0600, the next run reuses it without a browser, and
// once it is revoked the run after says so and authorizes again.
func TestMCPOAuth(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := mcptest.NewOAuthServer(t)
	config := t.TempDir()
	for run := 1; run <= 3; run++ {
		if run == 3 {
			srv.RevokeAll() // the user signed agentloop out at the server
		}
		h := newHarness(t,
			anthropictest.NewStream().ToolUse("toolu_w", "mcp__guarded__whoami", `{}`).Stop("tool_use"),
			text("You are authorized."),
		)
		h.env["XDG_CONFIG_HOME"] = config
		h.env["BROWSER"] = exe + " -test.run=^TestBrowserHelper$"
		r := h.run(strings.NewReader(""), "--mcp-url", srv.URL, "who am I?")
		r.check(t, 0)
		if res := h.srv.Requests()[1].ToolResults(); len(res) != 1 || res[0].IsError || res[0].Content[0].Text != "authorized" {
			t.Fatalf("run %d: tool results = %+v", run, res)
		}
		printed := strings.Contains(r.stderr, srv.AuthURL+"/authorize?")
		if run == 1 && !printed {
			t.Errorf("run 1: the authorization URL is not on stderr:\n%s", r.stderr)
		}
		if run == 2 && (printed || srv.Count("authorize") != 1) {
			t.Errorf("run 2 authorized again (%d authorizations):\n%s", srv.Count("authorize"), r.stderr)
		}
		if run == 3 && (!printed || !strings.Contains(r.stderr, "refused the saved authorization")) {
			t.Errorf("run 3, after revocation, did not say why it authorized again:\n%s", r.stderr)
		}
	}
	dir := filepath.Join(config, "agentloop", "mcp-tokens")
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("token files in %s: %v", dir, files)
	}
	if st, err := os.Stat(filepath.Join(dir, files[0].Name())); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
}

// TestMCPHeader checks that --mcp-header reaches the server.
func TestMCPHeader(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "keyed", Version: "v1"}, nil)
	type none struct{}
	mcp.AddTool(server, &mcp.Tool{Name: "ping", Description: "Pong."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k-123" {
			http.Error(w, "no key", http.StatusForbidden)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()
	h := newHarness(t,
		anthropictest.NewStream().ToolUse("toolu_p", "mcp__keyed__ping", `{}`).Stop("tool_use"),
		text("pong"),
	)
	r := h.run(strings.NewReader(""), "--mcp-url", ts.URL, "--mcp-header", "X-Api-Key: k-123", "ping")
	r.check(t, 0)
	if res := h.srv.Requests()[1].ToolResults(); len(res) != 1 || res[0].IsError {
		t.Errorf("tool results = %+v\n%s", res, r.stderr)
	}
	r = newHarness(t).run(strings.NewReader(""), "--mcp-header", "no colon", "hi")
	r.check(t, 2)
}

// TestMCPAuthorizationServerDown checks that a server whose authorization
// server is not running is reported with both named, and that the run goes
// on with the other tools.
func TestMCPAuthorizationServerDown(t *testing.T) {
	downURL := mcptest.DownURL(t)
	guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":"http://%s/mcp","authorization_servers":[%q]}`, r.Host, downURL)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer guarded.Close()
	h := newHarness(t,
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"a":2,"b":2,"operation":"add"}`).Stop("tool_use"),
		text("4"),
	)
	h.env["XDG_CONFIG_HOME"] = t.TempDir()
	r := h.run(strings.NewReader(""), "--tools", "calculator", "--mcp-url", guarded.URL+"/mcp", "2+2")
	r.check(t, 0)
	for _, want := range []string{"MCP server " + guarded.URL + "/mcp is not available", "authorization failed", downURL, "← calculator#1 4"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestMCPOAuthNoBrowser checks that without a browser and without a
// terminal, authorization fails at once, saying what to do, and the run
// goes on without the server.
func TestMCPOAuthNoBrowser(t *testing.T) {
	srv := mcptest.NewOAuthServer(t)
	h := newHarness(t, text("fine"))
	h.env["XDG_CONFIG_HOME"] = t.TempDir()
	h.env["BROWSER"] = "/nonexistent/browser"
	r := h.run(strings.NewReader(""), "--mcp-url", srv.URL, "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "no browser could be started") || !strings.Contains(r.stderr, "MCP server "+srv.URL+" is not available") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
