package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
)

// firstWrite is a stdout that hands over its first write.
type firstWrite chan string

func (w firstWrite) Write(p []byte) (int, error) {
	select {
	case w <- string(p):
	default:
	}
	return len(p), nil
}

// startServer runs agentloop server with args and returns the address it
// says it serves on, and its stop.
func startServer(t *testing.T, args ...string) (addr string, stop func()) {
	t.Helper()
	out := make(firstWrite, 1)
	stop, exited := start(t, nil, out, append([]string{"server"}, args...)...)
	select {
	case s := <-out:
		// Temporal development server on ADDR, namespace N; …
		f := strings.Fields(s)
		if len(f) < 5 || !strings.HasPrefix(s, "Temporal development server on ") {
			t.Fatalf("the server said %q", s)
		}
		return strings.TrimSuffix(f[4], ","), stop
	case <-exited:
	}
	stop() // which says how it failed
	t.FailNow()
	return "", nil
}

// TestServer is the durable mode on a fresh machine: agentloop server,
// then a worker and a prompt on the address it prints. With --db, the
// runs outlive the server: a session goes on after a restart.
func TestServer(t *testing.T) {
	api := anthropictest.NewServer(
		anthropictest.NewStream().Text("It is ", "42.").Stop("end_turn"),
		anthropictest.NewStream().Text("Still 42.").Stop("end_turn"),
		anthropictest.NewStream().Text("Yes.").Stop("end_turn"),
	)
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	prompt := func(addr string, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := command(context.Background(), env, &stdout, &stderr, append([]string{"--temporal", addr}, args...)...); code != exitOK {
			t.Fatalf("%q: exit %d:\n%s", args, code, stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}

	// In memory, on a port of its choosing.
	addr, stopServer := startServer(t, "--temporal", "127.0.0.1:0")
	stopWorker, _ := start(t, env, io.Discard, "worker", "--temporal", addr)
	if got := prompt(addr, "what is 6*7?"); got != "It is 42." {
		t.Errorf("stdout %q", got)
	}
	stopWorker()
	stopServer()

	// In a file, restarted on the same address, with a namespace of its own.
	db := filepath.Join(t.TempDir(), "runs.db")
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr = "127.0.0.1:" + port
	for i, want := range []string{"Still 42.", "Yes."} {
		got, stopServer := startServer(t, "--temporal", addr, "--db", db, "--namespace", "dev")
		if got != addr {
			t.Fatalf("the server says it is on %s, want %s", got, addr)
		}
		stopWorker, _ := start(t, env, io.Discard, "worker", "--temporal", addr, "--namespace", "dev")
		if got := prompt(addr, "--namespace", "dev", "--session", "s1", "and now?"); got != want {
			t.Errorf("prompt %d: stdout %q, want %q", i+1, got, want)
		}
		stopWorker()
		stopServer()
	}
	if n := len(api.Requests()[2].Messages()); n != 3 {
		t.Errorf("the prompt after the restart sent %d messages, want 3: the session's and its own", n)
	}
}

// TestRefused: a prompt or a worker on an address where no server listens
// fails, naming agentloop server.
func TestRefused(t *testing.T) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + port
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test"}
	for _, args := range [][]string{{"--temporal", addr, "hi"}, {"worker", "--temporal", addr}} {
		var stdout, stderr bytes.Buffer
		if code := command(context.Background(), env, &stdout, &stderr, args...); code != exitFailure {
			t.Errorf("%q: exit %d, want %d", args, code, exitFailure)
		}
		if !strings.Contains(stderr.String(), "agentloop server starts one") {
			t.Errorf("%q: stderr does not name agentloop server:\n%s", args, stderr.String())
		}
	}
}
