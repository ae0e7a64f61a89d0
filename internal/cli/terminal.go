package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// A screen follows the cursor of the terminal stdout is on, from a mark set
// when a model turn starts, so that a turn the agent discards can be erased:
// it counts the rows the output moved down, lines that wrapped included.
// It knows only what the renderer wrote, which is all there is while a turn
// streams (the REPL reads no input then).
type screen struct {
	// size returns the terminal's size, read again at each mark since
	// the window may have been resized. Nil keeps cols and rows.
	size       func() (cols, rows int)
	cols, rows int // the terminal's size; 0 when unknown
	down       int // rows the cursor moved down since the mark
	col        int // the cursor's column
	markCol    int // the cursor's column at the mark
}

// mark remembers where the cursor is.
func (s *screen) mark() {
	s.down, s.markCol = 0, s.col
	if s.size != nil {
		s.cols, s.rows = s.size()
	}
}

// track follows the cursor through p. Escape sequences (colours, the
// spinner's line clearing) move it nowhere but to the line's start.
func (s *screen) track(p string) {
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\n':
			s.down++
			s.col = 0
		case c == '\r':
			s.col = 0
		case c == '\t':
			s.col = (s.col/8 + 1) * 8
			if s.cols > 0 && s.col > s.cols {
				s.col = s.cols
			}
		case c == 0x1b:
			i = skipEscape(p, i)
			continue
		case c < 0x20 || c == 0x7f:
		default:
			r, n := utf8.DecodeRuneInString(p[i:])
			w := runewidth.RuneWidth(r)
			// A glyph that does not fit wraps to the next row first.
			if s.cols > 0 && s.col+w > s.cols {
				s.down++
				s.col = 0
			}
			s.col += w
			i += n
			continue
		}
		i++
	}
}

// skipEscape returns the index just past the escape sequence at p[i]: a
// CSI sequence (ESC [ … final byte) or a two-byte escape.
func skipEscape(p string, i int) int {
	if i+1 >= len(p) {
		return len(p)
	}
	if p[i+1] != '[' {
		return i + 2
	}
	for j := i + 2; j < len(p); j++ {
		if 0x40 <= p[j] && p[j] <= 0x7e {
			return j + 1
		}
	}
	return len(p)
}

// erase returns the escape sequence that erases everything written since
// the mark and puts the cursor back there, or false when that cannot be
// done: the size is unknown, or the mark has scrolled off the screen.
func (s *screen) erase() (string, bool) {
	if s.cols <= 0 || s.rows <= 0 || s.down >= s.rows {
		return "", false
	}
	seq := "\r"
	if s.down > 0 {
		seq += fmt.Sprintf("\x1b[%dA", s.down)
	}
	if s.markCol > 0 {
		seq += fmt.Sprintf("\x1b[%dC", s.markCol)
	}
	s.down, s.col = 0, s.markCol
	return seq + "\x1b[J", true
}

// trackingWriter writes to a terminal and tells the screen what it wrote.
// Its callers hold the renderer's mutex.
type trackingWriter struct {
	w   io.Writer
	scr *screen
}

func (t trackingWriter) Write(p []byte) (int, error) {
	t.scr.track(string(p))
	return t.w.Write(p)
}

// WriteString is Write without a copy, for io.WriteString, which is how the
// renderer writes.
func (t trackingWriter) WriteString(s string) (int, error) {
	t.scr.track(s)
	return io.WriteString(t.w, s)
}

// spinner animates one line on stderr while the user waits. It shares the
// renderer's mutex, so a frame is never drawn in the middle of another
// write.
type spinner struct {
	w     io.Writer
	mu    *sync.Mutex
	style style

	label   string
	running bool
	drawn   bool
	stopc   chan struct{}
	frame   int
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newSpinner(w io.Writer, mu *sync.Mutex, st style) *spinner {
	return &spinner{w: w, mu: mu, style: st}
}

// start shows label, starting the animation if it is not running. The
// caller holds the mutex.
func (s *spinner) start(label string) {
	s.label = label
	if s.running {
		return
	}
	s.running = true
	s.stopc = make(chan struct{})
	go s.loop(s.stopc)
}

// stop stops the animation and clears its line. The caller holds the mutex.
func (s *spinner) stop() {
	if !s.running {
		return
	}
	s.running = false
	close(s.stopc)
	if s.drawn {
		io.WriteString(s.w, "\r\x1b[K")
		s.drawn = false
	}
}

func (s *spinner) loop(stop chan struct{}) {
	// The first frame waits a moment, so that fast steps do not flicker.
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		select {
		case <-stop:
			s.mu.Unlock()
			return
		default:
		}
		s.frame = (s.frame + 1) % len(spinFrames)
		io.WriteString(s.w, "\r\x1b[K"+s.style.tool(spinFrames[s.frame])+" "+s.style.dim(s.label+"…"))
		s.drawn = true
		s.mu.Unlock()
	}
}

// printable returns s as it may be written to a terminal. Each control
// character but newline, tab and the CR of a CRLF (C0, DEL and C1: ESC, CSI
// and OSC among them), each bidirectional control, and each byte that is not UTF-8 is
// written as a Go escape (\x1b, \u202e, \xff), so that text from a model, a
// tool or a server can neither move the cursor, clear the screen, recolour
// or retitle it, nor reorder what it shows. Text that needs no escape is
// returned as it is, without a copy.
func printable(s string) string { return escapeText(s, false) }

