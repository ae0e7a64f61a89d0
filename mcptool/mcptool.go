package mcptool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/internal/childenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// Options configures a connection to a server. The zero value, and a nil
// *Options, work.
type Options struct {
	// Name is the server's name: part of its tools' names (see
	// [ToolName]) and the name in error messages. Empty means the name the
	// server reports when it starts, and failing that the command's base
	// name or the URL's host. It is cleaned to the characters a tool name
	// allows, and at most 64 of them.
	Name string
	// Logger receives the lines the server writes to stderr, at Info, and
	// connection trouble, at Warn. Nil discards them.
	Logger *slog.Logger
	// HTTPClient is the client [ConnectURL] uses. Nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// Env adds variables, each "NAME=VALUE", to the environment of a
	// server this package starts. Such a server does not inherit this
	// process's environment, which holds API keys and cloud credentials:
	// it gets only HOME, LOGNAME, PATH, SHELL, TERM and USER (on Windows,
	// the system's equivalents), as the official TypeScript and Python
	// SDKs do, and then these, which win over them. Nil adds nothing.
	Env []string
	// Header is sent with every request to a server [ConnectURL]
	// connects to, such as a fixed Authorization header or an API key.
	// It does not go to the authorization servers OAuth finds.
	Header http.Header
	// OAuth is how [ConnectURL] obtains authorization from a server that
	// requires it. Nil means none: such a server fails to connect, with an
	// error saying it requires authorization.
	OAuth *OAuth
	// HandshakeTimeout bounds the MCP handshake: a server that has not
	// completed it by then fails to connect, with an error naming it, and
	// a command is killed at once rather than asked to stop. The
	// time a user spends authorizing in the browser does not count. Zero
	// means 60s, long enough for npx to fetch a server package.
	HandshakeTimeout time.Duration
	// Roots are the directories the server may work in, offered to it as
	// its roots. Nil offers no roots capability.
	Roots []string
	// Elicit asks the user for what a server requests (elicitation/create)
	// and returns the answer; [Form] reads the form a request asks the user
	// to fill in. Nil answers without a user, as SEP-1034
	// allows: a form whose every required field has a default is accepted
	// with the defaults; anything else is declined.
	Elicit func(ctx context.Context, server string, req *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// Sampling, when set, serves the server's sampling requests. Nil
	// offers no sampling capability.
	Sampling *Sampling
	// Progress receives the progress notifications of tool calls. Nil
	// logs them at Info.
	Progress func(server, tool string, progress, total float64, message string)
	// Propagator puts the trace context of a call's ctx into the call's
	// _meta (traceparent, tracestate, baggage), so that the server's spans
	// join the agent's trace. Nil means otel.GetTextMapPropagator(), which
	// does nothing unless a program sets one.
	Propagator propagation.TextMapPropagator
}

func (o *Options) logger() *slog.Logger {
	if o == nil || o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// A Server is a connected MCP server. Its methods are safe for concurrent
// use. Close it when done: for a command, Close also ends the process.
type Server struct {
	name       string
	session    *mcp.ClientSession
	logger     *slog.Logger
	proc       *process // nil unless the server is a command this package started
	onProgress func(server, tool string, progress, total float64, message string)
	calls      sync.Map // progress token → the remote tool's name, for calls under way
	propagator propagation.TextMapPropagator
	tools      toolState

	closeOnce sync.Once
	closeErr  error
}

// Connect connects to the server at the other end of t and performs the MCP
// handshake. ctx bounds only the handshake, not the connection's life.
// Connect is the general form; most programs use [ConnectCommand] or
// [ConnectURL].
func Connect(ctx context.Context, t mcp.Transport, opts *Options) (*Server, error) {
	name := ""
	if opts != nil {
		name = opts.Name
	}
	s, err := connect(ctx, t, opts, name, nil)
	if err != nil {
		if name == "" {
			name = "mcp"
		}
		return nil, fmt.Errorf("mcptool: connect to server %q: %w", name, err)
	}
	return s, nil
}

// ConnectURL connects to the server at url over the streamable HTTP
// transport. ctx bounds only the handshake.
func ConnectURL(ctx context.Context, rawURL string, opts *Options) (*Server, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcptool: server URL %q is not an http or https URL", rawURL)
	}
	// Errors show the URL without its query and user info, where a key
	// may be.
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	t := &mcp.StreamableClientTransport{Endpoint: rawURL}
	var (
		oauth   *oauthHandler
		refused atomic.Bool
	)
	if opts != nil {
		t.HTTPClient = serverClient(opts.HTTPClient, opts.Header, &refused)
		if opts.OAuth != nil {
			oauth, err = newOAuthHandler(opts.OAuth, rawURL, opts.HTTPClient, opts.logger())
			if err != nil {
				return nil, fmt.Errorf("mcptool: server %s: OAuth: %w", shown, err)
			}
			t.OAuthHandler = oauth
		}
	} else {
		t.HTTPClient = serverClient(nil, nil, &refused)
	}
	s, err := connect(ctx, t, opts, u.Hostname(), oauth)
	if oauth != nil {
		oauth.release()
	}
	if err != nil {
		if oauth == nil && refused.Load() {
			err = fmt.Errorf("%w (the server requires authorization, and none is configured)", err)
		}
		return nil, fmt.Errorf("mcptool: connect to server %s: %w", shown, err)
	}
	return s, nil
}

// ConnectCommand starts cmd as the server and talks to it over its stdin
// and stdout. cmd must not have been started, and its Stdin, Stdout and
// Stderr must be nil: the connection uses them. A nil cmd.Env means the
// environment [Options.Env] describes; a non-nil one is the caller's
// choice and is used as it is, with Options.Env added. The server's stderr
// goes to the logger, and its last lines into the error if it fails to
// start. ctx bounds only the start and the handshake. A server that fails
// the handshake, or does not complete it in time, is killed at once, with
// whatever it started.
func ConnectCommand(ctx context.Context, cmd *exec.Cmd, opts *Options) (*Server, error) {
	// Errors name the server by Options.Name when there is one, else by
	// its command line: the caller who named it may have put a secret in
	// its arguments.
	line := cmd.String()
	if opts != nil && opts.Name != "" {
		line = opts.Name
	}
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, fmt.Errorf("mcptool: server command %q: Stdin, Stdout and Stderr must be nil", line)
	}
	var extra []string
	if opts != nil {
		extra = opts.Env
	}
	if err := childenv.Check(extra); err != nil {
		return nil, fmt.Errorf("mcptool: server command %q: %w", line, err)
	}
	if cmd.Env == nil {
		cmd.Env = childenv.Default()
	}
	cmd.Env = append(cmd.Env, extra...)
	base := filepath.Base(cmd.Path)
	p := startProcess(cmd, opts.logger().With("mcp_command", base))
	t := &startingTransport{CommandTransport: mcp.CommandTransport{Command: cmd}, p: p}
	s, err := connect(ctx, t, opts, base, nil)
	if err != nil {
		// A failed handshake has already closed the connection, which
		// killed the process and waited for it, so its stderr is
		// complete.
		p.cleanup()
		err = fmt.Errorf("mcptool: start server %q: %w", line, err)
		if tail := p.stderr.tail(); tail != "" {
			err = fmt.Errorf("%w; its stderr ends:\n%s", err, tail)
		}
		return nil, err
	}
	t.started.Store(true)
	s.proc = p
	return s, nil
}

