package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// TestFailedRunLeavesSession checks that a run that fails leaves the
// session file exactly as it was: same bytes, same time, same mode.
func TestFailedRunLeavesSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	h := newHarness(t, text("Hello, Ada."),
		anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 300000 tokens > 200000 maximum", RequestID: "req_400"})
	h.run(strings.NewReader(""), "--session", path, "I am Ada").check(t, 0)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(path)

	h.run(strings.NewReader(""), "--session", path, "a prompt that fails").check(t, exitFailure)
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != string(want) {
		t.Errorf("the failed run changed the session file:\nbefore:\n%s\nafter:\n%s", want, got)
	}
	if !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() {
		t.Errorf("the failed run rewrote the session file: mtime %v → %v, mode %v → %v",
			before.ModTime(), after.ModTime(), before.Mode(), after.Mode())
	}
}

// TestInterruptSavesSession checks that Ctrl-C during a turn still saves
// the session, with the prompt in it, and leaves on stdout the text the
// user saw.
func TestInterruptSavesSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	h := newHarness(t, anthropictest.NewStream().Usage(10, 0, 0, 0).Text("Once upon a time").Stall())
	h.terminals["stdout"] = true
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- h.cli(nil, &stdout, &stderr).main(context.Background(), []string{"--session", path, "tell me a story"}, strings.NewReader(""), &stdout, &stderr)
	}()
	stdout.waitFor(t, "Once upon a time")
	h.interrupts <- os.Interrupt
	if got := <-code; got != exitInterrupted {
		t.Fatalf("exit status %d, want %d; stderr:\n%s", got, exitInterrupted, stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the interrupted run was not saved: %v", err)
	}
	if !strings.Contains(string(b), "tell me a story") {
		t.Errorf("the saved session lacks the prompt:\n%s", b)
	}
	if !strings.HasPrefix(stdout.String(), "Once upon a time") {
		t.Errorf("stdout = %q, want the partial answer kept", stdout.String())
	}
}

// TestSessionUnwritable checks that a --session file that could not be
// saved stops the command before any request is paid for.
func TestSessionUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "read-only.jsonl")
	if err := os.WriteFile(readOnly, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, why string }{
		{"a file for a directory", filepath.Join(file, "chat.jsonl"), "not a directory"},
		{"a missing directory", filepath.Join(dir, "missing", "chat.jsonl"), "no such file or directory"},
		{"a directory", dir, "is a directory"},
		{"a device", os.DevNull, "not a regular file"},
		{"a read-only file", readOnly, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == readOnly && os.Geteuid() == 0 {
				t.Skip("root may write any file")
			}
			h := newHarness(t, text("never sent"))
			r := h.run(strings.NewReader(""), "--session", tc.path, "hi")
			r.check(t, exitUsage)
			for _, want := range []string{"--session " + tc.path, tc.why} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if n := len(h.srv.Requests()); n != 0 {
				t.Errorf("%d requests sent before finding the session unwritable", n)
			}
		})
	}
	// The probe leaves nothing behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want the 2 the test made", len(entries))
	}
}

