//go:build unix

package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockName is the name of the lock file of the --session file at path.
func lockName(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// loadFlags opens a --session file to load: not through a symbolic link
// (checkWritable has refused one, and this closes the race), and without
// waiting for a named pipe's writer.
const loadFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// untrusted says why the session file fi is not to be loaded, or returns
// nil: a transcript is what the model takes as its own past turns, so
// nobody but its owner may have written it, as ssh has it for its keys.
func untrusted(fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("it belongs to another user (uid %d)", st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("others may write it (mode %#o); if it is yours as it is, chmod go-w it", fi.Mode().Perm())
	}
	return nil
}

// lockSession locks the --session file at path against other runs, which
// would each save over the other's turns, and returns how to unlock it.
// The lock is an flock(2) on a file beside it, .NAME.lock (named like a
// save's temporary files, so that no file of the user's is taken for it),
// which, unlike path, no save renames over; the kernel drops it if the
// process dies. Unlocking removes the file while it is still locked, so a
// run that opened it just before checks, once it holds the lock, that the
// path still names what it locked, and tries again if not.
func lockSession(path string) (unlock func(), err error) {
	name := lockName(path)
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a regular file", name)
		}
		if err == nil {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			b := make([]byte, 20)
			n, _ := f.ReadAt(b, 0)
			f.Close()
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil {
				return nil, fmt.Errorf("%w (pid %d)", errSessionBusy, pid)
			}
			return nil, errSessionBusy
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		now, err := os.Lstat(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.Close()
			return nil, err
		}
		if err != nil || !os.SameFile(fi, now) {
			f.Close() // removed by the run that held it: try the new one
			continue
		}
		// The holder's pid, for the error of a run that finds it locked.
		if f.Truncate(0) == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return func() {
			os.Remove(name)
			f.Close()
		}, nil
	}
}
