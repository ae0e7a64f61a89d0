package bedrock

import (
	"strings"
	"testing"
)

func TestModel(t *testing.T) {
	for _, tt := range []struct{ region, model, want, err string }{
		{"us-east-1", "claude-sonnet-4-5", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", ""},
		{"us-east-1", "claude-sonnet-4-5-20250929", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", ""},
		{"eu-west-1", "claude-opus-4-1", "eu.anthropic.claude-opus-4-1-20250805-v1:0", ""},
		{"us-west-2", "claude-sonnet-5-5", "global.anthropic.claude-sonnet-5-5", ""},
		{"us-east-1", "us.anthropic.claude-haiku-4-5-20251001-v1:0", "us.anthropic.claude-haiku-4-5-20251001-v1:0", ""},
		{"us-east-1", "arn:aws:bedrock:us-east-1:123:application-inference-profile/abc", "arn:aws:bedrock:us-east-1:123:application-inference-profile/abc", ""},
		{"us-east-1", "claude-mythos-5", "", `model "claude-mythos-5" is not one agentloop knows on Amazon Bedrock`},
		{"us-east-1", "gpt-5", "", "pass a Bedrock model id"},
	} {
		got, err := modelFor(tt.region)(tt.model)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s in %s: got %q, %v; want %q, %q", tt.model, tt.region, got, err, tt.want, tt.err)
		}
	}
}
