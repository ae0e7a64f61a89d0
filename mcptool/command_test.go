package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

func TestStderrLog(t *testing.T) {
	var logged bytes.Buffer
	l := &stderrLog{logger: slog.New(slog.NewTextHandler(&logged, nil))}
	for i := range 12 {
		io.WriteString(l, strings.Repeat("x", i)+"\r\n")
	}
	io.WriteString(l, "unfinished "+strings.Repeat("y", 2*maxLineSize))
	lines := strings.Split(l.tail(), "\n")
	if len(lines) != tailLines+1 {
		t.Fatalf("tail has %d lines, want %d", len(lines), tailLines+1)
	}
	if lines[0] != "xx" || lines[tailLines-1] != strings.Repeat("x", 11) {
		t.Errorf("tail starts %q and ends %q: not the last lines", lines[0], lines[tailLines-1])
	}
	if n := len(lines[tailLines]); n != maxLineSize {
		t.Errorf("unfinished line kept %d bytes, want the cap %d", n, maxLineSize)
	}
	if got := strings.Count(logged.String(), "mcp server stderr"); got != 12 {
		t.Errorf("logged %d lines, want 12", got)
	}
}

func TestConnectCommandFailsToStart(t *testing.T) {
	tests := []struct {
		name string
		cmd  func() (*Server, error)
		want []string // substrings of the error
	}{
		{"not found", func() (*Server, error) {
			return ConnectCommand(t.Context(), exec.Command("/nonexistent/mcp-server", "--flag"), nil)
		}, []string{`start server "/nonexistent/mcp-server --flag"`, "no such file"}},
		{"exits at once", func() (*Server, error) {
			return ConnectCommand(t.Context(), helperCommand(t, "die"), nil)
		}, []string{"start server", "its stderr ends:\nstarting\nfatal: no API token configured"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.cmd()
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestHandshakeTimeoutKills checks that a server that does not complete
// the handshake in time is killed at once, with SIGKILL, and is not first
// given its stdin's end and SIGTERM with seconds to act on each, which a
// stubborn server ignores: the start is bounded by HandshakeTimeout alone.
func TestHandshakeTimeoutKills(t *testing.T) {
	log := filepath.Join(t.TempDir(), "signals")
	cmd := helperCommand(t, "stubborn")
	_, err := ConnectCommand(t.Context(), cmd, &Options{HandshakeTimeout: 50 * time.Millisecond, Env: []string{"STUBBORN_LOG=" + log}})
	if !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("error = %v, want ErrHandshakeTimeout", err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("the server was not waited for")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the server ended with %v, want killed by SIGKILL", cmd.ProcessState)
	}
	if b, err := os.ReadFile(log); err == nil {
		t.Errorf("the server was sent SIGTERM first: %q", b)
	}
}

// TestServerCrashMidRun checks that a server dying during a call costs the
// model only that server's tools: the call in flight and later ones are
// is_error results naming the server, and another server's tools still work.
func TestServerCrashMidRun(t *testing.T) {
	var logged bytes.Buffer
	h, err := ConnectCommand(t.Context(), helperCommand(t, "server"), &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Name() != "helper" {
		t.Errorf("Name() = %q, want the name the server reports, helper", h.Name())
	}
	other := connectInMemory(t, testServer("alpha", nil, nil), nil)
	reg := registered(t, h, other)

	before := reg.Run(t.Context(), []llm.ToolUse{{ID: "0", Name: "mcp__helper__echo", Input: json.RawMessage(`{"message":"up"}`)}})
	if diff := cmp.Diff([]llm.ToolResult{{ToolUseID: "0", Content: []llm.Block{llm.Text{Text: "up"}}}}, before); diff != "" {
		t.Fatalf("before the crash (-want +got):\n%s", diff)
	}

	crash := reg.Run(t.Context(), []llm.ToolUse{{ID: "1", Name: "mcp__helper__crash", Input: json.RawMessage(`{}`)}})
	after := reg.Run(t.Context(), []llm.ToolUse{
		{ID: "2", Name: "mcp__helper__echo", Input: json.RawMessage(`{"message":"still there?"}`)},
		{ID: "3", Name: "mcp__alpha__echo", Input: json.RawMessage(`{"message":"yes"}`)},
	})
	for _, r := range []llm.ToolResult{crash[0], after[0]} {
		text := llm.TextOf(r.Content)
		if !r.IsError || !strings.Contains(text, `mcp server "helper"`) {
			t.Errorf("result %s = %+v, want an is_error result naming the server", r.ToolUseID, r)
		}
	}
	if diff := cmp.Diff(llm.ToolResult{ToolUseID: "3", Content: []llm.Block{llm.Text{Text: "alpha: yes"}}}, after[1]); diff != "" {
		t.Errorf("the other server's tool (-want +got):\n%s", diff)
	}
	if err := h.Close(); err == nil || !strings.Contains(err.Error(), `"helper"`) {
		t.Errorf("Close of a crashed server = %v, want its exit status, naming it", err)
	}
	// After Close, which waited for the process and so for its stderr.
	if log := logged.String(); !strings.Contains(log, "mcp server connection lost") || !strings.Contains(log, "simulated crash") {
		t.Errorf("log lacks the warning and the server's last stderr line:\n%s", log)
	}
}

// TestCloseLeavesNoProcess checks that Close ends the server and also a
// grandchild that ignores SIGTERM and outlives its parent. Both hold the
// write end of a pipe, so its read end reaches EOF only when both are gone.
func TestCloseLeavesNoProcess(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := helperCommand(t, "server")
	cmd.ExtraFiles = []*os.File{w}
	s, err := ConnectCommand(t.Context(), cmd, nil)
	w.Close() // the server and its grandchild now hold the only copies
	if err != nil {
		t.Fatal(err)
	}
	reg := registered(t, s)
	res := reg.Run(t.Context(), []llm.ToolUse{{ID: "1", Name: "mcp__helper__spawn", Input: json.RawMessage(`{}`)}})
	if res[0].IsError {
		t.Fatalf("spawn: %+v", res[0])
	}
	t.Logf("grandchild pid %s", llm.TextOf(res[0].Content))

	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	gone := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(r)
		gone <- err
	}()
	select {
	case err := <-gone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		// A failure guard, not synchronisation: the EOF above is.
		r.Close()
		t.Fatal("a process outlived Close")
	}
}

// TestCallAfterClose checks that calling a closed server's tool is an
// is_error result, not a hang or a panic.
func TestCallAfterClose(t *testing.T) {
	s := connectInMemory(t, testServer("alpha", nil, nil), nil)
	reg := registered(t, s)
	s.Close()
	got := reg.Run(context.Background(), []llm.ToolUse{{ID: "1", Name: "mcp__alpha__echo", Input: json.RawMessage(`{"message":"x"}`)}})
	if !got[0].IsError || !strings.Contains(llm.TextOf(got[0].Content), `mcp server "alpha"`) {
		t.Errorf("call after Close = %+v, want is_error naming the server", got[0])
	}
}
