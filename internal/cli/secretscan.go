package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// errSecretSeen is how a secretScan fails a save whose bytes hold a
// secret.
var errSecretSeen = errors.New("the transcript holds a secret")

// A secretScan passes what is written to it on to w, unless that holds one
// of its secrets, as itself or as a JSON string holds it: then it fails
// with errSecretSeen, before any byte of the secret has gone on. It holds
// back the last bytes it was given, as many as its longest form less one,
// until it knows that no secret starts in them: a secret may be cut across
// two writes, as a file's buffer cuts what goes through it.
type secretScan struct {
	secrets []string // those long enough to be taken for secrets
	forms   [][]byte // two per secret: itself, and as a JSON string holds it
	keep    int      // the longest form's length less one
	w       io.Writer
	held    []byte // the end of what came, not passed on yet: keep bytes, or all that came
	edge    []byte // held and the first bytes of a write, where a form may cross
	err     error
}

// newSecretScan returns a scan for those of secrets that are long enough
// to be secrets: a key as short as a word ("test", for a local server) is
// none, and scrubbing it would garble the conversation.
func newSecretScan(secrets []string) *secretScan {
	s := &secretScan{}
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			q, _ := json.Marshal(sec) // as Encode writes it in a string
			s.secrets = append(s.secrets, sec)
			s.forms = append(s.forms, []byte(sec), q[1:len(q)-1])
			s.keep = max(s.keep, len(sec)-1, len(q)-3)
		}
	}
	return s
}

// through returns s, passing on to w, as jsonl.SaveThrough takes it.
func (s *secretScan) through(w io.Writer) io.WriteCloser {
	s.w, s.held, s.err = w, s.held[:0], nil
	return s
}

func (s *secretScan) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	// A form that ends in p starts in it, or in held and then ends in edge.
	s.edge = append(append(s.edge[:0], s.held...), p[:min(len(p), s.keep)]...)
	for _, f := range s.forms {
		if bytes.Contains(s.edge, f) || bytes.Contains(p, f) {
			s.err = errSecretSeen
			return 0, s.err
		}
	}
	// All but the last keep bytes of held and p go on: a form that started
	// in them would have ended in what came, and been seen.
	if len(p) >= s.keep {
		s.pass(s.held)
		s.pass(p[:len(p)-s.keep])
		s.held = append(s.held[:0], p[len(p)-s.keep:]...)
	} else { // edge is held and all of p
		n := max(len(s.edge)-s.keep, 0)
		s.pass(s.edge[:n])
		s.held = append(s.held[:0], s.edge[n:]...)
	}
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
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
