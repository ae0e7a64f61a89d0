package anthropictest

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// appendJSONString appends s to dst as a JSON string. It escapes what JSON
// requires and what encoding/json also escapes (U+2028, U+2029), leaves
// <, > and & literal as the API does, and replaces invalid UTF-8 with
// U+FFFD. It exists so rendering a 100k-delta script costs no allocation
// per delta.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Split cuts s into pieces of n bytes (the last may be shorter), moving a
// cut forward when it would fall inside a UTF-8 sequence. Use it to send
// tool input the way the API does, as fragments that split keys, values
// and escape sequences anywhere:
//
//	NewStream().ToolUse("toolu_1", "echo", Split(`{"s":"a\"b"}`, 3)...)
//
// Split panics if n < 1.
func Split(s string, n int) []string {
	if n < 1 {
		panic("anthropictest: Split with n < 1")
	}
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
