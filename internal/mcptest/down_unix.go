//go:build unix

package mcptest

import (
	"strconv"
	"syscall"
	"testing"
)

// DownURL returns the URL of a loopback port that is bound and never
// listened on, until tb's test ends: a connection to it is refused, as to
// a server that is not running, and no other test can start a server on
// it meanwhile, as one could on the port of a server that was closed.
func DownURL(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	return "http://127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
}
