package llm

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small JSON scanner for the hot path of the decoder: it
// finds the fields of an object without building maps or reflecting, so
// that a text delta costs one string allocation. It checks enough of the
// syntax to never misread a field; the rare events that need more go
// through encoding/json.

// objScanner walks the fields of one JSON object.
type objScanner struct {
	b   []byte
	i   int
	n   int // fields returned so far
	bad bool
}

// scanObject starts scanning the object in b; surrounding whitespace, such
// as the padding the API adds before the closing brace, is allowed.
func scanObject(b []byte) objScanner {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return objScanner{bad: true}
	}
	return objScanner{b: b, i: i + 1}
}

// next returns the next field's raw key (between the quotes, escapes
// undone only when present) and its raw value. It returns ok false at the
// end of the object or on a syntax error, which err then reports.
func (s *objScanner) next(scratch *[]byte) (key, val []byte, ok bool) {
	if s.bad || s.b == nil {
		return nil, nil, false
	}
	b := s.b
	i := skipSpace(b, s.i)
	if i < len(b) && b[i] == '}' {
		s.i = i + 1
		if skipSpace(b, s.i) != len(b) {
			s.bad = true
		}
		s.b = nil
		return nil, nil, false
	}
	if s.n > 0 {
		if i >= len(b) || b[i] != ',' {
			s.bad = true
			return nil, nil, false
		}
		i = skipSpace(b, i+1)
	}
	end, esc := scanString(b, i)
	if end < 0 {
		s.bad = true
		return nil, nil, false
	}
	key = b[i+1 : end-1]
	if esc {
		k, good := unescape(b[i:end], (*scratch)[:0])
		if !good {
			s.bad = true
			return nil, nil, false
		}
		*scratch = k
		key = k
	}
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		s.bad = true
		return nil, nil, false
	}
	i = skipSpace(b, i+1)
	vend := skipValue(b, i)
	if vend < 0 {
		s.bad = true
		return nil, nil, false
	}
	s.i, s.n = vend, s.n+1
	return key, b[i:vend], true
}

// err reports whether the object was malformed.
func (s *objScanner) err() bool { return s.bad || s.b != nil }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index just past the string starting at b[i], and
// whether it holds escapes, or -1 if the string does not end. It jumps from
// quote to quote with bytes.IndexByte, since tool input strings run to
// megabytes; a quote preceded by an odd run of backslashes is escaped.
// Raw control characters, which JSON forbids in strings, are tolerated.
func scanString(b []byte, i int) (end int, esc bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, n > 0 || bytes.IndexByte(b[i+1:q], '\\') >= 0
		}
		j = q + 1
	}
}

// skipValue returns the index just past the value starting at b[i], or -1.
// Objects and arrays are skipped by bracket depth, strings by their
// quotes; their insides are checked by encoding/json where they are kept.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			case '"':
				end, _ := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			}
		}
		return -1
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// unquote returns the string value of the raw JSON string q, quotes
// included. It allocates only the result.
func unquote(q []byte, scratch *[]byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' {
			s, ok := unescape(q, (*scratch)[:0])
			*scratch = s
			return string(s), ok
		}
	}
	return string(q[1 : len(q)-1]), true
}

// unescape appends the value of the raw JSON string q to dst. Invalid
// surrogates become U+FFFD, as encoding/json does.
func unescape(q []byte, dst []byte) ([]byte, bool) {
	if len(q) < 2 {
		return dst, false
	}
	s := q[1 : len(q)-1]
	for i := 0; i < len(s); i++ {
		// Copy the run up to the next escape in one go. Runs are short
		// in escape-dense text (JSON inside JSON), so a plain loop beats
		// a call to bytes.IndexByte.
		j := i
		for j < len(s) && s[j] != '\\' {
			j++
		}
		dst = append(dst, s[i:j]...)
		if j == len(s) {
			return dst, true
		}
		i = j + 1
		if i >= len(s) {
			return dst, false
		}
		switch s[i] {
		case '"', '\\', '/':
			dst = append(dst, s[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2, ok2 = hex4(s, i+3)
				}
				if d := utf16.DecodeRune(r, r2); ok2 && d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// atoi parses a raw JSON integer that fits an int32, as an index does.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	return int(n), err == nil
}

// validJSON reports whether b is one JSON value, exactly as json.Valid
// does (FuzzValidJSON holds the two to the same answers), but several
// times faster. Blocks kept raw must be checked, since they are sent back
// verbatim, and real ones are large: a web search result carries tens of
// kilobytes of encrypted strings, which json.Valid's byte-at-a-time state
// machine made half the cost of a real stream.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipSpace(b, 0), 0)
	return ok && skipSpace(b, i) == len(b)
}

// maxJSONDepth is encoding/json's nesting limit, kept so that both agree.
const maxJSONDepth = 10000

// validValue checks the value starting at b[i] and returns the index just
// past it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; c {
	case '"':
		return validString(b, i)
	case '{', '[':
		if depth >= maxJSONDepth {
			return i, false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		for {
			ok := true
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				if i, ok = validString(b, i); !ok {
					return i, false
				}
				i = skipSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipSpace(b, i+1)
			}
			if i, ok = validValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			switch {
			case i >= len(b):
				return i, false
			case b[i] == end:
				return i + 1, true
			case b[i] != ',':
				return i, false
			}
			i = skipSpace(b, i+1)
		}
	case 't':
		return validLiteral(b, i, "true")
	case 'f':
		return validLiteral(b, i, "false")
	case 'n':
		return validLiteral(b, i, "null")
	default:
		return validNumber(b, i)
	}
}

func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// validString checks the string starting at the quote b[i]. Like
// json.Valid it rejects raw control characters and bad escapes, and lets
// invalid UTF-8 through (encoding/json replaces it when decoding).
func validString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		// Skip plain bytes with one table lookup each: the strings
		// checked here are mostly long runs of base64.
		for j < len(b) && plainStringByte[b[j]] {
			j++
		}
		if j >= len(b) {
			break
		}
		switch b[j] {
		case '"':
			return j + 1, true
		case '\\':
			j++
			if j >= len(b) {
				return j, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(b, j+1); !ok {
					return j, false
				}
				j += 4
			default:
				return j, false
			}
		default: // a control character
			return j, false
		}
	}
	return len(b), false
}

// plainStringByte tells the bytes that stand for themselves inside a JSON
// string: all but the quote, the backslash and control characters.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validNumber checks a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
