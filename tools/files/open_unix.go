//go:build unix

package files

import (
	"os"
	"syscall"
)

// openFlags opens a file to read without waiting for a named pipe's writer
// (O_NONBLOCK), nor making a terminal the process's own (O_NOCTTY).
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
