package memory

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// A LineError reports a line (from 1) of a history that [Decode] could not use.
type LineError struct {
	Line int
	Err  error
}

// Error names the line.
func (e *LineError) Error() string { return fmt.Sprintf("memory: line %d: %v", e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// A line is one line of a history file: a message, in its wire shape, and its meta.
type line struct {
	llm.Message
	meta
}

// meta is what we know of a line's message. It is decoded apart from the
// message, whose own UnmarshalJSON would take the whole line.
type meta struct {
	Usage   llm.Usage `json:"usage,omitzero"`    // of the call that produced the message
	Model   string    `json:"model,omitempty"`   // that Usage is priced by
	Tokens  int       `json:"tokens,omitempty"`  // the exact count through this message, if known
	Summary bool      `json:"summary,omitempty"` // a compaction wrote the message
	// Prefix, on the first line, hashes the system prompt and tools last
	// sent, so that a resume with others drops the thinking they invalidate.
	Prefix string `json:"prefix,omitempty"`
}

// Save writes the history to path as JSONL, one message per line with its
// usage. It writes a temporary file, syncs it and renames it over path, so
// that a crash leaves the old file or the new one, never a torn one. The
// file is 0600, since transcripts hold whatever the tools read: one that
// exists keeps its mode only as far as that is narrower (0400 stays, 0666
// becomes 0600). A symbolic link at path is replaced, not followed, and
// lends the file no mode.
func (h *History) Save(path string) (err error) {
	mode := os.FileMode(0o600)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		mode &= fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("memory: save: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("memory: save %s: %w", path, err)
		}
	}()
	w := bufio.NewWriter(f)
	for _, step := range []func() error{func() error { return h.Encode(w) }, w.Flush, func() error { return f.Chmod(mode) }, f.Sync, f.Close,
		func() error { return os.Rename(f.Name(), path) }} {
		if err := step(); err != nil {
			return err
		}
	}
	// Sync the directory so the rename itself survives a crash. Not every
	// file system supports it; the data is safe either way.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Encode writes the history to w as [History.Save] does, for a program
// that keeps it elsewhere than in a file; [Decode] reads it back, exact
// token counts included.
func (h *History) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	for i, e := range h.entries {
		l := line{e.msg, meta{Usage: e.usage, Tokens: e.exact, Summary: e.summary}}
		// An assistant turn names its model, which wrote its thinking, for a resume with another.
		if e.usage != (llm.Usage{}) || e.msg.Role == llm.Assistant {
			l.Model = e.model
		}
		if i == 0 {
			l.Prefix = h.prefixKey
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

// Decode reads a history that [History.Encode] or [History.Save] wrote,
// configured by cfg, and repairs it (see [History.Repair]). A line it
// cannot use (truncated by a crash, corrupted, an assistant message first)
// is skipped and reported as a [*LineError]: Decode returns the history of
// every usable line with those errors joined, keeping exact counts only up
// to the first bad line.
func Decode(rd io.Reader, cfg Config) (*History, error) {
	h := New(cfg)
	var errs []error
	sc := bufio.NewScanner(rd)
	sc.Buffer(nil, math.MaxInt) // a line holds a whole message: tool inputs of megabytes
	for n := 1; sc.Scan(); n++ {
		if b := sc.Bytes(); len(bytes.TrimSpace(b)) > 0 {
			if err := h.decodeLine(b, len(errs) > 0); err != nil {
				errs = append(errs, &LineError{Line: n, Err: err})
			}
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("memory: decode: %w", err))
	}
	h.Repair()
	// Resumed with another model: the API drops the thinking it cannot read,
	// and the gap invalidates all the thinking after (see apirules).
	if i := slices.IndexFunc(h.entries, func(e entry) bool {
		return e.model != "" && !apirules.Reads(h.cfg.Model, e.model) && hasThinking(e)
	}); i >= 0 && !h.model.UnboundThinking {
		h.rewrote(i)
	}
	return h, errors.Join(errs...)
}

// decodeLine appends the message line b holds; after a bad line, without
// its exact count, since the prefix it measured is not all here.
func (h *History) decodeLine(b []byte, afterBad bool) error {
	var l line
	switch err := cmp.Or(json.Unmarshal(b, &l.Message), json.Unmarshal(b, &l.meta)); {
	case err != nil:
		return err
	case l.Role != llm.User && l.Role != llm.Assistant:
		return fmt.Errorf("role %q is neither user nor assistant", l.Role)
	case len(h.entries) == 0 && l.Role != llm.User:
		return errors.New("the history must start with a user message")
	case len(h.entries) == 0:
		h.prefixKey = l.Prefix
	}
	if afterBad {
		l.Tokens = 0
	}
	h.push(entry{msg: l.Message, usage: l.Usage, model: l.Model, exact: max(l.Tokens, 0), summary: l.Summary})
	return nil
}
