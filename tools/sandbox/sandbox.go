// Package sandbox confines a command with the kernel's own sandbox, so
// that what a model runs cannot write outside the directories it was given
// or open network connections, whatever it types.
//
// On Linux the confinement is Landlock (ABI 4 or later: file and TCP
// rules), which needs no privilege and no extra package. A Landlock domain
// applies to a thread and everything it starts, and a Go program cannot
// fork without exec, so [Command] re-executes the running binary as a small
// helper: this package's init function recognises the helper's argv[0],
// confines its own thread and then execs the real command, which inherits
// the confinement, as does everything it starts (children of children,
// setsid daemons included). The helper costs one extra exec per command.
//
// What a [Policy] does not confine: reading (the whole file system stays
// readable, so a command can still print what it reads), UDP, Multipath
// TCP, and connections to UNIX sockets named by path. Where Landlock is
// missing, [Check] reports [ErrUnsupported] and no command is confined: on
// other systems, run agentloop in a container or VM to confine it.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
)

// ErrUnsupported is what [Check] and [Command] return, wrapped with the
// reason, where the kernel cannot enforce a [Policy].
var ErrUnsupported = errors.New("sandbox: not supported")

// A Policy says what a confined command may do. The zero value lets it
// read everything and write nowhere but the few device files every
// program expects (/dev/null, /dev/zero, /dev/full, /dev/tty), and denies
// TCP connect and bind.
type Policy struct {
	// Write lists the directories the command may create, change and
	// remove files in, recursively. A directory that does not exist is
	// skipped. Default none.
	Write []string `json:"write,omitempty"`
	// Net lets the command open and accept TCP connections. Default false.
	Net bool `json:"net,omitempty"`
}

// helperArg0 is the argv[0] by which the re-executed binary knows it is
// the helper. It cannot be a path, so no real invocation can match it.
const helperArg0 = "agentloop-sandbox-helper"

// Command returns a command that runs name with args under p: its Path is
// the running binary and its Args tell that binary's init (in this
// package) to confine itself and exec name. The caller sets Dir, Env and
// the rest as for [exec.Command]. name is looked up in PATH now, as
// [exec.Command] would.
//
// It returns an error wrapping [ErrUnsupported] where [Check] does.
func Command(p Policy, name string, args ...string) (*exec.Cmd, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return nil, err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	for i, d := range p.Write {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("sandbox: writable directory %q is not an absolute path", d)
		}
		p.Write[i] = filepath.Clean(d)
	}
	spec, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	// /proc/self/exe is the binary itself even when its file was replaced
	// or removed since it started, which os.Executable's path is not.
	cmd := exec.Command(selfExe)
	cmd.Args = append([]string{helperArg0, string(spec), bin}, args...)
	return cmd, nil
}
