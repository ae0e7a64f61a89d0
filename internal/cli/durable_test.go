package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
)

// TestNoDurableMode checks that the plain build refuses the durable mode
// with a usage error that says how to get it, before anything starts.
func TestNoDurableMode(t *testing.T) {
	for _, args := range [][]string{
		{"worker", "--temporal", "localhost:7233"},
		{"--temporal", "localhost:7233", "hi"},
		{"approve", "--temporal", "localhost:7233", "--session", "s", "toolu_1"},
		{"deny", "--session", "s", "toolu_1", "too", "risky"},
		{"server"},
	} {
		h := newHarness(t)
		r := h.run(strings.NewReader(""), args...)
		r.check(t, exitUsage)
		if !strings.Contains(r.stderr, "(cd durable/cmd/agentloop && go install .)") {
			t.Errorf("%q: stderr does not say how to install the durable build:\n%s", args, r.stderr)
		}
		if n := len(h.srv.Requests()); n != 0 {
			t.Errorf("%q: %d requests sent", args, n)
		}
	}
}

// fakeDurable is a durable mode that records what the command asks of it
// and answers with scripted events.
type fakeDurable struct {
	events  []agent.Event
	err     error
	block   bool // Run waits for its context to end, then ends cancelled
	prompt  Prompt
	worker  Worker
	decided []string
	asked   []error // Ask's answers: nil allowed
	server  DevServer
}

func (f *fakeDurable) Serve(ctx context.Context, t Temporal, w Worker) error {
	f.worker = w
	return nil
}

func (f *fakeDurable) Run(ctx context.Context, t Temporal, p Prompt) iter.Seq2[agent.Event, error] {
	f.prompt = p
	return func(yield func(agent.Event, error) bool) {
		p.Started("s-new")
		if p.Ask != nil {
			f.asked = append(f.asked, p.Ask(ctx, llm.ToolUse{ID: "toolu_1", Name: "bash", Input: []byte(`{"command":"make deploy"}`)}))
		}
		if f.block {
			<-ctx.Done()
			yield(agent.Result{State: agent.Cancelled}, nil)
			return
		}
		for _, ev := range f.events {
			if !yield(ev, nil) {
				return
			}
		}
		yield(agent.Result{State: f.state()}, f.err)
	}
}

func (f *fakeDurable) state() agent.State {
	for _, ev := range f.events {
		if r, ok := ev.(agent.Result); ok {
			return r.State
		}
	}
	if f.err != nil {
		return agent.Failed
	}
	return agent.Finished
}

func (f *fakeDurable) Decide(ctx context.Context, t Temporal, session, callID string, allow bool, reason string) error {
	f.decided = append(f.decided, fmt.Sprintf("%s %s %v %q", session, callID, allow, reason))
	return nil
}

func (f *fakeDurable) Server(ctx context.Context, s DevServer) error {
	f.server = s
	s.Ready("127.0.0.1:40001")
	return nil
}

