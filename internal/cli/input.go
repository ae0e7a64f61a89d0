package cli

import (
	"context"
	"io"
	"io/fs"
	"os"
	"strings"
)

// piped reports whether stdin brings input of its own: a pipe or a file,
// not a terminal, nor /dev/null or another device, from which a read could
// wait forever.
func (c *cli) piped(stdin io.Reader) bool {
	if c.isTerminal(stdin) {
		return false
	}
	f, ok := stdin.(*os.File)
	if !ok {
		return true
	}
	fi, err := f.Stat()
	return err == nil && (fi.Mode().IsRegular() || fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0)
}

// attachStdin returns prompt with the text piped on stdin attached as a
// document after it, in the tags the model's documentation recommends for
// long inputs. Blank input attaches nothing.
func attachStdin(prompt, input string) string {
	if strings.TrimSpace(input) == "" {
		return prompt
	}
	return prompt + "\n\n<document source=\"stdin\">\n" + strings.TrimRight(input, "\n") + "\n</document>"
}

// watchInterrupts returns a context cancelled by the first interrupt, and
// a function that stops watching and reports whether one came. After it,
// the interrupts are free for the turn or the REPL to read.
func (c *cli) watchInterrupts(ctx context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	stop, got := make(chan struct{}), make(chan bool, 1)
	go func() {
		select {
		case <-c.interrupts:
			cancel()
			got <- true
		case <-stop:
			got <- false
		}
	}()
	return ctx, func() bool {
		close(stop)
		// The handshakes this context bounded are over; cancelling it
		// now releases it without touching the connections.
		defer cancel()
		return <-got
	}
}

// readAll is io.ReadAll that gives up when ctx is done. The read itself
// cannot be stopped; its goroutine ends with the process.
func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	c := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		c <- result{b, err}
	}()
	select {
	case res := <-c:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
