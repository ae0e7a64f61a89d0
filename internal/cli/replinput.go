package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/peterh/liner"
)

// This file is the REPL's line editor on a real terminal. Line editing,
// history and reverse search are github.com/peterh/liner's; what liner
// cannot read, a keyFilter between the terminal and liner reads first:
// a bracketed paste (one prompt, its newlines kept), Alt-Enter (a newline
// in the prompt) and Shift-Tab (the next permission mode).

// errModeKey is a lineReader's answer to Shift-Tab: the caller changes the
// permission mode and reads again, and the text typed so far is kept.
var errModeKey = errors.New("shift-tab pressed")

// The terminal's codes the keyFilter reads (xterm's, which every current
// terminal emulator sends).
const (
	pasteOn   = "\x1b[?2004h" // asks the terminal to bracket pastes
	pasteOff  = "\x1b[?2004l"
	pasteOpen = "\x1b[200~"
	pasteEnd  = "\x1b[201~"
	shiftTab  = "\x1b[Z"
	altEnter  = "\x1b\r"
)

// editor is the lineReader of a real terminal. liner works on the
// process's own stdin and stdout, so it is used only when both are
// terminals; it reads from a pipe the keyFilter writes, and the terminal is
// the keyFilter's.
type editor struct {
	st    *liner.State
	keys  *keyFilter
	draft string // the text typed before a Shift-Tab, to edit on
}

func newEditor() lineReader {
	pr, pw, err := os.Pipe()
	if err != nil {
		// No filter: plain liner, which reads a paste a line at a time.
		return &editor{st: newLiner(), keys: &keyFilter{}}
	}
	// liner reads the os.Stdin of the moment it starts; the terminal
	// modes it sets are those of file descriptor 0, the terminal still.
	tty := os.Stdin
	os.Stdin = pr
	st := newLiner()
	os.Stdin = tty
	k := &keyFilter{pastes: map[string]string{}}
	// This reader lives as long as the terminal is open: a read from a
	// terminal cannot be abandoned, only left to end with the process.
	go k.run(tty, pw)
	io.WriteString(os.Stdout, pasteOn)
	return &editor{st: st, keys: k}
}

func newLiner() *liner.State {
	st := liner.NewLiner()
	st.SetCtrlCAborts(true)
	st.SetMultiLineMode(true)
	st.SetTabCompletionStyle(liner.TabPrints)
	st.SetWordCompleter(completeAt)
	return st
}

func (e *editor) readLine(prompt string) (string, error) {
	l, err := e.st.PromptWithSuggestion(prompt, e.draft, -1)
	e.draft = ""
	switch {
	case errors.Is(err, liner.ErrPromptAborted):
		return "", errPromptInterrupt
	case err != nil:
		return "", err
	case e.keys.takeEnd():
		e.draft = l
		return "", errModeKey
	}
	return e.keys.expand(l), nil
}

func (e *editor) remember(line string) { e.st.AppendHistory(line) }

// close turns bracketed paste off and gives the terminal its modes back.
// The REPL defers it, so it runs when the command panics too.
func (e *editor) close() {
	io.WriteString(os.Stdout, pasteOff)
	e.st.Close()
}

// A keyFilter copies the terminal's input to liner, reading first what
// liner cannot: a bracketed paste that holds a newline or another control
// character becomes a placeholder, as in Claude Code ("[Pasted text #1 +3
// lines]"), which the line returned expands to the text pasted; Alt-Enter
// becomes \ and Enter, the line continued; Shift-Tab becomes an Enter that
// ends no line, but reports the key.
type keyFilter struct {
	mu sync.Mutex
	// ends says of each line end passed to liner, in order, whether it
	// stands for Shift-Tab: liner ends a line at each CR or LF it reads,
	// and the editor takes one entry for each line liner returns.
	ends   []bool
	pastes map[string]string // the text of each placeholder not yet expanded
	n      int               // pastes so far
}

// run copies in to out until in ends, then closes out.
func (k *keyFilter) run(in io.Reader, out io.WriteCloser) {
	defer out.Close()
	buf := make([]byte, 4096)
	var paste []byte // a paste's text so far, while one is open
	pasting := false
	for {
		n, err := in.Read(buf)
		var w bytes.Buffer
		for b := buf[:n]; len(b) > 0; {
			if pasting {
				paste = append(paste, b...)
				i := bytes.Index(paste, []byte(pasteEnd))
				if i < 0 {
					break
				}
				b = bytes.Clone(paste[i+len(pasteEnd):])
				w.WriteString(k.pasted(string(paste[:i])))
				paste, pasting = paste[:0], false
				continue
			}
			switch s := string(b[:min(len(b), len(pasteOpen))]); {
			case strings.HasPrefix(s, pasteOpen):
				pasting, b = true, b[len(pasteOpen):]
			case strings.HasPrefix(s, altEnter):
				k.end(false)
				w.WriteString("\\\r")
				b = b[len(altEnter):]
			case strings.HasPrefix(s, shiftTab):
				k.end(true)
				w.WriteByte('\r')
				b = b[len(shiftTab):]
			default:
				if b[0] == '\r' || b[0] == '\n' {
					k.end(false)
				}
				w.WriteByte(b[0])
				b = b[1:]
			}
		}
		if _, werr := out.Write(w.Bytes()); werr != nil || err != nil {
			return
		}
	}
}

// end records a line end passed on.
func (k *keyFilter) end(modeKey bool) {
	k.mu.Lock()
	k.ends = append(k.ends, modeKey)
	k.mu.Unlock()
}

// takeEnd takes the record of the line end liner has just read, and
// reports whether it was Shift-Tab.
func (k *keyFilter) takeEnd() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.ends) == 0 {
		return false
	}
	modeKey := k.ends[0]
	k.ends = k.ends[1:]
	return modeKey
}

// pasted returns what liner is given for a paste of text: the text itself
// when liner can edit it, else a placeholder.
func (k *keyFilter) pasted(text string) string {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	if !strings.ContainsFunc(text, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return text
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	more := ""
	if n := strings.Count(strings.TrimSuffix(text, "\n"), "\n"); n > 0 {
		more = " +" + plural(n, "line", "lines")
	}
	p := fmt.Sprintf("[Pasted text #%d%s]", k.n, more)
	k.pastes[p] = text
	return p
}

// placeholder matches what pasted writes for a paste.
var placeholder = regexp.MustCompile(`\[Pasted text #[0-9]+( \+[0-9]+ lines?)?\]`)

// expand returns line with each placeholder of a paste replaced by the
// text pasted. A placeholder the user edited stays as it is.
func (k *keyFilter) expand(line string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return placeholder.ReplaceAllStringFunc(line, func(p string) string {
		if text, ok := k.pastes[p]; ok {
			delete(k.pastes, p)
			return text
		}
		return p
	})
}

// readInput reads one prompt from lr: lines that end in \ (Alt-Enter
// writes one) go on to the next line, the newline kept, as in Claude Code.
// modeKey is called at each Shift-Tab, after which the line typed so far
// is edited on.
func readInput(lr lineReader, prompt string, modeKey func()) (string, error) {
	var b strings.Builder
	for {
		line, err := lr.readLine(prompt)
		switch {
		case errors.Is(err, errModeKey):
			if modeKey != nil {
				modeKey()
			}
			continue
		case err != nil:
			return "", err
		}
		head, more := strings.CutSuffix(line, `\`)
		if !more {
			b.WriteString(line)
			return b.String(), nil
		}
		b.WriteString(head + "\n")
		prompt = "… "
	}
}
