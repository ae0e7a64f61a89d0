package mcptool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/google/go-cmp/cmp"
)

// everythingServer returns the command line that starts the reference MCP
// server @modelcontextprotocol/server-everything over stdio, as .ci/run
// installs it (npm install --prefix .ci), or "" if it is not installed.
// The bin is mcp-server-everything; with no argument, or "stdio", it serves
// stdio.
func everythingServer(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		bin := filepath.Join(dir, ".ci", "node_modules", ".bin", "mcp-server-everything")
		if _, err := os.Stat(bin); err == nil {
			return bin + " stdio"
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// TestEverythingServer drives the reference server from npm over stdio:
// the real thing, with a schema generator, content types and a process
// tree this package did not write.
func TestEverythingServer(t *testing.T) {
	line := everythingServer(t)
	if line == "" {
		t.Skip("mcp-server-everything is not installed: run npm install --prefix .ci @modelcontextprotocol/server-everything (.ci/run does)")
	}
	s, err := ConnectCommand(t.Context(), line, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	reg := tool.NewRegistry(tool.Config{})
	if err := s.Register(t.Context(), reg); err != nil {
		// Tools this package cannot take are reported, not fatal.
		t.Logf("Register: %v", err)
	}
	for _, name := range []string{"echo", "get-sum", "get-tiny-image"} {
		if _, ok := reg.Lookup(name); !ok {
			t.Fatalf("tool %q not registered", name)
		}
	}

	got := reg.Run(t.Context(), []tool.Call{
		{ID: "1", Name: "echo", Input: json.RawMessage(`{"message":"hello from Go"}`)},
		{ID: "2", Name: "get-sum", Input: json.RawMessage(`{"a":3,"b":5}`)},
	})
	want := []llm.ToolResult{
		{ToolUseID: "1", Content: []llm.Block{llm.Text{Text: "Echo: hello from Go"}}},
		{ToolUseID: "2", Content: []llm.Block{llm.Text{Text: "The sum of 3 and 5 is 8."}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	img := reg.Run(t.Context(), []tool.Call{{ID: "3", Name: "get-tiny-image", Input: json.RawMessage(`{}`)}})[0]
	var images int
	for _, b := range img.Content {
		if im, ok := b.(llm.Image); ok && im.MediaType == "image/png" && strings.HasPrefix(im.Data, "iVBORw0KGgo") {
			images++
		}
	}
	if img.IsError || images != 1 {
		t.Errorf("get-tiny-image = %+v, want one PNG image", img)
	}
}
