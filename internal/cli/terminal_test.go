package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestScreen checks that the screen counts the rows a write moves the
// cursor down, wrapping included, so that erase goes back far enough and
// no further.
func TestScreen(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cols      int
		before    string // written before the mark
		written   string
		down, col int
		erase     string // "" when it cannot erase
	}{
		{"one short line", 10, "", "hello", 0, 5, "\r\x1b[J"},
		{"two lines", 10, "", "a\nb", 1, 1, "\r\x1b[1A\x1b[J"},
		{"exactly full, then a newline: one row", 4, "", "abcd\nx", 1, 1, "\r\x1b[1A\x1b[J"},
		{"a wrap", 4, "", "abcdef", 1, 2, "\r\x1b[1A\x1b[J"},
		{"wide glyphs wrap early", 5, "", "日本語", 1, 2, "\r\x1b[1A\x1b[J"},
		{"colours take no room", 4, "", "\x1b[1;32mab\x1b[0mcd", 0, 4, "\r\x1b[J"},
		{"the spinner's line clearing", 20, "", "\r\x1b[K⠋ thinking…\r\x1b[Kok", 0, 2, "\r\x1b[J"},
		{"a tab", 20, "", "a\tb", 0, 9, "\r\x1b[J"},
		{"a mark mid-line comes back to its column", 20, "> ", "x\ny", 1, 1, "\r\x1b[1A\x1b[2C\x1b[J"},
		{"scrolled off the screen", 80, "", "1\n2\n3\n4\n5\n6", 5, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &screen{cols: tc.cols, rows: 5}
			s.track(tc.before)
			s.mark()
			s.track(tc.written)
			if s.down != tc.down || s.col != tc.col {
				t.Errorf("down %d, col %d; want %d, %d", s.down, s.col, tc.down, tc.col)
			}
			seq, ok := s.erase()
			if ok != (tc.erase != "") || seq != tc.erase {
				t.Errorf("erase = %q, %v; want %q", seq, ok, tc.erase)
			}
		})
	}
}

// TestEscape checks the one escaping of text bound for a terminal: nothing
// from a model, a tool or a server can move the cursor, clear the screen,
// retitle the window or reorder text (printable), and in what a person
// judges nothing can hide either (visible).
func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		name, in           string
		printable, visible string
	}{
		{"plain", "git status", "git status", "git status"},
		{"newlines, tabs and other scripts stay", "a\tb\nc é 日本 привет", "a\tb\nc é 日本 привет", "a\tb\nc é 日本 привет"},
		{"a carriage return and CSI that redraw a line", "touch EVIL #\r\x1b[K  $ ls -la", `touch EVIL #\r\x1b[K  $ ls -la`, `touch EVIL #\r\x1b[K  $ ls -la`},
		{"clear screen, a fake prompt", "\x1b[2J\x1b[H$ ", `\x1b[2J\x1b[H$ `, `\x1b[2J\x1b[H$ `},
		{"OSC: a window title", "\x1b]0;PWNED\x07", `\x1b]0;PWNED\a`, `\x1b]0;PWNED\a`},
		{"C1: CSI and OSC in one code point", "\u009b2J\u009d0;x\u009c", `\u009b2J\u009d0;x\u009c`, `\u009b2J\u009d0;x\u009c`},
		{"a CRLF line end, and a CR that would overwrite", "a\r\nb\rc", "a\r\nb\\rc", "a\\r\nb\\rc"},
		{"backspace and DEL", "rm\b\b\x7f", `rm\b\b\x7f`, `rm\b\b\x7f`},
		{"a bidirectional override", "rm -rf \u202e/ fig.txt", `rm -rf \u202e/ fig.txt`, `rm -rf \u202e/ fig.txt`},
		{"bytes that are not UTF-8", "a\xff\x9bb", `a\xff\x9bb`, `a\xff\x9bb`},
		{"blank Braille hides a tail", "echo hi\u2800\u2800; rm -rf ~", "echo hi\u2800\u2800; rm -rf ~", `echo hi\u2800\u2800; rm -rf ~`},
		{"zero width and non-ASCII spaces", "a\u200bb\u00a0c\u3000d\ufeff", "a\u200bb\u00a0c\u3000d\ufeff", `a\u200bb\u00a0c\u3000d\ufeff`},
		{"Hangul filler and a tag character", "x\u3164y\U000E0041", "x\u3164y\U000E0041", `x\u3164y\U000e0041`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := printable(tc.in); got != tc.printable {
				t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.printable)
			}
			if got := visible(tc.in); got != tc.visible {
				t.Errorf("visible(%q) = %q, want %q", tc.in, got, tc.visible)
			}
		})
	}
}

// TestVisibleWriter checks the writer that the MCP servers' questions
// (elicitation forms, sampling, consent) are written through.
func TestVisibleWriter(t *testing.T) {
	var b strings.Builder
	term := &terminal{in: strings.NewReader("n\n"), out: visibleWriter{&b}}
	term.confirm("MCP server x\x1b]0;t\x07 asks:\u2800 ok?")
	if want := "MCP server x\\x1b]0;t\\a asks:\\u2800 ok? [y/N] "; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a  b\n\tc", 10, "a b c"},
		{"héllo wörld", 5, "héll…"},
		{"  lead and trail \n", 100, "lead and trail"},
		{"abcde", 5, "abcde"},
		{"abcdef", 5, "abcd…"},
		{"a b", 2, "a…"},
		{"a\u00a0\u2003b  ", 10, "a b"},
	} {
		if got := shorten(tc.in, tc.n); got != tc.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestCompactJSON holds compactJSON, which reads only the prefix it shows,
// to what compacting the whole input and then shortening it gives.
func TestCompactJSON(t *testing.T) {
	big := `{"content": "` + strings.Repeat(`line \"quoted\"\t and   é\n`, 1<<15) + `"}`
	for _, in := range []string{
		`{}`, `{"a": 1}`, "{\n  \"a\" : [1, 2,\t3]\n}", `{"s":"a   b  "}`, `{"s":"x\" y", "t" :"\\"}`,
		`{"ü":"héllo wörld"}`, `{"s":"` + strings.Repeat(" ", 5000) + `x"}`, big,
	} {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(in)); err != nil {
			t.Fatalf("bad test input %.40q: %v", in, err)
		}
		for _, n := range []int{1, 5, 9, 100, 200} {
			if got, want := compactJSON(json.RawMessage(in), n), shorten(buf.String(), n); got != want {
				t.Errorf("compactJSON(%.40q, %d) = %q, want %q", in, n, got, want)
			}
		}
	}
	if got := compactJSON(nil, 10); got != "{}" {
		t.Errorf("compactJSON(nil) = %q, want {}", got)
	}
}
