package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
)

// sessionHarness is a harness whose runs keep sessions in a state
// directory of the test's, from a working directory of the test's. It
// returns the directory this working directory's sessions go to.
func sessionHarness(t *testing.T, replies ...anthropictest.Reply) (*harness, string) {
	t.Helper()
	h := newHarness(t, replies...)
	t.Chdir(t.TempDir())
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "XDG_STATE_HOME": filepath.Join(home, "state"), "LocalAppData": home} {
		h.env[k] = v
	}
	f := sessionFlags{root: sessionsRoot(func(k string) string { return h.env[k] })}
	dir, err := f.projectDir()
	if err != nil {
		t.Fatal(err)
	}
	return h, dir
}

// sessionFiles returns the names of the files in dir.
func sessionFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// resultOf decodes --output-format json's object.
func resultOf(t *testing.T, r result) resultRecord {
	t.Helper()
	var rec resultRecord
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatalf("stdout is not a result object: %v\n%s", err, r.stdout)
	}
	return rec
}

// TestSessionsByDefault checks that a conversation is saved without
// --session, in the working directory's sessions, under an id that
// --output-format json gives and that --resume (whole or by its start)
// and --continue take up again.
func TestSessionsByDefault(t *testing.T) {
	h, dir := sessionHarness(t, text("Hello, Ada."), text("Ada."), text("Still Ada."), text("Yes."), text("Hi."))
	rec := resultOf(t, h.run(strings.NewReader(""), "--output-format", "json", "I am Ada"))
	if _, err := uuid.Parse(rec.SessionID); err != nil {
		t.Fatalf("session_id %q is not a UUID: %v", rec.SessionID, err)
	}
	path := filepath.Join(dir, rec.SessionID+".jsonl")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the conversation was not saved: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the session is mode %v, want 0600", fi.Mode().Perm())
	}
	if got := sessionFiles(t, dir); !cmp.Equal(got, []string{rec.SessionID + ".jsonl"}) {
		t.Errorf("the sessions directory holds %q, want the session alone (no lock left)", got)
	}

	h.run(strings.NewReader(""), "-c", "What is my name?").check(t, 0)
	h.run(strings.NewReader(""), "--resume", rec.SessionID[:8], "And now?").check(t, 0)
	reqs := h.srv.Requests()
	for i, want := range []int{1, 3, 5} {
		if got := len(reqs[i].Messages()); got != want {
			t.Errorf("request %d sent %d messages, want %d", i+1, got, want)
		}
	}
	// The REPL resumes it too, and says so.
	h.terminals["stdin"] = true
	r := h.run(strings.NewReader("Sure?\n"), "-c")
	r.check(t, 0)
	h.terminals["stdin"] = false
	if want := "resuming session " + rec.SessionID + ": 6 messages"; !strings.Contains(r.stderr, want) {
		t.Errorf("the REPL does not say %q:\n%s", want, r.stderr)
	}
	if got := sessionFiles(t, dir); len(got) != 1 {
		t.Errorf("resuming made new sessions: %q", got)
	}

	// Another conversation is another session, and the latest.
	h.run(strings.NewReader(""), "hi").check(t, 0)
	if got := sessionFiles(t, dir); len(got) != 2 {
		t.Errorf("the sessions directory holds %q, want 2 sessions", got)
	}
}

// TestSessionPerDirectory checks that sessions are kept per working
// directory: --continue in another one does not find this one's.
func TestSessionPerDirectory(t *testing.T) {
	h, _ := sessionHarness(t, text("one"))
	h.run(strings.NewReader(""), "hi").check(t, 0)
	t.Chdir(t.TempDir())
	r := h.run(strings.NewReader(""), "--continue", "again")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "no session to continue in this directory") {
		t.Errorf("stderr does not say there is no session here:\n%s", r.stderr)
	}
}

