package apirules

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestIsObject holds IsObject, which checks with jsontext, to the
// grammar encoding/json's Valid accepts, on inputs where the two
// libraries' defaults differ.
func TestIsObject(t *testing.T) {
	big := `{"content":"` + strings.Repeat(`line \"quoted\"\t\u00e9\n`, 50_000) + `"}`
	for _, in := range []string{
		`{}`, ` {"a":1} `, "{\n\t\"a\": [1, 2.5e3, true, null]\n}",
		`{"a":1,"a":2}`, "{\"a\":\"\xff\xfe\"}", `{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`,
		`{"a":"\u00e9"}`, `{"a":-0}`, `{"a":1e400}`, big,
		`{`, `{"a":1,}`, `{"a":01}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":1} {}`, `{"a":NaN}`,
		`[]`, `"{}"`, `null`, ``, ` `, `1`, "\v{}", "{}\f", "\u00a0{}", "\r\n{}\t",
		`{"a":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`,
	} {
		want := strings.HasPrefix(strings.TrimSpace(in), "{") && json.Valid([]byte(in))
		// Strictly: no invalid UTF-8, and no lone surrogate (the two above).
		strict := want && utf8.ValidString(in) && !strings.Contains(in, `\ud800"`)
		if ok, s := IsObject(json.RawMessage(in)); ok != want || s != strict {
			t.Errorf("IsObject(%.40q) = %v, %v; want %v, %v", in, ok, s, want, strict)
		}
	}
}

// TestValidID holds ValidID to the API's pattern, as a regular expression
// reads it, at the edges a cutset could miss.
func TestValidID(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	for _, id := range []string{"", "a", "toolu_01AbC-9", "-", "_", "t 1", "call.1", "é", "x\n", "\nx", "a/b", "toolu_\x00", "ab\xffcd"} {
		if got, want := ValidID(id), pattern.MatchString(id); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
		}
	}
}
