package apirules

import (
	"encoding/json"
	"strings"
	"testing"
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
		`[]`, `"{}"`, `null`, ``, ` `, `1`,
		`{"a":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`,
	} {
		want := strings.HasPrefix(strings.TrimSpace(in), "{") && json.Valid([]byte(in))
		if got := IsObject(json.RawMessage(in)); got != want {
			t.Errorf("IsObject(%.40q) = %v, want %v", in, got, want)
		}
	}
}
