package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/memory"
)

// describeLoadError says what is wrong with a session file: the first bad
// line and how many more there are, rather than every one of them.
func describeLoadError(err error) string {
	var le *memory.LineError
	if !errors.As(err, &le) {
		return err.Error()
	}
	msg := fmt.Sprintf("line %d is not a valid message (%v)", le.Line, le.Err)
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 1 {
		more := len(j.Unwrap()) - 1
		if more == 1 {
			msg += ", nor is 1 more line"
		} else {
			msg += fmt.Sprintf(", nor are %d more lines", more)
		}
	}
	return msg
}

// checkWritable finds out, before any request is paid for, whether the
// --session file can be saved. memory's Save writes a temporary file beside
// it and renames it over the old one, so the directory must take a new
// file; and an existing file must be writable, since a read-only transcript
// is its owner's way of saying it is not to change.
func checkWritable(path string) error {
	if path == "" {
		return nil
	}
	fail := func(err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, below
		}
		return usageError("--session %s cannot be saved: %v; pass a path in a writable directory", path, err)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fail(errors.New("it is a directory"))
	case err == nil && !fi.Mode().IsRegular():
		// A pipe or a device: opening it could block, and a rename would
		// replace it with a file.
		return fail(errors.New("it is not a regular file"))
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fail(err)
		}
		f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return fail(err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".probe*")
	if err != nil {
		return fail(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// save writes the --session file, if there is one.
func (s *session) save() error {
	if s.o.session == "" {
		return nil
	}
	if err := s.cfg.History.Save(s.o.session); err != nil {
		return fmt.Errorf("saving session: %w", err)
	}
	return nil
}

// clear starts a new conversation with the same settings. With --session,
// the old transcript is renamed aside, never emptied, and the new one takes
// its path from the next turn on.
func (s *session) clear() error {
	aside, err := s.setAside()
	if err != nil {
		return fmt.Errorf("/clear: the conversation is kept, since its transcript could not be moved aside: %w", err)
	}
	cfg := s.cfg
	cfg.History = memory.New(s.memCfg)
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	s.agent, s.cfg = a, cfg
	if aside != "" {
		fmt.Fprintf(s.stderr, "(new conversation: %s starts afresh; the old transcript is kept as %s)\n", s.o.session, aside)
	} else {
		fmt.Fprintln(s.stderr, "(conversation cleared)")
	}
	return nil
}

// setAside renames the --session file to the first free name beside it,
// chat.jsonl to chat.1.jsonl, then chat.2.jsonl, and returns that name. It
// returns "" when there is no file to keep.
func (s *session) setAside() (string, error) {
	path := s.o.session
	if path == "" {
		return "", nil
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	ext := filepath.Ext(path)
	stem := strings.TrimSuffix(path, ext)
	for n := 1; ; n++ {
		aside := stem + "." + strconv.Itoa(n) + ext
		switch _, err := os.Lstat(aside); {
		case errors.Is(err, fs.ErrNotExist):
			return aside, os.Rename(path, aside)
		case err != nil:
			return "", err
		}
	}
}
