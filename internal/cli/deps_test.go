package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependencies checks edges the binary and the layers must not grow
// back: html/template (which golang.org/x/net/trace brings with gRPC, the
// OTLP collector packages bringing gRPC), whose reflection makes the linker
// keep every exported method of the program, near doubling the binary and
// its resting memory; protobuf's reflection runtime (which any generated
// message package, the OTLP ones among them, brings: otlp.go encodes OTLP
// with protowire alone), 5 MB of the binary and 2 MiB of its resident
// pages in every run; memory's import of tool, which its layer is below;
// and llm's of the cloud platforms' libraries, which llm/bedrock and
// llm/vertex bring only to the programs that import them.
func TestDependencies(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list dependencies with")
	}
	for _, tt := range []struct{ pkg, forbidden string }{
		{"github.com/agentloop/agentloop/cmd/agentloop", "html/template"},
		{"github.com/agentloop/agentloop/cmd/agentloop", "google.golang.org/grpc"},
		{"github.com/agentloop/agentloop/cmd/agentloop", "google.golang.org/protobuf/reflect/protoreflect"},
		{"github.com/agentloop/agentloop/memory", "github.com/agentloop/agentloop/tool"},
		{"github.com/agentloop/agentloop/llm", "github.com/agentloop/agentloop/tool"},
		// A program that uses llm alone compiles no cloud platform's libraries.
		{"github.com/agentloop/agentloop/llm", "github.com/aws/aws-sdk-go-v2/aws"},
		{"github.com/agentloop/agentloop/llm", "golang.org/x/oauth2/google"},
	} {
		out, err := exec.Command("go", "list", "-deps", tt.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		if slices.Contains(strings.Fields(string(out)), tt.forbidden) {
			t.Errorf("%s depends on %s again", tt.pkg, tt.forbidden)
		}
	}
}
