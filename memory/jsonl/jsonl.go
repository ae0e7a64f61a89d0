// Package jsonl saves a [memory.History] as JSON Lines and loads it back:
// one message a line, in the Messages API's wire shape, with its usage, its
// model and, where the API measured it, its exact token count, so that a
// resumed session counts as the one it continues. The CLI's sessions are
// such files.
package jsonl

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
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/go-json-experiment/json/jsontext"
)

// A LineError reports a line (from 1) of a history that [Decode] could not use.
type LineError struct {
	Line int
	Err  error
}

// Error names the line.
func (e *LineError) Error() string { return fmt.Sprintf("jsonl: line %d: %v", e.Line, e.Err) }

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

// Save writes h to path as JSONL, one message per line with its usage. It
// writes a temporary file, syncs it and renames it over path, so that a
// crash leaves the old file or the new one, never a torn one. The file is
// 0600, since transcripts hold whatever the tools read: one that exists
// keeps its mode only as far as that is narrower (0400 stays, 0666 becomes
// 0600). A symbolic link at path is replaced, not followed, and lends the
// file no mode.
func Save(path string, h *memory.History) error { return SaveThrough(path, h, nil) }

// SaveThrough is [Save] with the file's bytes written through the writer
// that filter returns for the file's own, so that a caller sees each of them
// before the file does and passes on what it will; a nil filter passes all.
// An error from the writer's Write or from its Close, which comes after the
// last byte and before the rename, fails the save, leaving the old file as
// it was: a caller that looks for what must not be saved (a secret) vetoes
// the save without a second encoding of the history to look first.
func SaveThrough(path string, h *memory.History, filter func(io.Writer) io.WriteCloser) (err error) {
	mode := os.FileMode(0o600)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		mode &= fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("jsonl: save: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("jsonl: save %s: %w", path, err)
		}
	}()
	w := bufio.NewWriter(f)
	var through io.WriteCloser = nopCloser{w}
	if filter != nil {
		through = filter(w)
	}
	for _, step := range []func() error{func() error { return Encode(through, h) }, through.Close, w.Flush, func() error { return f.Chmod(mode) }, f.Sync, f.Close,
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

// Encode writes h to w as [Save] does, for a program that keeps it
// elsewhere than in a file; [Decode] reads it back, exact token counts
// included.
func Encode(w io.Writer, h *memory.History) error {
	bw := bufio.NewWriter(w)
	s := h.Snapshot()
	for i, e := range s.Entries {
		m := meta{Usage: e.Usage, Tokens: e.Tokens, Summary: e.Summary}
		// An assistant turn names its model, which wrote its thinking, for a resume with another.
		if e.Usage != (llm.Usage{}) || e.Message.Role == llm.Assistant {
			m.Model = e.Model
		}
		if i == 0 {
			m.Prefix = s.Prefix
		}
		if err := writeLine(bw, e.Message, m); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeLine writes the line of m and its meta to w, byte for byte as
// encoding/json's Encoder wrote a [line]: {"role":…,"content":[…], then
// meta's fields}. Each block goes as its MarshalJSON gives it, compacted and
// HTML-escaped on its way to w (see writeCompact), where encoding/json
// compacted it into a buffer of the whole line before writing that: for a 5
// MiB tool input, one more copy of it held at each save.
func writeLine(w *bufio.Writer, m llm.Message, mt meta) error {
	role, err := json.Marshal(m.Role)
	if err != nil {
		return err
	}
	rest, err := json.Marshal(mt) // {} when it has no field to write
	if err != nil {
		return err
	}
	w.WriteString(`{"role":`)
	w.Write(role)
	w.WriteString(`,"content":`)
	if m.Content == nil {
		w.WriteString("null")
	} else {
		w.WriteByte('[')
		for i, b := range m.Content {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeBlock(w, b); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	}
	if len(rest) > len("{}") {
		w.WriteByte(',')
		w.Write(rest[1:])
	} else {
		w.WriteByte('}')
	}
	return w.WriteByte('\n') // a writer's error sticks: the last write returns it
}

// writeBlock writes b to w as its MarshalJSON gives it (see writeCompact),
// but for a tool call's input, which may be megabytes (a file for a tool to
// write): that goes from the history to w, where MarshalJSON would copy it
// whole into the block's JSON first. It must be a JSON object of valid
// UTF-8, as the Assembler makes them; it is written as it is, where
// MarshalJSON would have rewritten the escapes of one the Assembler did not
// check (an input loaded from a file, whose escapes then stay as it had
// them: \u00e9 for é).
func writeBlock(w *bufio.Writer, b llm.Block) error {
	if key, long, rest := longText(b); len(long) > quotePiece {
		return writeLongText(w, key, long, rest)
	}
	t, ok := b.(llm.ToolUse)
	if !ok || len(bytes.TrimSpace(t.Input)) == 0 || !t.ValidInput() || !utf8.Valid(t.Input) {
		raw, err := marshalBlock(b)
		if err != nil {
			return err
		}
		return writeCompact(w, raw, false)
	}
	in := t.Input
	t.Input = json.RawMessage("{}")
	raw, err := marshalBlock(t)
	if err != nil {
		return err
	}
	// The first "input":{} is the key's: a quote in a string is escaped.
	i := bytes.Index(raw, []byte(`"input":{}`)) + len(`"input":`)
	if i < len(`"input":`) {
		return fmt.Errorf("jsonl: a tool call's JSON has no input: %s", raw)
	}
	for _, part := range [][]byte{raw[:i], in, raw[i+len("{}"):]} {
		if err := writeCompact(w, part, false); err != nil {
			return err
		}
	}
	return nil
}

// quotePiece is how much of a long text is quoted at a time.
const quotePiece = 16 << 10

// longText returns the string of b that may be long, a turn's text or
// thinking, with its key, and b without it.
func longText(b llm.Block) (key, long string, rest llm.Block) {
	switch b := b.(type) {
	case llm.Text:
		long, b.Text = b.Text, ""
		return `"text":`, long, b
	case llm.Thinking:
		long, b.Thinking = b.Thinking, ""
		return `"thinking":`, long, b
	}
	return "", "", b
}

// writeLongText writes the block rest with long as the string under key,
// byte for byte as MarshalJSON and writeCompact would have, but quoting
// long a piece at a time: MarshalJSON quotes it into a buffer grown step
// by step and then copies that, twice the text's length allocated in ever
// larger pieces for one 500 KB answer.
func writeLongText(w *bufio.Writer, key, long string, rest llm.Block) error {
	raw, err := marshalBlock(rest)
	if err != nil {
		return err
	}
	// The first key":"" is the field's: a quote in a string is escaped.
	i := bytes.Index(raw, []byte(key+`""`)) + len(key)
	if i < len(key) {
		return fmt.Errorf("jsonl: a %T block's JSON has no %s", rest, key)
	}
	if err := writeCompact(w, raw[:i], false); err != nil {
		return err
	}
	w.WriteByte('"')
	q := make([]byte, 0, quotePiece+quotePiece/4)
	for len(long) > 0 {
		// A piece ends before a byte that can start a character, so that
		// invalid UTF-8 is mended in pieces as it is whole.
		n := min(len(long), quotePiece)
		for n < len(long) && !utf8.RuneStart(long[n]) {
			n++
		}
		q, _ = jsontext.AppendQuote(q[:0], long[:n]) // invalid UTF-8 is U+FFFD, as MarshalJSON has it
		if err := writeCompact(w, q[1:len(q)-1], true); err != nil {
			return err
		}
		long = long[n:]
	}
	w.WriteByte('"')
	return writeCompact(w, raw[i+len(`""`):], false)
}

// marshalBlock returns b's JSON as its MarshalJSON writes it, valid JSON
// (llm's encoder checks what it writes; a tool input it splices in, its
// Assembler checked).
func marshalBlock(b llm.Block) ([]byte, error) {
	m, ok := b.(json.Marshaler)
	if !ok {
		return json.Marshal(b) // a nil block: null
	}
	raw, err := m.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("jsonl: a block of type %T: %w", b, err)
	}
	return raw, nil
}

// writeCompact writes the JSON value src to w as encoding/json compacts the
// output of a MarshalJSON method: without whitespace between tokens, and
// with <, >, &, U+2028 and U+2029 escaped, as its Encoder does by default.
// It writes runs of src itself, never a copy of it. With inString, src is
// the inside of a string.
func writeCompact(w *bufio.Writer, src []byte, inString bool) error {
	var escaped bool
	start := 0
	for i := 0; i < len(src); i++ {
		c, n, repl := src[i], 1, ""
		switch {
		case c == '<' || c == '>' || c == '&':
			repl = htmlEscapes[c]
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			repl, n = lineSeparators[src[i+2]&1], 3
		case escaped:
			escaped = false
			continue
		case inString:
			escaped, inString = c == '\\', c != '"'
			continue
		case c == '"':
			inString = true
			continue
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			continue
		}
		w.Write(src[start:i])
		if _, err := w.WriteString(repl); err != nil {
			return err
		}
		start = i + n
		i += n - 1
	}
	_, err := w.Write(src[start:])
	return err
}

// The escapes of writeCompact.
var (
	htmlEscapes    = [...]string{'&': `\u0026`, '<': `\u003c`, '>': `\u003e`}
	lineSeparators = [2]string{`\u2028`, `\u2029`}
)

// nopCloser is a Writer with a Close that does nothing.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Decode reads a history that [Encode] or [Save] wrote, configured by cfg,
// and restores it with [memory.Restore], which repairs it. A line it cannot
// use (truncated by a crash, corrupted, an assistant message first) is
// skipped and reported as a [*LineError]: Decode returns the history of
// every usable line with those errors joined, keeping exact counts only up
// to the first bad line, since the prefix they measured is not all there.
func Decode(rd io.Reader, cfg memory.Config) (*memory.History, error) {
	var s memory.Snapshot
	var errs []error
	sc := bufio.NewScanner(rd)
	sc.Buffer(nil, math.MaxInt) // a line holds a whole message: tool inputs of megabytes
	for n := 1; sc.Scan(); n++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		l, err := decodeLine(b, len(s.Entries) == 0)
		if err != nil {
			errs = append(errs, &LineError{Line: n, Err: err})
			continue
		}
		if len(s.Entries) == 0 {
			s.Prefix = l.Prefix
		}
		if len(errs) > 0 {
			l.Tokens = 0
		}
		s.Entries = append(s.Entries, memory.Entry{Message: l.Message, Usage: l.Usage, Model: l.Model, Tokens: l.Tokens, Summary: l.Summary})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("jsonl: decode: %w", err))
	}
	return memory.Restore(s, cfg), errors.Join(errs...)
}

// decodeLine reads the line b; first says whether it opens the history.
func decodeLine(b []byte, first bool) (line, error) {
	var l line
	switch err := cmp.Or(json.Unmarshal(b, &l.Message), json.Unmarshal(b, &l.meta)); {
	case err != nil:
		return l, err
	case l.Role != llm.User && l.Role != llm.Assistant:
		return l, fmt.Errorf("role %q is neither user nor assistant", l.Role)
	case first && l.Role != llm.User:
		return l, errors.New("the history must start with a user message")
	}
	return l, nil
}