// runDurable runs the command with the fake durable mode f.
func (h *harness) runDurable(f *fakeDurable, stdin io.Reader, args ...string) result {
	h.t.Helper()
	var stdout, stderr syncBuffer
	c := h.cli(stdin, &stdout, &stderr)
	c.durable = f
	code := c.main(context.Background(), args, stdin, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// TestDurablePrompt runs prompts through a fake durable mode: the events
// are shown as the in-process CLI shows them, with its exit statuses, and
// the flags reach the run.
func TestDurablePrompt(t *testing.T) {
	turn := []agent.Event{agent.TurnStart{Iteration: 1}, agent.TextDelta{Text: "Hello."}, agent.UsageUpdate{}}
	for _, tt := range []struct {
		name   string
		f      *fakeDurable
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"finished", &fakeDurable{events: turn}, nil, exitOK, "Hello.\n", "session s-new"},
		{"session", &fakeDurable{events: turn}, []string{"--session", "s1"}, exitOK, "Hello.\n", ""},
		{"limit", &fakeDurable{events: append(turn, agent.Result{State: agent.IterationLimit, Iterations: 3})},
			nil, exitLimit, "Hello.\n", "iteration limit reached"},
		{"failed", &fakeDurable{err: errors.New("agent: iteration 1: boom")}, nil, exitFailure, "", "boom"},
		{"json", &fakeDurable{events: turn}, []string{"--json"}, exitOK, `{"type":"turn_start","iteration":1}`, ""},
		{"result", &fakeDurable{events: append(turn, agent.Result{Text: "Hello.", State: agent.Finished, Iterations: 1})},
			[]string{"--output-format", "json", "--session", "s1"}, exitOK,
			`{"type":"result","subtype":"success","is_error":false,`, ""},
		{"result of a limit", &fakeDurable{events: append(turn, agent.Result{State: agent.IterationLimit, Iterations: 3})},
			[]string{"--output-format", "json"}, exitLimit, `"subtype":"error_max_turns","is_error":true,`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			args := append(append([]string{"--temporal", "localhost:7233", "--max-iterations", "3", "--approve", "deploy"}, tt.args...), "hi")
			r := h.runDurable(tt.f, strings.NewReader(""), args...)
			r.check(t, tt.code)
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout %q does not hold %q", r.stdout, tt.stdout)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr %q does not hold %q", r.stderr, tt.stderr)
			}
			p := tt.f.prompt
			if p.Prompt != "hi" || p.MaxIterations != 3 || !slices.Equal(p.Approve, []string{"deploy"}) || p.Ask != nil {
				t.Errorf("the run got %+v", p)
			}
		})
	}
}

// TestDurableAsk: on a terminal, a call that waits for approval is asked
// about as in process, and "always" means what it means there: for bash,
// that exact command, not every later call of the tool.
func TestDurableAsk(t *testing.T) {
	for _, tt := range []struct {
		name, answer string
		allowed      bool
		later        map[string]bool // a later call's command → allowed without asking
	}{
		{"always", "a\n", true, map[string]bool{"make deploy": true, " make deploy ": true, "ls": false, "make deploy; rm -rf ~": false}},
		{"yes", "y\n", true, map[string]bool{"make deploy": false}},
		{"no", "n\n", false, map[string]bool{"make deploy": false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.terminals["stdin"], h.terminals["stderr"] = true, true
			f := &fakeDurable{events: []agent.Event{agent.TurnStart{Iteration: 1}}}
			r := h.runDurable(f, strings.NewReader(tt.answer), "--temporal", "localhost:7233", "deploy it")
			r.check(t, exitOK)
			if len(f.asked) != 1 || (f.asked[0] == nil) != tt.allowed {
				t.Fatalf("answered %v, want allowed %v; stderr:\n%s", f.asked, tt.allowed, r.stderr)
			}
			if !tt.allowed && !strings.Contains(f.asked[0].Error(), "the user said no") {
				t.Errorf("a denial tells the model %q, not the in-process words", f.asked[0])
			}
			if !strings.Contains(r.stderr, "make deploy") || !strings.Contains(r.stderr, "this exact command") {
				t.Errorf("the question does not show the command and what always means:\n%s", r.stderr)
			}
			// stdin is at its end: a call asked about again is denied.
			for cmd, want := range tt.later {
				call := llm.ToolUse{ID: "toolu_2", Name: "bash", Input: []byte(fmt.Sprintf(`{"command":%q}`, cmd))}
				if err := f.prompt.Ask(context.Background(), call); (err == nil) != want {
					t.Errorf("later bash %q: %v, want allowed %v", cmd, err, want)
				}
			}
		})
	}
}

// TestDurableDetach: with --detach, Ctrl-C leaves the run going, exits 130
// and says how to continue it.
func TestDurableDetach(t *testing.T) {
	h := newHarness(t)
	f := &fakeDurable{block: true}
	h.interrupts <- os.Interrupt
	r := h.runDurable(f, strings.NewReader(""), "--temporal", "localhost:7233", "--detach", "hi")
	r.check(t, exitInterrupted)
	if !f.prompt.Detach || !strings.Contains(r.stderr, "--session s-new continues it") {
		t.Errorf("detach %v; stderr:\n%s", f.prompt.Detach, r.stderr)
	}
}

