package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestRun runs the example against a fake API that plays a model using the
// calculator three times, twice in parallel, and checks what is printed and
// the tool results that reach the model.
func TestRun(t *testing.T) {
	srv := anthropictest.NewServer(
		anthropictest.NewStream().Text("First 3 + 5, and 2 × 6 for later.").
			ToolUse("toolu_1", "calculator", `{"a": 3, "b`, `": 5, "operation": "add"}`).
			ToolUse("toolu_0", "calculator", `{"a": 2, "b": 6, "operation": "multiply"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("Then × 12.").
			ToolUse("toolu_2", "calculator", `{"a": 8, "b": 12, "operation": "multiply"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("96.").Stop("end_turn"),
	)
	defer srv.Close()
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": srv.URL}
	var out strings.Builder
	if err := run(t.Context(), []string{"What", "is", "(3 + 5) × 12?"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Q: What is (3 + 5) × 12?",
		"First 3 + 5, and 2 × 6 for later.\n  act:     calculator",
		`  observe: calculator {"a": 3, "b": 5, "operation": "add"} = 8` + "\n",
		`  observe: calculator {"a": 2, "b": 6, "operation": "multiply"} = 12` + "\n",
		`  observe: calculator {"a": 8, "b": 12, "operation": "multiply"} = 96` + "\n",
		"Then × 12.\n",
		"96.\n\nfinished after 3 model calls",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	var got []string
	for _, req := range srv.Requests()[1:] {
		for _, b := range req.ToolResults() {
			got = append(got, b.Content[0].Text)
		}
	}
	if diff := cmp.Diff([]string{"8", "12", "96"}, got); diff != "" {
		t.Errorf("tool results sent to the model (-want +got):\n%s", diff)
	}
}

func TestRunNoKey(t *testing.T) {
	err := run(t.Context(), nil, func(string) string { return "" }, new(strings.Builder))
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("run without a key = %v, want an error naming ANTHROPIC_API_KEY", err)
	}
}
