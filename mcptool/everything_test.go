package mcptool

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/internal/testenv"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/google/go-cmp/cmp"
)

// TestEverythingServer drives the reference server from npm over stdio:
// the real thing, with a schema generator, content types and a process
// tree this package did not write.
func TestEverythingServer(t *testing.T) {
	args := testenv.EverythingServer(t)
	s, err := ConnectCommand(t.Context(), exec.Command(args[0], args[1:]...), nil)
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
	name := func(tool string) string { return ToolName(s.Name(), tool) }
	for _, tool := range []string{"echo", "get-sum", "get-tiny-image"} {
		if _, ok := reg.Lookup(name(tool)); !ok {
			t.Fatalf("tool %q not registered", name(tool))
		}
	}

	got := reg.Run(t.Context(), []llm.ToolUse{
		{ID: "1", Name: name("echo"), Input: json.RawMessage(`{"message":"hello from Go"}`)},
		{ID: "2", Name: name("get-sum"), Input: json.RawMessage(`{"a":3,"b":5}`)},
	})
	want := []llm.ToolResult{
		{ToolUseID: "1", Content: []llm.Block{llm.Text{Text: "Echo: hello from Go"}}},
		{ToolUseID: "2", Content: []llm.Block{llm.Text{Text: "The sum of 3 and 5 is 8."}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	img := reg.Run(t.Context(), []llm.ToolUse{{ID: "3", Name: name("get-tiny-image"), Input: json.RawMessage(`{}`)}})[0]
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
