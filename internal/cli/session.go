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
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		// A save renames a new file over the path: the link would go, and
		// what it leads to stay as it was.
		target, _ := os.Readlink(path)
		return usageError("--session %s is a symbolic link (to %s), which a save would replace with a file; pass the file it leads to", path, target)
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

// errSessionBusy is what lockSession returns when another run holds the
// lock.
var errSessionBusy = errors.New("it is in use by another agentloop")

// loadHistory claims the --session file, if there is one, and loads it if
// it exists, else starts afresh. It checks that the file can be saved, and
// locks it against other runs until the session closes; all this before a
// request is paid for, not at the first save.
func (s *session) loadHistory() (*memory.History, error) {
	path := s.o.session
	if path == "" {
		return memory.New(s.memCfg), nil
	}
	if err := checkWritable(path); err != nil {
		return nil, err
	}
	unlock, err := lockSession(path)
	switch {
	case errors.Is(err, errSessionBusy):
		return nil, usageError("--session %s cannot be used: %v; wait for that run to end, or pass another --session", path, err)
	case err != nil:
		return nil, usageError("--session %s cannot be locked against other runs: %v", path, err)
	}
	s.unlock = unlock
	f, err := os.OpenFile(path, loadFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return memory.New(s.memCfg), nil
	}
	var h *memory.History
	if err == nil {
		defer f.Close()
		h, err = s.load(f)
	}
	if err != nil {
		// Starting afresh would overwrite the file at the first save, so a
		// damaged or doubtful transcript stops the command instead.
		return nil, usageError("--session %s cannot be resumed: %s; move it aside, or pass another --session, to start afresh",
			path, describeLoadError(err))
	}
	return h, nil
}

// load reads the opened --session file f, if it is a regular file that
// only its owner may have written.
func (s *session) load(f *os.File) (*memory.History, error) {
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errors.New("it is not a regular file")
	}
	if err := untrusted(fi); err != nil {
		return nil, err
	}
	return memory.Decode(f, s.memCfg)
}

// save writes the --session file, if there is one.
func (s *session) save() error {
	if s.o.session == "" {
		return nil
	}
	if err := s.cfg.History.Save(s.o.session); err != nil {
		return fmt.Errorf("saving session: %w", err)
	}
	if err := s.transcripts.save(s.o.session); err != nil {
		return fmt.Errorf("saving a subagent's transcript: %w", err)
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
