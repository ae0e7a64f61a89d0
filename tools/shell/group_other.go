//go:build !unix

package shell

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"
)

// runGroup runs cmd, its output going to out, and kills it when it times
// out or ctx is done. Without Unix process groups, only bash itself is
// killed.
func runGroup(ctx context.Context, cmd *exec.Cmd, out io.Writer, timeout time.Duration) (status, error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := exec.CommandContext(tctx, cmd.Path, cmd.Args[1:]...)
	c.Dir, c.Env, c.Stdout, c.Stderr = cmd.Dir, cmd.Env, out, out
	c.WaitDelay = drainGrace
	err := c.Run()
	if err := ctx.Err(); err != nil {
		return status{}, err
	}
	var st status
	var ee *exec.ExitError
	switch {
	case tctx.Err() != nil:
		st.timedOut = true
	case errors.As(err, &ee):
		st.code = ee.ExitCode()
	case err != nil:
		return st, err
	}
	return st, nil
}

const drainGrace = 2 * time.Second
