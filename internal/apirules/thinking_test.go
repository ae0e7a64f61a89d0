package apirules

import "testing"

// Reads follows the docs' tables of model switches, one direction at a
// time, and compares dated names without the date.
func TestReads(t *testing.T) {
	tests := []struct {
		model, producer string
		want            bool
	}{
		{"claude-opus-5-5", "claude-opus-5-5", true},
		{"claude-opus-5-5", "claude-opus-5", true},
		{"claude-opus-5-5", "claude-sonnet-4-6", true},
		{"claude-opus-5-5", "claude-fable-5-1", false},
		{"claude-opus-5-5", "claude-sonnet-5-5", false},
		{"claude-fable-5-1", "claude-opus-5-5", true},
		{"claude-fable-5-1", "claude-opus-5", true},
		{"claude-fable-5-1", "claude-mythos-5-1", true},
		{"claude-fable-5-1", "claude-fable-5-2", false},
		{"claude-sonnet-5-5", "claude-sonnet-5", true},
		{"claude-sonnet-5-5", "claude-opus-4-8", true},
		{"claude-sonnet-5-5", "claude-haiku-4-5-20251001", true},
		{"claude-sonnet-5-5", "claude-opus-5", false},
		{"claude-sonnet-5-5", "claude-opus-5-5", false},
		{"claude-sonnet-5-5", "claude-fable-5", false},
		{"claude-haiku-5-5", "claude-haiku-5-5", true},
		{"claude-haiku-5-5", "claude-sonnet-5-5", false},
		{"claude-next", "claude-opus-5-5", false},
	}
	for _, tt := range tests {
		if got := Reads(tt.model, tt.producer); got != tt.want {
			t.Errorf("Reads(%s, %s) = %v, want %v", tt.model, tt.producer, got, tt.want)
		}
	}
}
