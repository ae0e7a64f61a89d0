//go:build unix

package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// drainGrace bounds the wait for the output of a process that left the
// command's process group (with setsid) and still holds its pipe.
const drainGrace = 2 * time.Second

// runGroup runs cmd in a process group of its own, its output going to
// out, and kills the whole group when the command ends, times out or ctx
// is done. It returns once the output is complete.
func runGroup(ctx context.Context, cmd *exec.Cmd, out io.Writer, timeout time.Duration) (status, error) {
	// A pipe of our own, not exec's: Wait then returns when bash exits,
	// even if a background process still holds the pipe, and the group can
	// be killed at that moment.
	pr, pw, err := os.Pipe()
	if err != nil {
		return status{}, err
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return status{}, fmt.Errorf("starting bash: %w", err)
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(out, pr)
		close(copied)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The group's id is bash's pid, since Setpgid made it the leader.
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var st status
	var werr error
	select {
	case werr = <-exited:
	case <-timer.C:
		st.timedOut = true
		kill()
		werr = <-exited
	case <-ctx.Done():
		kill()
		werr = <-exited
	}
	kill() // whatever it left running in the background
	grace := time.NewTimer(drainGrace)
	defer grace.Stop()
	select {
	case <-copied:
	case <-grace.C:
		pr.Close()
		<-copied
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			st.signal = ws.Signal().String()
		} else {
			st.code = ee.ExitCode()
		}
	default:
		return st, werr
	}
	if st.timedOut {
		st.signal = ""
	}
	return st, nil
}
