//go:build unix

package mcptool

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the server in a process group of its own. Then a
// terminal's Ctrl-C reaches only this program, which shuts the server down
// in order, and whatever the server starts (npx starts node, for one) can
// be killed with it.
func ownProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if !cmd.SysProcAttr.Setsid { // a new session is a new group already
		cmd.SysProcAttr.Setpgid = true
	}
}

// killProcessGroup kills what is left of the group led by pid. The leader
// has exited by now; anything still running would be an orphan.
func killProcessGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
