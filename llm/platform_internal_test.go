package llm

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlatformAdapt checks what a request becomes on a platform: its
// model's id, and no compaction on demand where it has none.
func TestPlatformAdapt(t *testing.T) {
	p := &Platform{Name: "Cloud", NoSummarize: true, Model: func(m string) (string, error) { return "cloud." + m, nil }}
	edits := []ContextEdit{{Type: ClearToolUses}, {Type: Compact}}
	got, _, err := p.adapt(Request{Model: "claude-sonnet-5-5", ContextEdits: edits}, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Request{Model: "cloud.claude-sonnet-5-5", ContextEdits: edits}, got); diff != "" {
		t.Errorf("adapted (-want +got):\n%s", diff)
	}
	if _, _, err := p.adapt(Request{Model: "m", Summarize: true}, false); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Summarize on a platform without it: %v, want ErrUnsupported", err)
	}
	c := New(Config{Platform: &Platform{Name: "Cloud", NoCountTokens: true}, BaseURL: "http://127.0.0.1:1"})
	if _, err := c.CountTokens(t.Context(), Request{Model: "m"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CountTokens without the route: %v, want ErrUnsupported", err)
	}
}
