package cli

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// errSecretSeen is how a secretScan fails a save whose bytes hold a
// secret.
var errSecretSeen = errors.New("the transcript holds a secret")

// A secretScan passes what is written to it on to w, unless that holds one
// of its secrets, however a JSON string spells it: then it fails with
// errSecretSeen, before any byte of the secret has gone on. A tool call's
// input is saved as the model streamed it, escapes and all, so a secret
// may be spelled there in any of countless ways (sk-\u0061nt, tok\/en, a
// surrogate pair); the scan looks for each secret as itself in the text
// the bytes stand for, every escape decoded. Outside a string JSON has no
// backslash, so decoding every escape of the file decodes its strings'.
//
// A secret may be cut across two writes, as a file's buffer cuts what goes
// through it: the scan holds back the bytes a secret ending in the next
// write could start in, those that gave the last decoded bytes, as many as
// the longest secret less one, and an escape not yet ended.
type secretScan struct {
	secrets []string // those long enough to be taken for secrets
	forms   [][]byte // the same, as bytes
	keep    int      // the longest secret's length less one
	w       io.Writer
	in, out int64   // how many bytes came, and went on
	held    []byte  // what came after the out bytes, not passed on yet
	dec     []byte  // what the last bytes stand for: keep bytes before a write's, and its
	from    []int64 // where each byte of dec came: its own place, or its escape's
	esc     [12]byte
	nesc    int   // esc[:nesc] is an escape not yet ended: \u00, or \ud83d\u for a surrogate pair
	escAt   int64 // where it came
	err     error
}

// newSecretScan returns a scan for those of secrets that are long enough
// to be secrets: a key as short as a word ("test", for a local server) is
// none, and scrubbing it would garble the conversation.
func newSecretScan(secrets []string) *secretScan {
	s := &secretScan{}
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			s.secrets = append(s.secrets, sec)
			s.forms = append(s.forms, []byte(sec))
			s.keep = max(s.keep, len(sec)-1)
		}
	}
	return s
}

// through returns s, passing on to w, as jsonl.SaveThrough takes it.
func (s *secretScan) through(w io.Writer) io.WriteCloser {
	s.w, s.err = w, nil
	s.in, s.out, s.nesc = 0, 0, 0
	s.held, s.dec, s.from = s.held[:0], s.dec[:0], s.from[:0]
	return s
}

// scanChunk is how much of a write a secretScan decodes at a time, so that
// a tool input of megabytes, written whole, is not decoded whole.
const scanChunk = 4096

func (s *secretScan) Write(p []byte) (int, error) {
	if len(s.forms) == 0 {
		s.pass(p) // nothing to look for
	}
	for rest := p; len(rest) > 0 && len(s.forms) > 0 && s.err == nil; {
		c := rest[:min(len(rest), scanChunk)]
		rest = rest[len(c):]
		s.scan(c)
	}
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
}

// scan decodes c, the next bytes, looks for the secrets in what they and
// the bytes held back stand for, and passes on what no secret can start
// in.
func (s *secretScan) scan(c []byte) {
	for i, b := range c {
		if s.nesc == 0 && b != '\\' { // as feed does, without a call a byte
			s.dec = append(s.dec, b)
			s.from = append(s.from, s.in+int64(i))
		} else {
			s.unescape(b, s.in+int64(i))
		}
	}
	s.in += int64(len(c))
	for _, f := range s.forms {
		if bytes.Contains(s.dec, f) {
			s.err = errSecretSeen
			return
		}
	}
	cut := max(len(s.dec)-s.keep, 0)
	s.dec = append(s.dec[:0], s.dec[cut:]...)
	s.from = append(s.from[:0], s.from[cut:]...)
	safe := s.in // the first byte a secret may start in
	if len(s.from) > 0 {
		safe = s.from[0]
	} else if s.nesc > 0 {
		safe = s.escAt
	}
	s.held = append(s.held, c...)
	n := int(safe - s.out)
	s.pass(s.held[:n])
	s.held = append(s.held[:0], s.held[n:]...)
	s.out = safe
}

// unescape takes b, which came at at, in an escape, or starting one, and
// adds what an escape it ends stands for to dec, as encoding/json decodes
// it.
func (s *secretScan) unescape(b byte, at int64) {
	if s.nesc == 0 {
		s.escAt = at
	}
	s.esc[s.nesc] = b
	s.nesc++
	e := s.esc[:s.nesc]
	var buf [utf8.UTFMax]byte
	switch {
	case len(e) == 2 && b != 'u':
		if i := strings.IndexByte("bfnrt", b); i >= 0 {
			b = "\b\f\n\r\t"[i]
		} // else \" \\ \/ stand for the character escaped, as here does what JSON has no escape for
		s.add(s.escAt, []byte{b})
	case len(e) == 6:
		if r := hex4(e[2:]); !utf16.IsSurrogate(r) {
			s.add(s.escAt, utf8.AppendRune(buf[:0], r))
		} else {
			return // a surrogate pair's second half may follow
		}
	case len(e) == 7 && b != '\\', len(e) == 8 && b != 'u':
		s.unpaired()
		return
	case len(e) == 12:
		r := utf16.DecodeRune(hex4(e[2:6]), hex4(e[8:]))
		if r == utf8.RuneError {
			s.unpaired()
			return
		}
		s.add(s.escAt, utf8.AppendRune(buf[:0], r))
	default:
		return
	}
	s.nesc = 0
}

// unpaired adds what a surrogate without its pair stands for, U+FFFD, and
// takes what followed its escape afresh.
func (s *secretScan) unpaired() {
	rest, n, at := s.esc, s.nesc, s.escAt+6 // rest is a copy
	s.nesc = 0
	s.add(s.escAt, []byte(string(utf8.RuneError)))
	for i, b := range rest[6:n] {
		s.feed(b, at+int64(i))
	}
}

// feed takes b, which came at at.
func (s *secretScan) feed(b byte, at int64) {
	if s.nesc == 0 && b != '\\' {
		s.add(at, []byte{b})
	} else {
		s.unescape(b, at)
	}
}

// add adds d to dec, what the bytes from at on stand for.
func (s *secretScan) add(at int64, d []byte) {
	s.dec = append(s.dec, d...)
	for range d {
		s.from = append(s.from, at)
	}
}

// hex4 returns the number four hex digits spell, or -1 if they do not.
func hex4(h []byte) rune {
	n, err := strconv.ParseUint(string(h), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// Close passes on what was held back: the end came, and no secret in it.
func (s *secretScan) Close() error {
	s.pass(s.held)
	s.held = s.held[:0]
	return s.err
}

// pass writes b on to w, unless a write failed.
func (s *secretScan) pass(b []byte) {
	if s.err == nil && len(b) > 0 {
		_, s.err = s.w.Write(b)
	}
}
