package apirules

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"weak"
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
		if got := IsObject(json.RawMessage(in)); got != want {
			t.Errorf("IsObject(%.40q) = %v, want %v", in, got, want)
		}
		// Strictly: no invalid UTF-8, and no lone surrogate (the two above).
		strict := want && utf8.ValidString(in) && !strings.Contains(in, `\ud800"`)
		if got := IsUTF8Object(json.RawMessage(in)); got != strict {
			t.Errorf("IsUTF8Object(%.40q) = %v, want %v", in, got, strict)
		}
	}
}

// TestIsObjectOnce checks that a big input IsObject accepted is known by
// its bytes' identity: the same bytes again, not a prefix of them, a copy,
// or bytes it rejected.
func TestIsObjectOnce(t *testing.T) {
	big := []byte(`{"content":"` + strings.Repeat(`line \"quoted\"\t\u00e9\n`, 50_000) + `"}`)
	known := func(in []byte) bool {
		accepted.Lock()
		defer accepted.Unlock()
		return slices.ContainsFunc(accepted.ring[:], func(c checked) bool { return c.start == weak.Make(&in[0]) && c.len == len(in) })
	}
	if !IsObject(big) || !known(big) {
		t.Fatal("a big valid input is not remembered")
	}
	if !IsObject(big) {
		t.Error("the same bytes are not accepted again")
	}
	if IsObject(big[:len(big)-1]) || known(big[:len(big)-1]) {
		t.Error("a prefix of accepted bytes is accepted")
	}
	if copied := bytes.Clone(big); known(copied) || !IsObject(copied) {
		t.Error("a copy of accepted bytes is known before it is checked")
	}
	bad := bytes.Clone(big)
	bad[len(bad)-1] = ']'
	if IsObject(bad) || known(bad) {
		t.Error("a big invalid input is remembered")
	}
	if !IsUTF8Object(big) {
		t.Error("a big valid UTF-8 input is remembered as not strictly valid")
	}
	mended := append([]byte(`{"a":"\ud800",`), big[1:]...)
	for range 2 { // checked, then remembered
		if !IsObject(mended) || IsUTF8Object(mended) || !known(mended) {
			t.Errorf("a big input with a lone surrogate: IsObject %v, IsUTF8Object %v, remembered %v", IsObject(mended), IsUTF8Object(mended), known(mended))
		}
	}
}