// TestDurableWorkerAndDecide: a worker gets the tools, policy and system
// prompt of the usual flags; approve and deny reach the run.
func TestDurableWorkerAndDecide(t *testing.T) {
	h := newHarness(t)
	f := &fakeDurable{}
	h.runDurable(f, strings.NewReader(""), "worker", "--temporal", "localhost:7233", "--tools", "calculator,bash",
		"--append-system", "Be brief.", "--at-most-once", "bash", "--deny", "bash(rm:*)").check(t, exitOK)
	var names []string
	for _, s := range f.worker.Registry.Specs() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"calculator", "bash"}) || !strings.HasSuffix(f.worker.System, "Be brief.") ||
		!slices.Equal(f.worker.AtMostOnce, []string{"bash"}) {
		t.Errorf("worker got tools %v, system %q, at most once %v", names, f.worker.System, f.worker.AtMostOnce)
	}
	// No one to ask on a worker: bash is denied unless a rule allows it or
	// a person approved the call in the run, and a deny rule wins.
	for _, tt := range []struct {
		command  string
		approved bool
		ok       bool
	}{{"ls", false, false}, {"ls", true, true}, {"rm -rf x", true, false}} {
		call := llm.ToolUse{ID: "toolu_1", Name: "bash", Input: []byte(fmt.Sprintf(`{"command":%q}`, tt.command))}
		if err := f.worker.Approve(context.Background(), call, tt.approved); (err == nil) != tt.ok {
			t.Errorf("bash %q approved %v: %v, want allowed %v", tt.command, tt.approved, err, tt.ok)
		}
	}
	h.runDurable(f, strings.NewReader(""), "approve", "--temporal", "x:1", "--session", "s1", "toolu_1").check(t, exitOK)
	h.runDurable(f, strings.NewReader(""), "deny", "--temporal", "x:1", "--session", "s1", "toolu_2", "too", "risky").check(t, exitOK)
	want := []string{`s1 toolu_1 true ""`, `s1 toolu_2 false "too risky"`}
	if diff := cmp.Diff(want, f.decided); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// TestDurableWorkerApprovedPaths: a call a person approved in the run is
// held to the --deny rules alone, with paths resolved as the workspace
// resolves them, so that a link into a denied directory does not dodge
// its rule.
func TestDurableWorkerApprovedPaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, d := range []string{"secrets", "docs"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("secrets", "innocent"); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	f := &fakeDurable{}
	h.runDurable(f, strings.NewReader(""), "worker", "--temporal", "localhost:7233", "--tools", "write_file",
		"--deny", "write_file(secrets/:*)").check(t, exitOK)
	for _, tt := range []struct {
		path     string
		approved bool
		ok       bool
	}{
		{"docs/a.md", false, false}, // nobody to ask on a worker
		{"docs/a.md", true, true},
		{"secrets/k", true, false},
		{"innocent/k", true, false}, // the link leads into secrets
		{filepath.Join(dir, "secrets", "k"), true, false},
	} {
		call := llm.ToolUse{ID: "toolu_1", Name: "write_file", Input: []byte(fmt.Sprintf(`{"path":%q,"content":"x"}`, tt.path))}
		if err := f.worker.Approve(context.Background(), call, tt.approved); (err == nil) != tt.ok {
			t.Errorf("write_file %q approved %v: %v, want allowed %v", tt.path, tt.approved, err, tt.ok)
		}
	}
}

// stopOnCancel is a durable mode whose worker serves until it is stopped.
type stopOnCancel struct{ fakeDurable }

