package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestOffline runs the example without a key, against its fake API: the
// reviewer reads main.go in its own run, and the main agent reports.
func TestOffline(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out strings.Builder
	if err := run(t.Context(), nil, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"→ task {",
		"    reviewer → read_file {\"path\": \"main.go\"}\n",
		"    reviewer ← read_file: ",
		"← task: No bugs found in main.go.\n",
		"The reviewer found no bugs in main.go.\n\nfinished;",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
