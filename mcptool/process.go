package mcptool

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A process is a server command this package started: its stderr, and
// what is needed to leave no process behind.
type process struct {
	cmd    *exec.Cmd
	stderr *stderrLog
}

// startProcess prepares cmd to run as a server. The transport starts it.
func startProcess(cmd *exec.Cmd, logger *slog.Logger) *process {
	p := &process{cmd: cmd, stderr: &stderrLog{logger: logger}}
	cmd.Stderr = p.stderr
	ownProcessGroup(cmd)
	return p
}

// cleanup kills whatever the server left running. It is called after the
// transport has waited for the server itself.
func (p *process) cleanup() {
	if p.cmd.Process != nil {
		killProcessGroup(p.cmd.Process.Pid)
	}
}

// startingTransport is the command transport, except that a connection
// closed before the handshake completed (it timed out, was cancelled or
// failed) kills the server and its process group at once. The transport's
// own Close would close the server's stdin and wait 5s for it to exit,
// and 5s more after SIGTERM; a server that did not start has nothing to
// finish, and HandshakeTimeout must bound the whole start.
type startingTransport struct {
	mcp.CommandTransport
	p       *process
	started atomic.Bool // the handshake completed: Close is the polite one
}

func (t *startingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.CommandTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return startingConn{c, t}, nil
}

type startingConn struct {
	mcp.Connection
	t *startingTransport
}

func (c startingConn) Close() error {
	if !c.t.started.Load() {
		c.t.p.cmd.Process.Kill()
		c.t.p.cleanup()
	}
	return c.Connection.Close()
}

// stderrLog logs a server's stderr line by line and keeps its last lines
// for error messages: a server that fails to start usually says why there.
type stderrLog struct {
	logger *slog.Logger

	mu      sync.Mutex
	partial []byte   // an unfinished line
	last    []string // the last tailLines lines, oldest first
}

const (
	tailLines   = 10
	maxLineSize = 1000 // longer lines are cut, so a chatty server costs bounded memory
)

// Write implements io.Writer.
func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = append(l.partial, p[:min(len(p), maxLineSize-len(l.partial))]...)
			break
		}
		l.partial = append(l.partial, p[:min(i, maxLineSize-len(l.partial))]...)
		l.line(string(bytes.TrimRight(l.partial, "\r")))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (l *stderrLog) line(s string) {
	l.logger.Info("mcp server stderr", "line", s)
	if len(l.last) == tailLines {
		l.last = append(l.last[:0], l.last[1:]...)
	}
	l.last = append(l.last, s)
}

// tail returns the last lines written, an unfinished one included.
func (l *stderrLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.last
	if len(l.partial) > 0 {
		lines = append(lines[:len(lines):len(lines)], string(l.partial))
	}
	return strings.Join(lines, "\n")
}