// TestREPLClearKeepsTranscript checks that /clear with --session starts a
// new transcript and keeps the old one beside it, and says where.
func TestREPLClearKeepsTranscript(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.jsonl")
	h := newHarness(t, text("one"), text("two"), text("three"))
	h.terminals["stdin"] = true
	r := h.run(strings.NewReader("first\n/clear\nsecond\n/clear\nthird\n"), "--session", path)
	r.check(t, 0)
	for i, want := range map[string]string{
		path:                               "third",
		filepath.Join(dir, "chat.1.jsonl"): "first",
		filepath.Join(dir, "chat.2.jsonl"): "second",
	} {
		b, err := os.ReadFile(i)
		if err != nil {
			t.Fatalf("reading %s: %v", i, err)
		}
		for _, p := range []string{"first", "second", "third"} {
			if strings.Contains(string(b), `"`+p+`"`) != (p == want) {
				t.Errorf("%s holds %s", i, b)
			}
		}
	}
	for _, want := range []string{"the old transcript is kept as " + filepath.Join(dir, "chat.1.jsonl"),
		"the old transcript is kept as " + filepath.Join(dir, "chat.2.jsonl")} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// A session resumed with another --model, or another --system, sends only
// thinking the strict fake accepts: what the new model cannot read, or what
// the new prefix invalidates, is dropped; the rest is kept.
func TestSessionResumeKeepsThinkingValid(t *testing.T) {
	turn := func(sig string) anthropictest.Reply {
		return anthropictest.NewStream().Block(anthropictest.Block{Type: "thinking", Signature: sig}, "Adding.").
			ToolUse("toolu_"+sig, "calculator", `{"a":1,"b":2,"operation":"add"}`).Stop("tool_use")
	}
	answer := func(sig string) anthropictest.Reply {
		return anthropictest.NewStream().Block(anthropictest.Block{Type: "thinking", Signature: sig}, "Done.").Text("3").Stop("end_turn")
	}
	for _, tc := range []struct {
		name   string
		second []string // the flags of the resumed run
		kept   int      // thinking blocks the resumed run's request sends back
	}{
		{"the same model", []string{"--model", "claude-opus-5-5"}, 2},
		{"a model that reads the blocks", []string{"--model", "claude-fable-5-1"}, 2},
		{"a model that cannot", []string{"--model", "claude-sonnet-5-5"}, 0},
		{"another system prompt", []string{"--model", "claude-opus-5-5", "--system", "Be terse."}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, turn("a"), answer("b"), answer("c"))
			path := filepath.Join(t.TempDir(), "s.jsonl")
			h.run(strings.NewReader(""), "--session", path, "--model", "claude-opus-5-5", "--tools", "calculator", "add 1 and 2").check(t, 0)
			r := h.run(strings.NewReader(""), append(tc.second, "--session", path, "--tools", "calculator", "and again?")...)
			r.check(t, 0)
			reqs := h.srv.Requests()
			n := 0
			for _, m := range reqs[len(reqs)-1].Messages() {
				for _, b := range m.Content {
					if b.Type == "thinking" {
						n++
					}
				}
			}
			if n != tc.kept {
				t.Errorf("%d thinking blocks sent back, want %d", n, tc.kept)
			}
		})
	}
}

// TestSessionHoldsNoSecret checks that the key and a --secret-env value
// the model repeats are not written to the session, which still resumes.
func TestSessionHoldsNoSecret(t *testing.T) {
	const secret = "hunter2-SECRET-value"
	h, dir := sessionHarness(t, text("Your key is "+testKey+" and the token "+secret+"."), text("ok"))
	h.env["MY_TOKEN"] = secret
	h.run(strings.NewReader(""), "--secret-env", "MY_TOKEN", "what are my secrets?").check(t, 0)
	names := sessionFiles(t, dir)
	b, _ := os.ReadFile(filepath.Join(dir, names[0]))
	for _, s := range []string{testKey, secret} {
		if strings.Contains(string(b), s) {
			t.Errorf("the session holds %q:\n%s", s, b)
		}
	}
	if !strings.Contains(string(b), "Your key is [REDACTED] and the token [REDACTED].") {
		t.Errorf("the session lacks the scrubbed answer:\n%s", b)
	}
	h.run(strings.NewReader(""), "-c", "more").check(t, 0)
	if got := h.srv.Requests()[1].Messages()[1].Text; strings.Contains(got, testKey) {
		t.Errorf("the resumed history sent the key: %q", got)
	}
}

// TestScrubbedDropsThinking checks that a thinking block that held a
// secret is left out of the saved history, since its signature would not
// match a changed text, and that one without is kept as it was.
func TestScrubbedDropsThinking(t *testing.T) {
	h := memory.New(memory.Config{})
	h.AppendUser(llm.Text{Text: "hi"})
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{
		llm.Thinking{Thinking: "the key is " + testKey, Signature: "sig1"},
		llm.Thinking{Thinking: "nothing to hide", Signature: "sig2"},
		llm.Text{Text: "done, " + testKey},
	}}, llm.Usage{InputTokens: 1})
	got, err := scrubbed(h, memory.Config{}, newSecretScan([]string{testKey, "", "done"}).secrets)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Block{llm.Thinking{Thinking: "nothing to hide", Signature: "sig2"}, llm.Text{Text: "done, [REDACTED]"}}
	if diff := cmp.Diff(want, got.Messages()[1].Content); diff != "" {
		t.Errorf("the saved answer (-want +got):\n%s", diff)
	}
}
