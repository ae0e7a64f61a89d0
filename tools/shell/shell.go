// Package shell gives the model a bash tool: it runs a command with
// bash -c in the working directory and returns its combined output and exit
// status.
//
//	reg.Register(shell.New(shell.Config{Dir: dir, Env: os.Environ(), Secrets: []string{"AWS_*"}}))
//
// The command runs in its own process group. When it times out, or the
// call is cancelled, the whole group is killed, so that nothing it started
// (a server, a sleep in a pipeline) is left running; when it ends, the
// group is killed too, so that a backgrounded process does not outlive it.
// A process that leaves the group on purpose (setsid, a detaching daemon)
// is out of reach; a subreaper or a cgroup would be needed to follow it.
//
// Without [Config.Sandbox] the command is not confined: it can read and
// write anything the user can. With it, the kernel confines the command
// and everything it starts (package sandbox). Either way it gets the
// environment without ANTHROPIC_* and without the variables marked secret,
// so that a prompt-injected command cannot read the API key; guard the tool
// with a permission check (package permission) and say so to the user.
package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/sandbox"
)

// Name is the tool's name, as the model calls it.
const Name = "bash"

// Defaults for the zero values of [Config].
const (
	DefaultTimeout        = 2 * time.Minute
	DefaultMaxTimeout     = 10 * time.Minute
	DefaultMaxOutputBytes = 30_000
)

// Config configures the bash tool. The zero value works.
type Config struct {
	// Dir is where commands run. Default the process's working directory.
	Dir string
	// Env is the environment commands start from, as os.Environ returns
	// it. Default nil: os.Environ(). ANTHROPIC_* variables and Secrets are
	// always removed from it.
	Env []string
	// Secrets names more variables to remove, each a name or a path.Match
	// pattern such as AWS_*. Default none.
	Secrets []string
	// DefaultTimeout bounds a command whose call gives no timeout.
	// Default [DefaultTimeout].
	DefaultTimeout time.Duration
	// MaxTimeout is the longest timeout a call may ask for. Default
	// [DefaultMaxTimeout].
	MaxTimeout time.Duration
	// MaxOutputBytes caps the output returned; the middle of a longer one
	// is cut, keeping its head and tail. Default [DefaultMaxOutputBytes].
	MaxOutputBytes int
	// Sandbox, if set, confines every command to the policy, by the
	// kernel: see package sandbox. Where the kernel cannot, each call
	// fails with an is_error result; check with sandbox.Check first.
	// Default nil: commands run unconfined, for library users who confine
	// the whole process some other way (a container, a VM).
	Sandbox *sandbox.Policy
}

// Input is the bash tool's input.
type Input struct {
	Command string `json:"command" jsonschema:"the command to run with bash -c"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"seconds to wait before killing the command (default 120, at most 600)"`
}

const description = `Run a shell command with bash -c in the working directory and return its combined stdout and stderr, followed by its exit status.
The command runs without a terminal and with stdin empty, so use non-interactive flags (git --no-pager, apt-get -y). Each call starts a new shell: cd and variables do not carry over to the next call; chain commands with && instead.
The default timeout is 120 seconds (at most 600, set with timeout); on timeout the command and every process it started are killed. Processes left in the background are killed when the command ends, unless they left the process group (setsid, nohup with a new session, daemons).
Long output is cut in the middle, keeping its start and end; filter it (grep, head, tail) when you can.
Prefer read_file, edit_file, glob and grep for files.`

const unconfined = `
The command is NOT confined to the working directory: it runs with the user's permissions, so do not touch files outside the project.`

const confined = `
The command runs in a sandbox: it can read any file but write only in these directories: %s. %s A write elsewhere fails with "Permission denied"; do not try to work around it.`

// New returns the bash tool.
func New(cfg Config) *tool.Tool {
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	env := Environ(cfg.Env, cfg.Secrets)
	desc := description + unconfined
	if p := cfg.Sandbox; p != nil {
		net := "It cannot open network connections."
		if p.Net {
			net = "It may use the network."
		}
		desc = description + fmt.Sprintf(confined, strings.Join(p.Write, ", "), net)
	}
	t, err := tool.New(Name, desc, func(ctx context.Context, in Input) (any, error) {
		return run(ctx, cfg, env, in)
	})
	if err != nil {
		panic("shell: " + err.Error()) // Input is fixed: this cannot happen
	}
	// The tool keeps its own timeout, which the call may raise; the
	// registry's would abandon the command instead of killing it.
	t.Timeout = -1
	// The model expects the commands of one turn to run in the order it
	// wrote them, as in a terminal: the tool is alone in its queue.
	t.Queue = "tools/shell"
	return t
}

// Environ returns env without ANTHROPIC_* and the variables secrets name
// (names or path.Match patterns).
//
// The result is never nil, even when nothing is left: exec.Cmd takes a nil
// Env to mean "inherit the whole environment", the key included.
func Environ(env, secrets []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !secret(name, secrets) {
			out = append(out, kv)
		}
	}
	return out
}

func secret(name string, secrets []string) bool {
	if strings.HasPrefix(name, "ANTHROPIC_") {
		return true
	}
	for _, s := range secrets {
		if ok, _ := path.Match(s, name); ok || s == name {
			return true
		}
	}
	return false
}

func run(ctx context.Context, cfg Config, env []string, in Input) (any, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, errors.New("the command is empty")
	}
	timeout := cfg.DefaultTimeout
	switch {
	case in.Timeout < 0:
		return nil, errors.New("timeout must be positive")
	case in.Timeout > 0:
		timeout = time.Duration(in.Timeout) * time.Second
		if timeout > cfg.MaxTimeout {
			return nil, fmt.Errorf("timeout %d is over the maximum of %d seconds", in.Timeout, int(cfg.MaxTimeout/time.Second))
		}
	}
	out := newHeadTail(cfg.MaxOutputBytes)
	cmd := exec.Command("bash", "-c", in.Command)
	if cfg.Sandbox != nil {
		var err error
		if cmd, err = sandbox.Command(*cfg.Sandbox, "bash", "-c", in.Command); err != nil {
			return nil, err
		}
	}
	cmd.Dir, cmd.Env = cfg.Dir, env
	status, err := runGroup(ctx, cmd, out, timeout)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(out.String())
	if out.Len() == 0 {
		b.WriteString("(no output)\n")
	} else if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	switch {
	case status.timedOut:
		fmt.Fprintf(&b, "[killed: the command timed out after %v, and every process it started was killed]", timeout)
	case status.signal != "":
		fmt.Fprintf(&b, "[killed by signal %s]", status.signal)
	default:
		fmt.Fprintf(&b, "[exit status %d]", status.code)
	}
	return llm.ToolResult{Content: textBlock(b.String()), IsError: status.timedOut || status.signal != "" || status.code != 0}, nil
}

// status is how a command ended.
type status struct {
	code     int
	signal   string
	timedOut bool
}