// visible is printable for what a person reads to judge it (tool calls and
// results, the permission question, notes, errors): invisible characters
// and every blank but the ASCII space are escaped too, such as U+200B,
// U+00A0 and U+2800, so that nothing can hide in a line that looks empty
// or pass for a space.
func visible(s string) string { return escapeText(s, true) }

func escapeText(s string, strict bool) string {
	var b strings.Builder
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		esc := ""
		switch {
		case r == utf8.RuneError && n == 1:
			esc = fmt.Sprintf(`\x%02x`, s[i])
		case r == '\r' && !strict && strings.HasPrefix(s[i+1:], "\n"):
			// A line end written CRLF overwrites nothing.
		case needsEscape(r, strict):
			esc = escapeRune(r)
		}
		if esc != "" {
			b.WriteString(s[done:i])
			b.WriteString(esc)
			done = i + n
		}
		i += n
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// needsEscape reports whether r must be escaped on a terminal: always a
// control character but newline and tab, or a bidirectional control;
// strictly, also a character that shows nothing or a blank other than the
// ASCII space.
func needsEscape(r rune, strict bool) bool {
	switch {
	case r == '\n' || r == '\t' || r == ' ':
		return false
	case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
		return true
	case !strict || r < 0x80:
		return false
	}
	// U+2800, the blank Braille pattern, is a symbol that draws nothing.
	return r == '\u2800' || unicode.In(r, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// visibleWriter writes through visible, for a sink that writes text from
// a server with plain fmt calls, each a whole string.
type visibleWriter struct{ w io.Writer }

func (v visibleWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(v.w, visible(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeRune returns r as a Go escape: \x1b, \u202e or \U000e0041.
func escapeRune(r rune) string {
	q := strconv.QuoteRuneToASCII(r)
	return q[1 : len(q)-1]
}

// compactJSON returns JSON input as one line of compact JSON, cut to n
// runes. It reads only as much of input as it shows: a tool input can be
// megabytes (a written file's), and this line is a glance at it. The agent's
// inputs are always JSON (llm wraps one that is not in {"INVALID_JSON": …}).
func compactJSON(input json.RawMessage, n int) string {
	if len(input) == 0 {
		return "{}"
	}
	return shortenRunes(func(yield func(rune) bool) {
		inString, escaped := false, false
		// Decoded in place: string(input) would copy a 5 MiB input to show
		// a hundred runes of it.
		for b := input; len(b) > 0; {
			r, size := utf8.DecodeRune(b)
			b = b[size:]
			switch {
			case escaped:
				escaped = false
			case r == '\\':
				escaped = inString
			case r == '"':
				inString = !inString
			case !inString && unicode.IsSpace(r):
				continue
			}
			if !yield(r) {
				return
			}
		}
	}, n)
}

// shorten returns s on one line, its runs of white space collapsed, cut to
// n runes with an ellipsis, and visible: what needs an escape on a terminal
// is escaped, each escape counting as its runes.
func shorten(s string, n int) string {
	return shortenRunes(func(yield func(rune) bool) {
		for _, r := range s {
			if !yield(r) {
				return
			}
		}
	}, n)
}

// shortenRunes is shorten of the text that runes yields, reading no more
// of it than the n runes it shows.
func shortenRunes(runes iter.Seq[rune], n int) string {
	var b strings.Builder
	width, cut, space := 0, 0, false
	// emit appends t, of w runes, unless it would take the text past n;
	// cut is where the text ends that leaves room for the ellipsis.
	emit := func(t string, w int) bool {
		if width+w > n {
			return false
		}
		b.WriteString(t)
		if width += w; width < n {
			cut = b.Len()
		}
		return true
	}
	for r := range runes {
		if unicode.IsSpace(r) {
			space = width > 0
			continue
		}
		t := string(r)
		if needsEscape(r, true) {
			t = escapeRune(r)
		}
		if space && !emit(" ", 1) || !emit(t, utf8.RuneCountInString(t)) {
			return b.String()[:cut] + "…"
		}
		space = false
	}
	return b.String()
}

// style colours text for a terminal. The zero style adds nothing.
type style struct{ color bool }

func (s style) wrap(code, t string) string {
	if !s.color || t == "" {
		return t
	}
	return "\x1b[" + code + "m" + t + "\x1b[0m"
}

func (s style) dim(t string) string  { return s.wrap("2", t) }
func (s style) tool(t string) string { return s.wrap("36", t) }
func (s style) err(t string) string  { return s.wrap("31", t) }
func (s style) warn(t string) string { return s.wrap("33", t) }

// strike marks text as void: struck through, or between rules without
// colour.
func (s style) strike(t string) string {
	if !s.color {
		return "~~ " + t + " ~~"
	}
	return s.wrap("9;2", t)
}

// fragment highlights one streamed input fragment.
func (s style) fragment(t string) string { return s.wrap("1;32", t) }

// phase labels a step of the loop, padded so that the lines align.
func (s style) phase(name string) string {
	return s.wrap("1;35", fmt.Sprintf("%-7s", name))
}
