//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// hookShell runs a hook's command line.
var hookShell = []string{"/bin/sh", "-c"}

// killGroupOnCancel starts cmd in a process group of its own, which its
// context's end kills whole: a hook's children too.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