// TestSessionFlagErrors checks the usage errors of the session flags,
// each found before a request is sent.
func TestSessionFlagErrors(t *testing.T) {
	h, dir := sessionHarness(t, text("one"), text("two"), text("three"))
	h.run(strings.NewReader(""), "hi").check(t, 0)
	h.run(strings.NewReader(""), "hi").check(t, 0)
	ids := sessionFiles(t, dir)
	// Two ids that start alike, so that a prefix is ambiguous.
	a, b := "0000aaaa-0000-4000-8000-000000000000", "0000bbbb-0000-4000-8000-000000000000"
	for i, id := range []string{a, b} {
		if err := os.Rename(filepath.Join(dir, ids[i]), filepath.Join(dir, id+".jsonl")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"an unknown id", []string{"-r", "deadbeef", "hi"}, nil, "no session deadbeef in this directory"},
		{"an ambiguous start", []string{"-r", "0000", "hi"}, nil, "2 sessions start with 0000 (" + a + ", " + b + ")"},
		{"not an id", []string{"--resume", "../../etc/passwd", "hi"}, nil, `--resume "../../etc/passwd" is not a session id`},
		{"continue and resume", []string{"-c", "-r", a, "hi"}, nil, "give one of them"},
		{"session and continue", []string{"--session", "x.jsonl", "-c", "hi"}, nil, "--session x.jsonl names the conversation itself"},
		{"session and no persistence", []string{"--session", "x.jsonl", "--no-session-persistence", "hi"}, nil, "saves none"},
		{"no state directory", []string{"-c", "hi"}, map[string]string{"HOME": "", "XDG_STATE_HOME": "", "LocalAppData": ""}, "--continue and --resume need the state directory"},
		{"the demo", []string{"-c", "demo"}, nil, "demo runs a fixed script offline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := map[string]string{}
			for k, v := range tc.env {
				saved[k], h.env[k] = h.env[k], v
			}
			defer func() {
				for k, v := range saved {
					h.env[k] = v
				}
			}()
			n := len(h.srv.Requests())
			r := h.run(strings.NewReader(""), tc.args...)
			r.check(t, exitUsage)
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, r.stderr)
			}
			if got := len(h.srv.Requests()); got != n {
				t.Errorf("%d requests sent before the usage error", got-n)
			}
		})
	}
	// A whole id is never ambiguous, nor is an id in capitals unknown.
	h.run(strings.NewReader(""), "-r", strings.ToUpper(a), "hi").check(t, 0)
}

// TestFailedRunSavesNoSession checks that a first prompt that fails
// leaves no session behind, nor a lock, and that one that fails on a
// resumed session leaves it as it was.
func TestFailedRunSavesNoSession(t *testing.T) {
	fail := anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: "bad request", RequestID: "req_400"}
	h, dir := sessionHarness(t, fail, text("ok"), fail)
	h.run(strings.NewReader(""), "hi").check(t, exitFailure)
	if got := sessionFiles(t, dir); len(got) != 0 {
		t.Fatalf("a failed run left %q", got)
	}
	h.run(strings.NewReader(""), "hi").check(t, 0)
	names := sessionFiles(t, dir)
	want, _ := os.ReadFile(filepath.Join(dir, names[0]))
	h.run(strings.NewReader(""), "-c", "this fails").check(t, exitFailure)
	got, _ := os.ReadFile(filepath.Join(dir, names[0]))
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("the failed run changed the session (-before +after):\n%s", diff)
	}
}

// TestNoSessionPersistence checks that --no-session-persistence saves
// nothing, and that with --continue it loads the session and leaves it
// as it was.
func TestNoSessionPersistence(t *testing.T) {
	h, dir := sessionHarness(t, text("one"), text("two"), text("three"))
	h.run(strings.NewReader(""), "--no-session-persistence", "hi").check(t, 0)
	if got := sessionFiles(t, dir); len(got) != 0 {
		t.Fatalf("--no-session-persistence saved %q", got)
	}
	h.run(strings.NewReader(""), "hi").check(t, 0)
	names := sessionFiles(t, dir)
	want, _ := os.ReadFile(filepath.Join(dir, names[0]))
	h.run(strings.NewReader(""), "--no-session-persistence", "-c", "more").check(t, 0)
	if n := len(h.srv.Requests()[2].Messages()); n != 3 {
		t.Errorf("the resumed run sent %d messages, want 3", n)
	}
	got, _ := os.ReadFile(filepath.Join(dir, names[0]))
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("the run changed the session (-before +after):\n%s", diff)
	}
}

