package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
)

// describeLoadError says what is wrong with a session file: the first bad
// line and how many more there are, rather than every one of them.
func describeLoadError(err error) string {
	var le *jsonl.LineError
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
// --session file can be saved. jsonl.Save writes a temporary file beside
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

// loadHistory claims the session's file, if there is one, and loads it if
// it exists, else starts afresh. It checks that the file can be saved, and
// locks it against other runs until the session closes; all this before a
// request is paid for, not at the first save. Then, the session being
// safe from it, it prunes the old sessions.
func (s *session) loadHistory() (*memory.History, error) {
	path := s.path
	if path == "" {
		return memory.New(s.memCfg), nil
	}
	what, other := "--session "+path, "pass another --session"
	if s.id != "" {
		what, other = "session "+s.id, "start a new one, without --continue or --resume"
	}
	fresh := s.id != "" && !s.o.sessions.resuming() // a new session: no file yet
	if s.persist && s.id == "" {
		if err := checkWritable(path); err != nil {
			return nil, err
		}
	}
	if s.persist {
		// The directory is made just before the lock goes in it, since
		// another run's pruning removes an empty one.
		unlock, err := lockSession(path)
		if s.id != "" && errors.Is(err, fs.ErrNotExist) {
			if err = os.MkdirAll(s.dir, 0o700); err == nil {
				unlock, err = lockSession(path)
			}
		}
		switch {
		case err != nil && fresh:
			// The user did not ask for it: a note, not a failure.
			fmt.Fprintf(s.stderr, "agentloop: this conversation cannot be saved (%v); --no-session-persistence turns saving off\n", err)
			s.persist = false
		case errors.Is(err, errSessionBusy):
			return nil, usageError("%s cannot be used: %v; wait for that run to end, or %s", what, err, other)
		case err != nil:
			return nil, usageError("%s cannot be locked against other runs: %v", what, err)
		default:
			s.unlock = unlock
			if s.id != "" {
				pruneSessions(s.o.sessions.root, time.Now())
			}
		}
	}
	if fresh {
		return memory.New(s.memCfg), nil
	}
	f, err := os.OpenFile(path, loadFlags, 0)
	if errors.Is(err, fs.ErrNotExist) && s.id == "" {
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
		if s.id != "" {
			return nil, usageError("%s cannot be resumed: %s; %s", what, describeLoadError(err), other)
		}
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
	return jsonl.Decode(f, s.memCfg)
}

// save writes the session's file, if it is saved, and the transcripts of
// the run's subagents beside it (see write). A session agentloop keeps on
// its own that cannot be saved is a note, not a failure: the user did not
// ask for it.
func (s *session) save() error {
	if s.path == "" || !s.persist {
		return nil
	}
	err := s.write(s.path, s.cfg.History)
	if err == nil {
		err = s.transcripts.save(s.path, s.write)
	}
	switch {
	case err == nil:
		return nil
	case s.id != "":
		s.render.note("session %s was not saved: %v", s.id, err)
		return nil
	}
	return fmt.Errorf("saving session: %w", err)
}

// write saves h at path without the secrets the run knows of (the key, the
// token, the values the flags mark secret): the model may have read one in
// a tool's result, or been told it, and a transcript outlives the run. A
// secretScan looks through the file's bytes on their way to it, so that a
// history that holds none, as it mostly does, is encoded once; one that
// holds one fails that save before a byte of the secret reaches the file,
// and is saved scrubbed instead, through a scan again: a secret the scrub
// cannot reach (one that is a JSON number) fails the save, and the file
// keeps what it held.
func (s *session) write(path string, h *memory.History) error {
	scan := newSecretScan(s.secrets)
	err := jsonl.SaveThrough(path, h, scan.through)
	if !errors.Is(err, errSecretSeen) {
		return err
	}
	if h, err = scrubbed(h, s.memCfg, scan.secrets); err != nil {
		return err
	}
	err = jsonl.SaveThrough(path, h, scan.through)
	if errors.Is(err, errSecretSeen) {
		return errors.New("the transcript is not saved: it holds a secret that scrubbing its text did not remove")
	}
	return err
}

// clear starts a new conversation with the same settings. In this
// directory's sessions it is a new session, the old one staying saved as
// it is; with --session, the old transcript is renamed aside, never
// emptied, and the new one takes its path from the next turn on.
func (s *session) clear() error {
	if s.dir != "" {
		old := s.id
		if err := s.openSession(""); err != nil {
			return fmt.Errorf("/clear: the conversation is kept: %w", err)
		}
		if _, err := os.Stat(filepath.Join(s.dir, old+".jsonl")); err == nil {
			fmt.Fprintf(s.stderr, "(new conversation; the old one is saved: agentloop -r %s resumes it)\n", old)
		} else {
			fmt.Fprintln(s.stderr, "(conversation cleared)")
		}
		return nil
	}
	aside, err := s.setAside()
	if err != nil {
		return fmt.Errorf("/clear: the conversation is kept, since its transcript could not be moved aside: %w", err)
	}
	cfg := s.cfg
	cfg.History = memory.New(s.memCfg)
	a, err := s.newAgent(cfg)
	if err != nil {
		return err
	}
	s.agent, s.cfg = a, cfg
	if aside != "" {
		fmt.Fprintf(s.stderr, "(new conversation: %s starts afresh; the old transcript is kept as %s)\n", s.path, aside)
	} else {
		fmt.Fprintln(s.stderr, "(conversation cleared)")
	}
	return nil
}

// setAside renames the --session file to the first free name beside it,
// chat.jsonl to chat.1.jsonl, then chat.2.jsonl, and returns that name. It
// returns "" when there is no file to keep.
func (s *session) setAside() (string, error) {
	path := s.path
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

// scrubbed returns h with each of secrets replaced wherever it stands in a
// string of the transcript, inside a word too (see redactor). A
// thinking block that held one is left out, since its signature would not
// match the changed text. It is for the rare history a secretScan found a
// secret in: it holds the whole transcript, encoded and decoded.
func scrubbed(h *memory.History, cfg memory.Config, secrets []string) (*memory.History, error) {
	var b bytes.Buffer
	if err := jsonl.Encode(&b, h); err != nil {
		return nil, err
	}
	r := redactor{secrets: secrets, inWords: true}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	for line := range bytes.Lines(b.Bytes()) {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if err := enc.Encode(scrubValue(v, r)); err != nil {
			return nil, err
		}
	}
	return jsonl.Decode(&out, cfg)
}

// scrubValue returns v, a decoded JSON value, with its strings scrubbed,
// and its objects' keys: a tool's input may hold a secret as either.
func scrubValue(v any, r redactor) any {
	switch v := v.(type) {
	case string:
		return r.scrub(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[r.scrub(k)] = scrubValue(x, r)
		}
		return out
	case []any:
		v = slices.DeleteFunc(v, func(x any) bool {
			blk, ok := x.(map[string]any)
			t, _ := blk["thinking"].(string)
			return ok && blk["type"] == "thinking" && r.scrub(t) != t
		})
		for i, x := range v {
			v[i] = scrubValue(x, r)
		}
		return v
	}
	return v
}
