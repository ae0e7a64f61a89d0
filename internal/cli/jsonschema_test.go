package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

const pointSchema = `{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]}`

func TestJSONSchema(t *testing.T) {
	file := filepath.Join(t.TempDir(), "point.json")
	if err := os.WriteFile(file, []byte(pointSchema), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := text(`{"x": 1, "y": "two"}`)
	tests := []struct {
		name     string
		args     []string
		replies  []anthropictest.Reply
		code     int
		stdout   string
		stderr   []string // each must be in stderr
		requests int
	}{{
		name:    "inline schema: only the JSON on stdout, on one line",
		args:    []string{"--json-schema", pointSchema, "a point"},
		replies: []anthropictest.Reply{text("{\n  \"x\": 1,\n  \"y\": 2\n}")},
		stdout:  `{"x":1,"y":2}` + "\n", requests: 1,
	}, {
		name:    "@FILE, after one re-ask",
		args:    []string{"--json-schema", "@" + file, "a point"},
		replies: []anthropictest.Reply{bad, text(`{"x":1,"y":2}`)},
		stdout:  `{"x":1,"y":2}` + "\n", requests: 2,
	}, {
		name:     "re-asks exhausted",
		args:     []string{"--json-schema", pointSchema, "a point"},
		replies:  []anthropictest.Reply{bad, bad, bad},
		code:     exitFailure,
		stderr:   []string{`field "y": got string, want integer`},
		requests: 3,
	}, {
		name: "a limit before the answer exits as limits do",
		args: []string{"--tools", "calculator", "--max-iterations", "1", "--json-schema", pointSchema, "a point"},
		replies: []anthropictest.Reply{anthropictest.NewStream().
			ToolUse("toolu_1", "calculator", `{"a": 1, "b": 1, "operation": "add"}`).Stop("tool_use")},
		code:     exitLimit,
		stderr:   []string{"iteration limit reached"},
		requests: 1,
	}, {
		name:    "--json carries structured_output",
		args:    []string{"--json", "--json-schema", pointSchema, "a point"},
		replies: []anthropictest.Reply{text(`{"x":1,"y":2}`)},
		stderr:  nil, requests: 1,
	}, {
		name:   "not JSON",
		args:   []string{"--json-schema", `{"type":`, "a point"},
		code:   exitUsage,
		stderr: []string{"--json-schema: not valid JSON"},
	}, {
		name:   "not a schema",
		args:   []string{"--json-schema", `{"type":"integr"}`, "a point"},
		code:   exitUsage,
		stderr: []string{"not a valid JSON schema: type integr is not a JSON type"},
	}, {
		name:   "a keyword of the wrong type",
		args:   []string{"--json-schema", `{"required":"x"}`, "a point"},
		code:   exitUsage,
		stderr: []string{`not a valid JSON schema: keyword "required" cannot be a JSON string`},
	}, {
		name:   "not an object",
		args:   []string{"--json-schema", `[]`, "a point"},
		code:   exitUsage,
		stderr: []string{"a JSON schema must be an object"},
	}, {
		name:   "a file that is not there",
		args:   []string{"--json-schema", "@" + file + ".missing", "a point"},
		code:   exitUsage,
		stderr: []string{"point.json.missing"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.replies...)
			r := h.run(strings.NewReader(""), tt.args...)
			r.check(t, tt.code)
			if strings.Contains(tt.name, "--json carries") {
				if !strings.Contains(r.stdout, `"structured_output":{"x":1,"y":2}`) {
					t.Errorf("no structured_output in the result line:\n%s", r.stdout)
				}
			} else if diff := cmp.Diff(tt.stdout, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			reqs := h.srv.Requests()
			if len(reqs) != tt.requests {
				t.Errorf("%d requests, want %d", len(reqs), tt.requests)
			}
			for _, req := range reqs {
				if err := anthropictest.CheckRequest(req.Body); err != nil {
					t.Errorf("request %d: %v", req.N, err)
				}
			}
		})
	}
}