// TestSessionsCommand checks agentloop sessions: this directory's
// sessions newest first, with time, cost and the first prompt escaped and
// cut; --all every directory's.
func TestSessionsCommand(t *testing.T) {
	long := strings.Repeat("word ", 20)
	h, dir := sessionHarness(t, text("one"), text("two"), text("three"))
	for _, prompt := range []string{"first\x1b[31m red", long} {
		h.run(strings.NewReader(""), prompt).check(t, 0)
	}
	h.run(strings.NewReader(""), "-c", "more").check(t, 0) // the second, resumed: twice the cost
	all, err := listSessions(dir, true)
	if err != nil || len(all) != 2 {
		t.Fatalf("listSessions = %v, %v; want 2 sessions", all, err)
	}
	// Set times apart, the first prompt's session the newer.
	first, second := all[0], all[1]
	if !strings.HasPrefix(first.FirstPrompt, "first") {
		first, second = second, first
	}
	t1, t2 := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC), time.Date(2026, 11, 21, 18, 5, 0, 0, time.UTC)
	os.Chtimes(second.Path, t1, t1)
	os.Chtimes(first.Path, t2, t2)
	row := func(id string, at time.Time, cost, prompt string) string {
		return fmt.Sprintf("%s  %s  %s  %s", id, at.Local().Format("2006-01-02 15:04"), cost, prompt)
	}
	want := strings.Join([]string{
		"ID                                    MODIFIED          COST     FIRST PROMPT",
		row(first.ID, t2, "$0.0001", `first\x1b[31m red`),
		row(second.ID, t1, "$0.0001", strings.Repeat("word ", 11)+"word…"),
	}, "\n") + "\n"
	r := h.run(strings.NewReader(""), "sessions")
	r.check(t, 0)
	if diff := cmp.Diff(want, r.stdout); diff != "" {
		t.Errorf("agentloop sessions (-want +got):\n%s", diff)
	}
	if second.CostUSD <= first.CostUSD {
		t.Errorf("the resumed session costs $%v, the other $%v: want its two turns counted", second.CostUSD, first.CostUSD)
	}

	r = h.run(strings.NewReader(""), "sessions", "--all")
	r.check(t, 0)
	if !strings.Contains(r.stdout, filepath.Base(dir)) || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("agentloop sessions --all lacks the directory or a session:\n%s", r.stdout)
	}
	t.Chdir(t.TempDir())
	r = h.run(strings.NewReader(""), "sessions")
	r.check(t, 0)
	if r.stdout != "" || !strings.Contains(r.stderr, "no sessions saved in this directory") {
		t.Errorf("agentloop sessions elsewhere: stdout %q, stderr %q; want a note on stderr alone", r.stdout, r.stderr)
	}
}

// TestREPLClearStartsSession checks that /clear in the REPL starts a new
// session and keeps the old one saved, saying how to resume it.
func TestREPLClearStartsSession(t *testing.T) {
	h, dir := sessionHarness(t, text("one"), text("two"))
	h.terminals["stdin"] = true
	r := h.run(strings.NewReader("hi\n/clear\nagain\n"))
	r.check(t, 0)
	names := sessionFiles(t, dir)
	if len(names) != 2 {
		t.Fatalf("the sessions directory holds %q, want 2 sessions", names)
	}
	if !strings.Contains(r.stderr, "the old one is saved: agentloop -r ") {
		t.Errorf("/clear did not say how to resume the old session:\n%s", r.stderr)
	}
	if n := len(h.srv.Requests()[1].Messages()); n != 1 {
		t.Errorf("the prompt after /clear sent %d messages, want 1", n)
	}
}

