package apirules

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
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
		return slices.Contains(accepted.ring[:], checked{weak.Make(&in[0]), len(in)})
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
}
