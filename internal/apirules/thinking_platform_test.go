package apirules

import "testing"

func TestUndatedPlatformIDs(t *testing.T) {
	for in, want := range map[string]string{
		"claude-haiku-4-5-20251001":                       "claude-haiku-4-5",
		"claude-sonnet-5-5":                               "claude-sonnet-5-5",
		"anthropic.claude-haiku-4-5-20251001-v1:0":        "claude-haiku-4-5",
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":    "claude-sonnet-4-5",
		"global.anthropic.claude-sonnet-5-5":              "claude-sonnet-5-5",
		"anthropic.claude-opus-4-6-v1":                    "claude-opus-4-6",
		"claude-sonnet-4-5@20250929":                      "claude-sonnet-4-5",
		"arn:aws:bedrock:us-east-1:1:inference-profile/x": "arn:aws:bedrock:us-east-1:1:inference-profile/x",
	} {
		if got := Undated(in); got != want {
			t.Errorf("Undated(%q) = %q, want %q", in, got, want)
		}
	}
}