// TestSessionInfoRead checks what the list shows of a session file: the
// first prompt still there, past a compaction's summary, and the cost of
// its turns, unknown when a turn's model has no price.
func TestSessionInfoRead(t *testing.T) {
	summary := `{"role":"user","content":[{"type":"text","text":"This session is being continued…"}],"summary":true}`
	turn := func(model string) string {
		return `{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1000000,"output_tokens":0},"model":"` + model + `"}`
	}
	prompt := `{"role":"user","content":[{"type":"text","text":"the prompt"}]}`
	price := func(model string) float64 { info, _ := llm.LookupModel(model); return info.Price.Input }
	for _, tc := range []struct {
		name  string
		lines []string
		want  sessionInfo
	}{
		{"after a summary", []string{summary, turn(defaultModel), prompt, turn(defaultModel)},
			sessionInfo{FirstPrompt: "the prompt", CostUSD: 2 * price(defaultModel), Priced: true}},
		{"a model without a price", []string{prompt, turn("claude-unknown-1")},
			sessionInfo{FirstPrompt: "the prompt"}},
		{"a bad line", []string{"{", prompt, turn(defaultModel)},
			sessionInfo{FirstPrompt: "the prompt", CostUSD: price(defaultModel), Priced: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o600)
			got := sessionInfo{Path: path}
			got.read(true)
			tc.want.Path = path
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("read(true) (-want +got):\n%s", diff)
			}
			got = sessionInfo{Path: path}
			got.read(false)
			if diff := cmp.Diff(sessionInfo{Path: path, FirstPrompt: "the prompt"}, got); diff != "" {
				t.Errorf("read(false) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSessionInfoReadStopsAtPrompt: /resume's list reads a long
// transcript only up to its first prompt, so that its allocations do not
// grow with the turns after it (each line read would be some).
func TestSessionInfoReadStopsAtPrompt(t *testing.T) {
	turn := `{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("x", 1000) + `"}],"usage":{"input_tokens":10,"output_tokens":10},"model":"` + defaultModel + `"}` + "\n"
	path := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(path, []byte(`{"role":"user","content":[{"type":"text","text":"the prompt"}]}`+"\n"+strings.Repeat(turn, 5000)), 0o600)
	allocs := testing.AllocsPerRun(3, func() {
		si := sessionInfo{Path: path}
		si.read(false)
		if si.FirstPrompt != "the prompt" {
			t.Fatalf("FirstPrompt = %q", si.FirstPrompt)
		}
	})
	if allocs > 100 {
		t.Errorf("reading the first prompt of a 5,000-turn transcript made %v allocations, want at most 100: it read past the prompt", allocs)
	}
}

// TestSessionThroughSymlink checks that a directory reached through a
// symbolic link has the same sessions as by its own path.
func TestSessionThroughSymlink(t *testing.T) {
	h, _ := sessionHarness(t, text("one"), text("two"))
	real, _ := os.Getwd()
	h.run(strings.NewReader(""), "hi").check(t, 0)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	t.Chdir(link)
	h.run(strings.NewReader(""), "-c", "again").check(t, 0)
	if n := len(h.srv.Requests()[1].Messages()); n != 3 {
		t.Errorf("--continue through the link sent %d messages, want 3", n)
	}
}

// TestSessionDirUnusable checks that a state directory that cannot hold
// sessions does not stop a run that did not ask for one: it says so, and
// answers.
func TestSessionDirUnusable(t *testing.T) {
	h, _ := sessionHarness(t, text("ok"))
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, nil, 0o600)
	h.env["XDG_STATE_HOME"], h.env["HOME"], h.env["LocalAppData"] = file, file, file
	r := h.run(strings.NewReader(""), "hi")
	r.check(t, 0)
	if r.stdout != "ok\n" || !strings.Contains(r.stderr, "this conversation cannot be saved") {
		t.Errorf("stdout %q, stderr %q; want the answer, and a word that it is not saved", r.stdout, r.stderr)
	}
}

// TestREPLResumeSession checks /resume over the saved sessions: it lists
// them, newest first, and /resume N goes on with that one, whose history
// the next prompt carries, while the one left stays saved.
func TestREPLResumeSession(t *testing.T) {
	h, dir := sessionHarness(t, text("Noted."), text("Fresh."), text("It was 42."))
	h.terminals["stdin"] = true
	r := h.run(strings.NewReader("remember the number 42\n/clear\nhello\n/resume\n/resume 9x\n/resume 2\nwhat was the number?\n"))
	r.check(t, 0)
	if names := sessionFiles(t, dir); len(names) != 2 {
		t.Fatalf("the sessions directory holds %q, want 2 sessions", names)
	}
	for _, want := range []string{"  1  ", "  hello\n", "  2  ", "  remember the number 42\n", "/resume: no session", "(resumed session "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	reqs := h.srv.Requests()
	if n := len(reqs[2].Messages()); n != 3 {
		t.Errorf("the turn after /resume sent %d messages, want 3", n)
	}
}
