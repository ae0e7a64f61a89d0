package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
	"github.com/agentloop/agentloop/tools/permission"
)

// TestOutputFormatJSON checks --output-format json: stdout is one object,
// in Claude Code's shape, for runs that end every way.
func TestOutputFormatJSON(t *testing.T) {
	addCall := anthropictest.NewStream().Usage(10, 0, 0, 0).Text("Adding.").
		ToolUse("toolu_1", "calculator", `{"a": 3, "b": 5, "operation": "add"}`).Stop("tool_use", 5)
	session := filepath.Join(t.TempDir(), "chat.jsonl")
	for _, tc := range []struct {
		name    string
		replies []anthropictest.Reply
		args    []string
		code    int
		want    map[string]any
	}{
		{
			name:    "success",
			replies: []anthropictest.Reply{addCall, text("8.")},
			args:    []string{"--tools", "calculator", "add"},
			want: map[string]any{
				"type": "result", "subtype": "success", "is_error": false, "num_turns": 2.0,
				"result": "8.", "stop_reason": "end_turn", "total_cost_usd": 0.00014, "state": "finished",
				"usage":              map[string]any{"input_tokens": 20.0, "output_tokens": 10.0},
				"permission_denials": []any{},
			},
		},
		{
			name:    "a typed answer",
			replies: []anthropictest.Reply{text(`{"sum": 8}`)},
			args:    []string{"--tools", "none", "--json-schema", `{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`, "add"},
			want: map[string]any{
				"type": "result", "subtype": "success", "is_error": false, "num_turns": 1.0,
				"result": `{"sum": 8}`, "structured_output": map[string]any{"sum": 8.0}, "stop_reason": "end_turn", "total_cost_usd": 0.00007, "state": "finished",
				"usage":              map[string]any{"input_tokens": 10.0, "output_tokens": 5.0},
				"permission_denials": []any{},
			},
		},
		{
			name:    "the session file names the session",
			replies: []anthropictest.Reply{text("hi.")},
			args:    []string{"--session", session, "hi"},
			want: map[string]any{
				"type": "result", "subtype": "success", "is_error": false, "num_turns": 1.0, "session_id": session,
				"result": "hi.", "stop_reason": "end_turn", "total_cost_usd": 0.00007, "state": "finished",
				"usage":              map[string]any{"input_tokens": 10.0, "output_tokens": 5.0},
				"permission_denials": []any{},
			},
		},
		{
			name:    "budget limit",
			replies: []anthropictest.Reply{addCall},
			args:    []string{"--tools", "calculator", "--max-budget-usd", "0.00001", "add"},
			code:    exitLimit,
			want: map[string]any{
				"type": "result", "subtype": "error_max_budget_usd", "is_error": true, "num_turns": 1.0,
				"result": "Adding.", "stop_reason": nil, "total_cost_usd": 0.00007, "state": "budget_limit",
				"usage":              map[string]any{"input_tokens": 10.0, "output_tokens": 5.0},
				"permission_denials": []any{},
				"error":              "budget limit reached: $0.0001 spent of --max-budget-usd 0.00001, without a final answer",
			},
		},
		{
			name:    "iteration limit",
			replies: []anthropictest.Reply{addCall},
			args:    []string{"--tools", "calculator", "--max-iterations", "1", "add"},
			code:    exitLimit,
			want: map[string]any{
				"type": "result", "subtype": "error_max_turns", "is_error": true, "num_turns": 1.0,
				"result": "Adding.", "stop_reason": nil, "total_cost_usd": 0.00007, "state": "iteration_limit",
				"usage":              map[string]any{"input_tokens": 10.0, "output_tokens": 5.0},
				"permission_denials": []any{},
				"error":              "iteration limit reached: 1 model turn without a final answer (raise --max-iterations)",
			},
		},
		{
			name: "API error",
			replies: []anthropictest.Reply{anthropictest.HTTPError{Status: 401, Type: "authentication_error",
				Message: "invalid x-api-key", RequestID: "req_401"}},
			args: []string{"hi"},
			code: exitFailure,
			want: map[string]any{
				"type": "result", "subtype": "error_during_execution", "is_error": true, "num_turns": 1.0,
				"result": "", "stop_reason": nil, "total_cost_usd": 0.0, "state": "failed",
				"usage":              map[string]any{"input_tokens": 0.0, "output_tokens": 0.0},
				"permission_denials": []any{},
				"error":              "API error 401 authentication_error: invalid x-api-key (request req_401)",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.replies...)
			r := h.run(strings.NewReader(""), append([]string{"--output-format", "json"}, tc.args...)...)
			r.check(t, tc.code)
			if strings.Count(r.stdout, "\n") != 1 {
				t.Fatalf("stdout is not one line:\n%s", r.stdout)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not a JSON object: %v\n%s", err, r.stdout)
			}
			if d, ok := got["duration_ms"].(float64); !ok || d < 0 {
				t.Errorf("duration_ms = %v, want a number of milliseconds", got["duration_ms"])
			}
			delete(got, "duration_ms")
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDenialsVisible checks that a run without a terminal ends with a line
// naming the rule that would allow each call it denied, exiting 0, and
// that --output-format json lists them as permission_denials.
func TestDenialsVisible(t *testing.T) {
	calls := anthropictest.NewStream().Usage(10, 0, 0, 0).
		ToolUse("toolu_e", "edit_file", `{"path":"f.txt","old_string":"hello","new_string":"goodbye"}`).
		ToolUse("toolu_b", "bash", `{"command":"go test ./..."}`).
		ToolUse("toolu_c", "bash", `{"command":"go test ./..."}`).Stop("tool_use", 5)
	const line = "3 calls were denied, with no terminal to ask; to allow, rerun with --allow edit_file --allow 'bash(go test ./...)'\n"
	for _, tc := range []struct {
		name string
		args []string
		want string // on stderr; "" for no line
	}{
		{"denied", nil, line},
		{"a deny rule's refusal is no denial", []string{"--deny", "edit_file", "--deny", "bash"}, ""},
		{"allowed", []string{"--yes", "--sandbox", "off", "--deny", "bash"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			os.WriteFile("f.txt", []byte("hello\n"), 0o644)
			h := newHarness(t, calls, text("done"))
			r := h.run(strings.NewReader(""), append(tc.args, "fix it")...)
			r.check(t, 0)
			if got := strings.Contains(r.stderr, "denied, with no terminal"); got != (tc.want != "") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr = %q, want the line %q", r.stderr, tc.want)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		t.Chdir(t.TempDir())
		h := newHarness(t, calls, text("done"))
		r := h.run(strings.NewReader(""), "--output-format", "json", "fix it")
		r.check(t, 0)
		var got struct {
			Denials []denial `json:"permission_denials"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		want := []denial{
			{ToolName: "edit_file", ToolUseID: "toolu_e", ToolInput: json.RawMessage(`{"path":"f.txt","old_string":"hello","new_string":"goodbye"}`), Rule: "edit_file"},
			{ToolName: "bash", ToolUseID: "toolu_b", ToolInput: json.RawMessage(`{"command":"go test ./..."}`), Rule: "bash(go test ./...)"},
			{ToolName: "bash", ToolUseID: "toolu_c", ToolInput: json.RawMessage(`{"command":"go test ./..."}`), Rule: "bash(go test ./...)"},
		}
		if diff := cmp.Diff(want, got.Denials); diff != "" {
			t.Errorf("permission_denials (-want +got):\n%s", diff)
		}
		if !strings.Contains(r.stderr, line) {
			t.Errorf("stderr lacks the denials line:\n%s", r.stderr)
		}
	})
}

// TestSummaryLine checks the line a one-shot run on a terminal ends with,
// and that a pipe gets none.
func TestSummaryLine(t *testing.T) {
	const want = "2 turns · 30 tokens · $0.0001 · 1 file changed\n"
	for _, tc := range []struct {
		name     string
		terminal bool
	}{{"terminal", true}, {"pipe", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			os.WriteFile("f.txt", []byte("hello\n"), 0o644)
			edit := anthropictest.NewStream().Usage(10, 0, 0, 0).
				ToolUse("toolu_e", "edit_file", `{"path":"f.txt","old_string":"hello","new_string":"goodbye"}`).
				ToolUse("toolu_f", "edit_file", `{"path":"f.txt","old_string":"absent","new_string":"x"}`).Stop("tool_use", 5)
			h := newHarness(t, edit, text("done"))
			h.terminals["stderr"] = tc.terminal
			h.env["NO_COLOR"] = "1"
			r := h.run(strings.NewReader(""), "--allow", "edit_file", "edit it")
			r.check(t, 0)
			if got := strings.Contains(r.stderr, want); got != tc.terminal {
				t.Errorf("stderr has the summary %q: %v, want %v\n%q", want, got, tc.terminal, r.stderr)
			}
		})
	}
}

// TestStreamJSONAlias checks that --json is --output-format stream-json.
func TestStreamJSONAlias(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"--json"}, {"--output-format", "stream-json"}, {"--output-format=stream-json", "--json"}} {
		h := newHarness(t, text("hi."))
		r := h.run(strings.NewReader(""), append(args, "hi")...)
		r.check(t, 0)
		outs = append(outs, strings.Join(jsonTypes(t, r.stdout), " "))
	}
	want := "turn_start text_delta usage_update done"
	if diff := cmp.Diff([]string{want, want, want}, outs); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}

// TestPlanMode checks that plan mode offers only the read-only built-in
// tools and asks the model for a plan, and that acceptEdits offers every
// tool.
func TestPlanMode(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		tools []string
		plan  bool
	}{
		{"plan", []string{"read_file", "glob", "grep"}, true},
		{"acceptEdits", []string{"read_file", "write_file", "edit_file", "glob", "grep", "bash"}, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Chdir(t.TempDir())
			h := newHarness(t, text("1. Do it."))
			h.run(strings.NewReader(""), "--permission-mode", tc.mode, "--sandbox", "off", "fix it").check(t, 0)
			req := h.srv.Requests()[0]
			if diff := cmp.Diff(tc.tools, toolNames(t, req)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if sys := systemOf(t, req); strings.Contains(sys, "Plan mode is on") != tc.plan {
				t.Errorf("system prompt asks for a plan: %v, want %v\n%s", !tc.plan, tc.plan, sys)
			}
		})
	}
}

// TestPlanModeAsksMCP checks that plan mode runs only the built-in
// read-only tools freely: another tool, such as an MCP server's, may
// change anything, so it needs permission.
func TestPlanModeAsksMCP(t *testing.T) {
	reg := tool.NewRegistry(tool.Config{})
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	reg.Register(calculator.New(), tool.Must(tool.New("mcp__srv__write", "writes", noop)))
	for _, tc := range []struct {
		plan bool
		want []bool // denied: calculator, mcp__srv__write
	}{{false, []bool{false, false}}, {true, []bool{false, true}}} {
		b := &builtins{policies: map[string]*permission.Policy{modeDefault: {}, modePlan: {}}}
		if tc.plan {
			b.setMode(modePlan)
		}
		approve := b.approve(reg)
		var got []bool
		for _, name := range []string{"calculator", "mcp__srv__write"} {
			got = append(got, approve(context.Background(), llm.ToolUse{ID: "t", Name: name, Input: json.RawMessage("{}")}, b.current()) != nil)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("plan %v: denied (-want +got):\n%s", tc.plan, diff)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"edit_file":           "edit_file",
		"mcp__srv__tool":      "mcp__srv__tool",
		"bash(go test ./...)": "'bash(go test ./...)'",
		"bash(echo 'hi')":     `'bash(echo '\''hi'\'')'`,
		"web_fetch(domain:x)": "'web_fetch(domain:x)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestDenialLine checks that a long or multi-line command is cut in the
// denials line, which stays one line.
func TestDenialLine(t *testing.T) {
	long := "bash(cat <<EOF\n" + strings.Repeat("x", 200) + "\nEOF)"
	got := denialLine([]denial{{Rule: "edit_file"}, {Rule: long}, {Rule: "edit_file"}})
	want := "3 calls were denied, with no terminal to ask; to allow, rerun with --allow edit_file --allow 'bash(cat <<EOF " +
		strings.Repeat("x", 120-len("--allow 'bash(cat <<EOF ")-1) + "…"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("denialLine (-want +got):\n%s", diff)
	}
}
