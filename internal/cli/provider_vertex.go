//go:build vertex

package cli

import (
	"context"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/vertex"
)

// With -tags vertex, the command reaches Vertex AI (provider.go).
func init() { vertexPlatform = newVertexPlatform }

// newVertexPlatform is vertexPlatform: Google's application default
// credentials, or none with skipAuth.
func newVertexPlatform(ctx context.Context, region, project string, skipAuth bool) (*llm.Platform, error) {
	return vertex.New(ctx, vertex.Config{Region: region, ProjectID: project, SkipAuth: skipAuth})
}