// connect performs the handshake over t and names the server: opts.Name,
// else what the server reports, else fallback. A handshake that stalls
// past the timeout fails with ErrHandshakeTimeout; oauth, when not nil,
// pauses the clock while the user authorizes.
func connect(ctx context.Context, t mcp.Transport, opts *Options, fallback string, oauth *oauthHandler) (*Server, error) {
	s := &Server{logger: opts.logger()}
	co := s.clientOptions(opts)
	client := mcp.NewClient(&mcp.Implementation{Name: "agentloop", Version: "v0"}, co)
	s.propagator = otel.GetTextMapPropagator()
	if opts != nil {
		s.onProgress = opts.Progress
		if opts.Propagator != nil {
			s.propagator = opts.Propagator
		}
		if len(opts.Roots) > 0 {
			if err := addRoots(client, opts.Roots); err != nil {
				return nil, err
			}
		}
	}
	timeout := 60 * time.Second
	if opts != nil && opts.HandshakeTimeout > 0 {
		timeout = opts.HandshakeTimeout
	}
	ctx, stall := newStallTimer(ctx, timeout)
	defer stall.stop()
	if oauth != nil {
		oauth.pausing = stall.pause
	}
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		if stall.fired() {
			return nil, fmt.Errorf("%w: no answer to the MCP handshake within %v", ErrHandshakeTimeout, timeout)
		}
		return nil, err
	}
	name := ""
	if opts != nil {
		name = opts.Name
	}
	if name == "" {
		if res := session.InitializeResult(); res != nil && res.ServerInfo != nil {
			name = res.ServerInfo.Name
		}
	}
	if name == "" {
		name = fallback
	}
	s.name = cleanName(name, "mcp")
	s.name = s.name[:min(len(s.name), maxName)]
	s.session = session
	s.logger = s.logger.With("mcp_server", s.name)
	return s, nil
}

// Name returns the server's name, as [Options.Name] documents it. It is a
// valid tool name.
func (s *Server) Name() string { return s.name }

// Instructions returns the server's instructions for the model, if it gave
// any. A program may add them to its system prompt.
func (s *Server) Instructions() string {
	if res := s.session.InitializeResult(); res != nil {
		return res.Instructions
	}
	return ""
}

// Close ends the session. For a server started as a command, it closes the
// server's stdin and waits for it to exit, sending SIGTERM if it has not
// within 5s and SIGKILL 5s after that; then it kills anything the server
// started and left behind, so that no process outlives Close. Close is
// idempotent. For a server that had crashed, it reports the exit status.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		err := s.session.Close()
		s.tools.refreshing.Wait()
		if s.proc != nil {
			s.proc.cleanup()
		}
		if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			s.closeErr = fmt.Errorf("mcptool: close server %q: %w", s.name, err)
		}
	})
	return s.closeErr
}
