package cli

import (
	"strings"
	"testing"
)

// TestNoDurableMode checks that the plain build refuses the durable mode
// with a usage error that says how to get it, before anything starts.
func TestNoDurableMode(t *testing.T) {
	for _, args := range [][]string{
		{"worker", "--temporal", "localhost:7233"},
		{"--temporal", "localhost:7233", "hi"},
		{"approve", "--temporal", "localhost:7233", "--session", "s", "toolu_1"},
		{"deny", "--session", "s", "toolu_1", "too", "risky"},
	} {
		h := newHarness(t)
		r := h.run(strings.NewReader(""), args...)
		r.check(t, exitUsage)
		if !strings.Contains(r.stderr, "go install github.com/agentloop/agentloop/durable/cmd/agentloop") {
			t.Errorf("%q: stderr does not say how to install the durable build:\n%s", args, r.stderr)
		}
		if n := len(h.srv.Requests()); n != 0 {
			t.Errorf("%q: %d requests sent", args, n)
		}
	}
}
