package vertex

import (
	"strings"
	"testing"
)

func TestModel(t *testing.T) {
	for _, tt := range []struct{ model, want, err string }{
		{"claude-sonnet-4-5", "claude-sonnet-4-5@20250929", ""},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5@20251001", ""},
		{"claude-opus-5-5", "claude-opus-5-5", ""},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5@20250929", ""},
		{"gemini-3", "", `model "gemini-3" is not one agentloop knows on Vertex AI`},
	} {
		got, err := model(tt.model)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: got %q, %v; want %q, %q", tt.model, got, err, tt.want, tt.err)
		}
	}
}

func TestNewNeedsRegionAndProject(t *testing.T) {
	for cfg, want := range map[Config]string{{ProjectID: "p"}: "CLOUD_ML_REGION", {Region: "global"}: "ANTHROPIC_VERTEX_PROJECT_ID"} {
		if _, err := New(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", cfg, err, want)
		}
	}
}
