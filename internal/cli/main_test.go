package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
)

// TestMain lets a test run the real command: the test binary, started with
// AGENTLOOP_TEST_MAIN=1, is agentloop. With AGENTLOOP_TEST_MCP=1 it is a
// small MCP server instead (see crashServer).
func TestMain(m *testing.M) {
	switch {
	case os.Getenv("AGENTLOOP_TEST_MAIN") == "1":
		os.Exit(Main())
	case os.Getenv("AGENTLOOP_TEST_MCP") == "1":
		crashServer()
		return
	}
	// bash's sandbox makes a build cache in the user's cache directory,
	// and a run that is not told otherwise saves its session in the
	// user's state directory: the tests' go away with them.
	cache, err := os.MkdirTemp("", "agentloop-test-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	os.Setenv("XDG_STATE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

const testKey = "sk-ant-test-SECRET-0123456789"

// harness runs the command in-process against a fake API.
type harness struct {
	t   *testing.T
	srv *anthropictest.Server
	env map[string]string
	// terminals names which of "stdin", "stdout" and "stderr" pretend to
	// be terminals.
	terminals  map[string]bool
	interrupts chan os.Signal
}

func newHarness(t *testing.T, replies ...anthropictest.Reply) *harness {
	t.Helper()
	srv := anthropictest.NewServer(replies...)
	t.Cleanup(srv.Close)
	return &harness{
		t:   t,
		srv: srv,
		env: map[string]string{
			"ANTHROPIC_API_KEY":  testKey,
			"ANTHROPIC_BASE_URL": srv.URL,
		},
		terminals:  map[string]bool{},
		interrupts: make(chan os.Signal, 2),
	}
}

// result is what one run of the command left behind.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command with args and stdin, waiting for it to finish.
func (h *harness) run(stdin io.Reader, args ...string) result {
	h.t.Helper()
	var stdout, stderr syncBuffer
	code := h.cli(stdin, &stdout, &stderr).main(context.Background(), args, stdin, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

func (h *harness) cli(stdin io.Reader, stdout, stderr io.Writer) *cli {
	streams := map[any]string{stdin: "stdin", stdout: "stdout", stderr: "stderr"}
	return &cli{
		getenv:     func(k string) string { return h.env[k] },
		isTerminal: func(f any) bool { return h.terminals[streams[f]] },
		interrupts: h.interrupts,
	}
}

// syncBuffer is a bytes.Buffer safe for the spinner's goroutine, which a
// test can wait on.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed and replaced by each write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

// waitFor waits until the buffer contains s.
func (b *syncBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		b.mu.Lock()
		if strings.Contains(b.b.String(), s) {
			b.mu.Unlock()
			return
		}
		if b.written == nil {
			b.written = make(chan struct{})
		}
		w := b.written
		b.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			t.Fatalf("%q was not written; got:\n%s", s, b.String())
		}
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (r result) check(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func text(s ...string) anthropictest.Reply {
	return anthropictest.NewStream().Usage(10, 0, 0, 0).Text(s...).Stop("end_turn", 5)
}

func TestHappyPath(t *testing.T) {
	h := newHarness(t, text("Hello", ", world."))
	r := h.run(strings.NewReader(""), "say", "hello")
	r.check(t, 0)
	if diff := cmp.Diff("Hello, world.\n", r.stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing for a plain answer off a terminal", r.stderr)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if err := anthropictest.CheckRequest(reqs[0].Body); err != nil {
		t.Errorf("request breaks the API's rules: %v", err)
	}
	// The contract says x-api-key, and never a bearer token for a key.
	if hdr := reqs[0].Header; hdr.Get("X-Api-Key") != testKey || hdr.Get("Authorization") != "" {
		t.Errorf("the key from ANTHROPIC_API_KEY was not sent as x-api-key: x-api-key %q, authorization %q",
			hdr.Get("X-Api-Key"), hdr.Get("Authorization"))
	}
	p, err := reqs[0].Params()
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != defaultModel {
		t.Errorf("model = %q, want the default %q", p.Model, defaultModel)
	}
	if got := p.Messages[0].Text; got != "say hello" {
		t.Errorf("prompt = %q, want the arguments joined by spaces", got)
	}
}

func TestEnvironment(t *testing.T) {
	h := newHarness(t, text("ok"), text("ok"))
	h.env["ANTHROPIC_API_KEY"] = ""
	h.env["ANTHROPIC_AUTH_TOKEN"] = "bearer-SECRET-token"
	h.env["ANTHROPIC_MODEL"] = "claude-from-env"
	h.run(strings.NewReader(""), "hi").check(t, 0)
	req := h.srv.Requests()[0]
	if got := req.Header.Get("Authorization"); got != "Bearer bearer-SECRET-token" {
		t.Errorf("Authorization = %q, want the bearer token from ANTHROPIC_AUTH_TOKEN", got)
	}
	if got := req.Header.Get("X-Api-Key"); got != "" {
		t.Errorf("x-api-key = %q, want none with only a bearer token", got)
	}
	p, _ := req.Params()
	if p.Model != "claude-from-env" {
		t.Errorf("model = %q, want ANTHROPIC_MODEL's", p.Model)
	}

	// The flag beats the environment.
	h.run(strings.NewReader(""), "--model", "claude-from-flag", "--system", "be brief", "hi").check(t, 0)
	p, _ = h.srv.Requests()[1].Params()
	if p.Model != "claude-from-flag" {
		t.Errorf("model = %q, want --model's", p.Model)
	}
}

// TestFlagsReachRequest checks that the model flags shape the request.
func TestFlagsReachRequest(t *testing.T) {
	h := newHarness(t, text("ok"))
	h.run(strings.NewReader(""), "--model", "claude-sonnet-4-6", "--max-tokens", "3000", "--thinking", "1024", "--system", "Be brief.", "hi").check(t, 0)
	var body struct {
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Thinking  struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	if err := json.Unmarshal(h.srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.MaxTokens != 3000 || body.Thinking.Type != "enabled" || body.Thinking.BudgetTokens != 1024 ||
		!strings.Contains(string(body.System), "Be brief.") {
		t.Errorf("request = %+v, system %s; want max_tokens 3000, thinking 1024, the system prompt", body, body.System)
	}
}

// On the current models, --effort reaches output_config, and thinking is
// adaptive with its text displayed; no budget, nothing disabled. On a model
// whose thinking may be off, nothing is sent unless asked for.
func TestEffortReachesRequest(t *testing.T) {
	for _, tc := range []struct {
		model, effort string
		thinking      string // the thinking sent, as JSON
	}{
		{"claude-opus-5-5", "low", `{"type":"adaptive","display":"summarized"}`},
		{"claude-fable-5-1", "max", `{"type":"adaptive","display":"summarized"}`},
		{"claude-sonnet-5-5", "xhigh", `{"type":"adaptive","display":"summarized"}`},
		{"claude-haiku-5-5", "medium", ``},
		{"claude-opus-5", "", ``},
	} {
		t.Run(tc.model, func(t *testing.T) {
			h := newHarness(t, text("ok"))
			args := []string{"--model", tc.model, "hi"}
			if tc.effort != "" {
				args = append([]string{"--effort", tc.effort}, args...)
			}
			h.run(strings.NewReader(""), args...).check(t, 0)
			var body struct {
				Thinking     json.RawMessage `json:"thinking"`
				OutputConfig *struct {
					Effort string `json:"effort"`
				} `json:"output_config"`
			}
			if err := json.Unmarshal(h.srv.Requests()[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if string(body.Thinking) != tc.thinking {
				t.Errorf("thinking = %s, want %s", body.Thinking, tc.thinking)
			}
			switch {
			case tc.effort == "" && body.OutputConfig != nil:
				t.Errorf("output_config sent without --effort: %+v", body.OutputConfig)
			case tc.effort != "" && (body.OutputConfig == nil || body.OutputConfig.Effort != tc.effort):
				t.Errorf("output_config = %+v, want effort %s", body.OutputConfig, tc.effort)
			}
		})
	}
}

func TestPromptOnStdin(t *testing.T) {
	h := newHarness(t, text("4"))
	r := h.run(strings.NewReader("  what is 2+2?\n"))
	r.check(t, 0)
	if r.stdout != "4\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	if got := h.srv.Requests()[0].Messages()[0].Text; got != "what is 2+2?" {
		t.Errorf("prompt = %q, want stdin trimmed", got)
	}
}

func TestToolCalls(t *testing.T) {
	h := newHarness(t,
		anthropictest.NewStream().Text("Let me add.").
			ToolUse("toolu_1", "calculator", `{"a": 3`, `, "b": 5, "oper`, `ation": "add"}`).
			ToolUse("toolu_2", "calculator", `{"a": 1, "b": 0, "operation": "divide"}`).
			Stop("tool_use"),
		text("3 + 5 = 8."),
	)
	r := h.run(strings.NewReader(""), "--tools", "calculator", "add 3 and 5")
	r.check(t, 0)
	// On a pipe stdout holds the final answer alone; the narration of the
	// turn that called tools goes to stderr.
	if r.stdout != "3 + 5 = 8.\n" {
		t.Errorf("stdout = %q, want only the final answer", r.stdout)
	}
	for _, want := range []string{
		"Let me add.\n",
		`→ calculator#1 {"a":3,"b":5,"operation":"add"}`,
		`← calculator#1 8`,
		`→ calculator#2 {"a":1,"b":0,"operation":"divide"}`,
		`✗ calculator#2 error: division by zero`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "\x1b[") {
		t.Errorf("stderr has escape codes off a terminal:\n%q", r.stderr)
	}
	results := h.srv.Requests()[1].ToolResults()
	if len(results) != 2 || results[0].Content[0].Text != "8" || !results[1].IsError {
		t.Errorf("second request's tool results = %+v, want 8 and an error", results)
	}
}

func TestJSON(t *testing.T) {
	h := newHarness(t,
		anthropictest.NewStream().Text("Adding.").
			ToolUse("toolu_1", "calculator", `{"a": 3, "b"`, `: 5, "operation": "add"}`).Stop("tool_use"),
		text("8."),
		anthropictest.HTTPError{Status: 401, Type: "authentication_error", Message: "invalid x-api-key", RequestID: "req_401"},
	)
	r := h.run(strings.NewReader(""), "--json", "--tools", "calculator", "add")
	r.check(t, 0)
	types := jsonTypes(t, r.stdout)
	for _, want := range []string{"turn_start", "text_delta", "tool_call_start", "tool_input_delta", "tool_call", "tool_done", "usage_update", "done"} {
		if !contains(types, want) {
			t.Errorf("no %q event in %v", want, types)
		}
	}
	if types[len(types)-1] != "done" {
		t.Errorf("last event is %q, want done", types[len(types)-1])
	}

	// A failed run ends with an "error" line, the last thing a reader
	// sees: no "done" comes before it, and it holds the run's result.
	r = h.run(strings.NewReader(""), "--json", "hi")
	r.check(t, exitFailure)
	types = jsonTypes(t, r.stdout)
	if diff := cmp.Diff([]string{"turn_start", "error"}, types); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	// Shaped like every other line: "type" first.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, `{"type":"error","message":"invalid x-api-key","status":401,`) ||
		!strings.Contains(last, `"result":{"text":"","state":"failed","iterations":1,`) {
		t.Errorf("the error line is %s, want it to open with its type and hold the result", last)
	}
	if !strings.Contains(r.stdout, "req_401") || !strings.Contains(r.stderr, "req_401") {
		t.Errorf("the request id is missing:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// jsonTypes checks that every line of out is a JSON object with a "type"
// and returns the types.
func jsonTypes(t *testing.T, out string) []string {
	t.Helper()
	var types []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v struct {
			Type *string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		if v.Type == nil || *v.Type == "" {
			t.Fatalf("line %q has no type", sc.Text())
		}
		types = append(types, *v.Type)
	}
	if len(types) == 0 {
		t.Fatal("no JSON lines")
	}
	return types
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	h := newHarness(t, text("Nice to meet you, Ada."), text("Your name is Ada."))
	h.run(strings.NewReader(""), "--session", path, "my name is Ada").check(t, 0)
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("session not saved: %v", err)
	}
	h.run(strings.NewReader(""), "--session", path, "what is my name?").check(t, 0)
	msgs := h.srv.Requests()[1].Messages()
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+": "+m.Text)
	}
	want := []string{"user: my name is Ada", "assistant: Nice to meet you, Ada.", "user: what is my name?"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resumed conversation (-want +got):\n%s", diff)
	}

	// A corrupt file is a configuration error naming the file; it is left
	// as it was.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{not json\n"), 0o600)
	r := h.run(strings.NewReader(""), "--session", bad, "hi")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, bad) || !strings.Contains(r.stderr, "line 1") {
		t.Errorf("stderr does not name the session file and the bad line:\n%s", r.stderr)
	}
	if b, _ := os.ReadFile(bad); string(b) != "{not json\n" {
		t.Errorf("corrupt session file was changed to %q", b)
	}
}

// TestSecrets checks that neither the key nor a bearer token is printed,
// even in the debug log, on success and on failure.
func TestSecrets(t *testing.T) {
	const token = "bearer-SECRET-9876543210"
	h := newHarness(t,
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"a":1,"b":2,"operation":"add"}`).Stop("tool_use"),
		text("3"),
		anthropictest.HTTPError{Status: 401, Type: "authentication_error", Message: "invalid x-api-key", RequestID: "req_1"},
	)
	h.env["ANTHROPIC_AUTH_TOKEN"] = token
	var all strings.Builder
	for _, args := range [][]string{
		{"-v", "--tools", "calculator", "add"},
		{"-v", "--json", "hi"},
		{"-v", "--version"},
	} {
		r := h.run(strings.NewReader(""), args...)
		all.WriteString(r.stdout + r.stderr)
	}
	out := all.String()
	if !strings.Contains(out, "level=DEBUG") {
		t.Errorf("-v wrote no debug log:\n%s", out)
	}
	for _, secret := range []string{testKey, token, "SECRET"} {
		if strings.Contains(out, secret) {
			t.Errorf("output contains the secret %q:\n%s", secret, out)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	h := newHarness(t)
	r := h.run(strings.NewReader(""), "--help")
	r.check(t, 0)
	var o options
	fs := newFlagSet(&o)
	fs.StringVar(new(string), "tools", "", "")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "h" || f.Name == "help" {
			return
		}
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if !strings.Contains(r.stdout, "  "+name+" ") {
			t.Errorf("--help does not document %s", name)
		}
	})
	for _, want := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "NO_COLOR", "130", "demo", defaultModel} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
	r = h.run(strings.NewReader(""), "--version")
	r.check(t, 0)
	if !strings.HasPrefix(r.stdout, "agentloop ") {
		t.Errorf("--version = %q", r.stdout)
	}
}

// TestCommandWords checks that a command is a first word alone or before
// its flags, and that before other words it begins a prompt: "help me fix
// it" and "deny that the bug exists" both go to the model.
func TestCommandWords(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		prompt string // sent to the model; "" for none
		code   int
		out    string // a part of stdout or stderr
	}{
		{[]string{"help"}, "", 0, "Usage:"},
		{[]string{"help", "-v"}, "", 0, "Usage:"},
		{[]string{"help", "me", "fix", "it"}, "help me fix it", 0, "ok"},
		{[]string{"deny", "that", "the", "bug", "exists"}, "deny that the bug exists", 0, "ok"},
		{[]string{"approve", "of", "this"}, "approve of this", 0, "ok"},
		{[]string{"worker", "bees", "dance"}, "worker bees dance", 0, "ok"},
		{[]string{"demo", "the", "loop"}, "demo the loop", 0, "ok"},
		{[]string{"--", "demo"}, "demo", 0, "ok"},
		{[]string{"--", "help"}, "help", 0, "ok"},
		{[]string{"sessions", "are", "slow"}, "sessions are slow", 0, "ok"},
		{[]string{"sessions", "--all", "x"}, "", exitUsage, `sessions takes no arguments, got "x"`},
		{[]string{"sessions"}, "", exitUsage, "no state directory"}, // the harness has no HOME
		// The plain build has no durable mode, and says so.
		{[]string{"deny"}, "", exitUsage, "no durable mode"},
		{[]string{"approve", "--session", "s", "toolu_1"}, "", exitUsage, "no durable mode"},
		{[]string{"worker", "-v"}, "", exitUsage, "no durable mode"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			h := newHarness(t, text("ok"))
			r := h.run(strings.NewReader(""), tc.args...)
			r.check(t, tc.code)
			if !strings.Contains(r.stdout+r.stderr, tc.out) {
				t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", tc.out, r.stdout, r.stderr)
			}
			var got string
			if reqs := h.srv.Requests(); len(reqs) > 0 {
				got = reqs[0].Messages()[0].Text
			}
			if got != tc.prompt {
				t.Errorf("prompt sent %q, want %q", got, tc.prompt)
			}
		})
	}
}

// TestModelNames checks --model and ANTHROPIC_MODEL: Claude Code's
// aliases name the current models, and a name llm.LookupModel does not know is
// sent as it is, with a warning on stderr (a typo would cost a 404).
func TestModelNames(t *testing.T) {
	for _, tc := range []struct {
		flag, env string
		sent      string
		warned    bool
	}{
		{"opus", "", "claude-opus-5-5", false},
		{"sonnet", "", "claude-sonnet-5-5", false},
		{"haiku", "", "claude-haiku-5-5", false},
		{"", "opus", "claude-opus-5-5", false},
		{"claude-opus-4-6", "", "claude-opus-4-6", false},
		{"claude-haiku-4-5-20251001", "", "claude-haiku-4-5-20251001", false},
		{"", "", defaultModel, false},
		{"claude-next", "", "claude-next", true},
		{"", "claude-from-env", "claude-from-env", true},
	} {
		t.Run(tc.flag+"/"+tc.env, func(t *testing.T) {
			h := newHarness(t, text("ok"))
			h.env["ANTHROPIC_MODEL"] = tc.env
			args := []string{"hi"}
			if tc.flag != "" {
				args = append([]string{"--model", tc.flag}, args...)
			}
			r := h.run(strings.NewReader(""), args...)
			r.check(t, 0)
			if p, err := h.srv.Requests()[0].Params(); err != nil || p.Model != tc.sent {
				t.Errorf("model sent %q, %v; want %q", p.Model, err, tc.sent)
			}
			if got := strings.Contains(r.stderr, `warning: model "`+tc.sent+`" is not one agentloop knows`); got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, r.stderr)
			}
		})
	}
	for alias, model := range modelAliases {
		if _, ok := llm.LookupModel(model); !ok {
			t.Errorf("the alias %s names %s, which llm.LookupModel does not know", alias, model)
		}
	}
}

// On the current models the notes between tool calls arrive as thinking:
// they show on stderr, as progress does on older models, and stay out of
// the answer on stdout and out of the --json done event's text.
func TestThinkingBetweenToolCalls(t *testing.T) {
	for _, model := range []string{"claude-opus-5-5", "claude-fable-5-1", "claude-sonnet-5-5"} {
		for _, asJSON := range []bool{false, true} {
			h := newHarness(t,
				anthropictest.NewStream().Block(anthropictest.Block{Type: "thinking", Signature: "sig_1"}, "Adding with ", "the calculator.").
					ToolUse("toolu_1", "calculator", `{"a":1,"b":2,"operation":"add"}`).Stop("tool_use"),
				anthropictest.NewStream().Block(anthropictest.Block{Type: "thinking", Signature: "sig_2"}, "It said 3.").
					Text("1 + 2 = 3.").Stop("end_turn"))
			args := []string{"--model", model, "--tools", "calculator", "add 1 and 2"}
			if asJSON {
				args = append([]string{"--json"}, args...)
			}
			r := h.run(strings.NewReader(""), args...)
			r.check(t, 0)
			if !asJSON {
				if r.stdout != "1 + 2 = 3.\n" {
					t.Errorf("%s: stdout = %q, want the answer alone", model, r.stdout)
				}
				if !strings.Contains(r.stderr, "Adding with the calculator.") || !strings.Contains(r.stderr, "It said 3.") {
					t.Errorf("%s: stderr lacks the notes between tool calls:\n%s", model, r.stderr)
				}
				continue
			}
			var done struct {
				Result struct{ Text string } `json:"result"`
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			json.Unmarshal([]byte(lines[len(lines)-1]), &done)
			if done.Result.Text != "1 + 2 = 3." || !strings.Contains(r.stdout, `"type":"thinking_delta","thinking":"Adding with "`) {
				t.Errorf("%s --json: done text %q; output:\n%s", model, done.Result.Text, r.stdout)
			}
		}
	}
}

// TestFinalAnswerOnly checks what stdout holds off a terminal: the final
// turn's answer alone, unless --all-turns asks for every turn's text.
func TestFinalAnswerOnly(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		stdout, stderr string
	}{
		{"final answer only", nil, "Done: 8.\n", "Step 1: adding.\n"},
		{"--all-turns", []string{"--all-turns"}, "Step 1: adding.\nDone: 8.\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t,
				anthropictest.NewStream().Text("Step 1: adding.").
					ToolUse("toolu_1", "calculator", `{"a": 3, "b": 5, "operation": "add"}`).Stop("tool_use"),
				text("Done: 8."),
			)
			r := h.run(strings.NewReader(""), append(tc.args, "--tools", "calculator", "add")...)
			r.check(t, 0)
			if diff := cmp.Diff(tc.stdout, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if tc.stderr != "" && !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, r.stderr)
			}
			if tc.stderr == "" && strings.Contains(r.stderr, "Step 1") {
				t.Errorf("--all-turns wrote the narration to stderr too:\n%s", r.stderr)
			}
		})
	}
}
