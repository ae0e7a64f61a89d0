package cli

import "testing"

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
