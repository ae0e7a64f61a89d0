package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestJSONSchema: --json-schema in the durable mode, as in process: stdout
// holds only the answer's JSON, after a re-ask; with the re-asks spent the
// prompt exits 1, stdout empty, the violation on stderr.
func TestJSONSchema(t *testing.T) {
	bad := anthropictest.NewStream().Text(`{"x":1,"y":"2"}`).Stop("end_turn")
	api := anthropictest.NewServer(bad, anthropictest.NewStream().Text(`{"x": 1, "y": 2}`).Stop("end_turn"), bad, bad, bad)
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	_, common := startWorker(t, env, "schema", "--tools", "none")
	schema := `{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]}`
	for _, tt := range []struct {
		code           int
		stdout, stderr string
	}{{exitOK, `{"x":1,"y":2}` + "\n", ""}, {exitFailure, "", `field "y": got string, want integer`}} {
		var stdout, stderr bytes.Buffer
		if code := command(context.Background(), env, &stdout, &stderr, append(common, "--json-schema", schema, "a point")...); code != tt.code {
			t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
		}
		if stdout.String() != tt.stdout {
			t.Errorf("stdout %q, want %q", stdout.String(), tt.stdout)
		}
		if !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
		}
	}
	for _, r := range api.Requests() {
		if err := anthropictest.CheckRequest(r.Body); err != nil {
			t.Errorf("request %d: %v", r.N, err)
		}
	}
}