func (s *stopOnCancel) Serve(ctx context.Context, t Temporal, w Worker) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestDurableWorkerCtrlC: Ctrl-C stops a worker, which exits 0.
func TestDurableWorkerCtrlC(t *testing.T) {
	h := newHarness(t)
	h.interrupts <- os.Interrupt
	var stdout, stderr syncBuffer
	c := h.cli(strings.NewReader(""), &stdout, &stderr)
	c.durable = &stopOnCancel{}
	if code := c.main(context.Background(), []string{"worker", "--temporal", "x:1", "--tools", "calculator"}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr.String())
	}
}

// TestQuestionLines: a question withdrawn because its call was decided
// elsewhere does not leave its late answer to the next question.
func TestQuestionLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		var prompts strings.Builder
		readLine := questionLines(&prompts, pr)
		ask := func(ctx context.Context) <-chan string {
			got := make(chan string, 1)
			go func() {
				l, err := readLine(ctx, "Allow? ")
				got <- fmt.Sprint(l, err)
			}()
			return got
		}
		ctx, withdraw := context.WithCancel(context.Background())
		first := ask(ctx)
		synctest.Wait()
		withdraw()
		if got := <-first; got != "context canceled" {
			t.Errorf("the withdrawn question got %q", got)
		}
		go pw.Write([]byte("y\n")) // typed for the withdrawn question
		synctest.Wait()
		second := ask(context.Background())
		synctest.Wait()
		go pw.Write([]byte("n\n"))
		if got := <-second; got != "n<nil>" {
			t.Errorf("the next question got %q, want the line typed for it", got)
		}
		pw.Close()
		if got := <-ask(context.Background()); got != "EOF" {
			t.Errorf("at the end of input: %q", got)
		}
		if got := prompts.String(); got != "Allow? Allow? Allow? " {
			t.Errorf("prompts %q", got)
		}
	})
}

// TestDurableServer: agentloop server runs the durable mode's server on
// the flags' address, namespace and file, prints how to use it, and
// refuses flags it has no use for.
func TestDurableServer(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		want DevServer
		out  string
	}{
		{"defaults", nil, exitOK, DevServer{HostPort: "127.0.0.1:7233", Namespace: "default"},
			"agentloop worker --temporal 127.0.0.1:40001\n"},
		{"flags", []string{"--temporal", "0.0.0.0:0", "--namespace", "dev", "--db", "runs.db"}, exitOK,
			DevServer{HostPort: "0.0.0.0:0", Namespace: "dev", DB: "runs.db"},
			"agentloop --temporal 127.0.0.1:40001 --namespace dev \"a prompt\"\n"},
		{"no port", []string{"--temporal", "localhost"}, exitUsage, DevServer{}, ""},
		{"no host", []string{"--temporal", ":7233"}, exitUsage, DevServer{}, ""},
		{"bad port", []string{"--temporal", "localhost:http"}, exitUsage, DevServer{}, ""},
		// "server hi" is a prompt (see TestCommandWords); after a flag, words are a mistake.
		{"prompt", []string{"--namespace", "dev", "hi"}, exitUsage, DevServer{}, ""},
		{"session", []string{"--session", "s1"}, exitUsage, DevServer{}, ""},
		{"no directory", []string{"--db", "nowhere/runs.db"}, exitUsage, DevServer{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			f := &fakeDurable{}
			r := h.runDurable(f, strings.NewReader(""), append([]string{"server"}, tt.args...)...)
			r.check(t, tt.code)
			if diff := cmp.Diff(tt.want, f.server, cmpopts.IgnoreFields(DevServer{}, "Logger", "Ready")); diff != "" {
				t.Errorf("the server got (-want +got):\n%s", diff)
			}
			if !strings.Contains(r.stdout, tt.out) {
				t.Errorf("stdout %q does not hold %q", r.stdout, tt.out)
			}
		})
	}
	h := newHarness(t)
	r := h.runDurable(&fakeDurable{}, strings.NewReader(""), "worker", "--temporal", "x:1", "--db", "runs.db")
	r.check(t, exitUsage)
}
