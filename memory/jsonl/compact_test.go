package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// marshaler is a value whose MarshalJSON returns its JSON as it is, for
// encoding/json to compact as it compacts a block's.
type marshaler []byte

func (m marshaler) MarshalJSON() ([]byte, error) { return m, nil }

// FuzzWriteCompact checks that writeCompact writes a valid JSON value as
// encoding/json writes the same value returned by a MarshalJSON method:
// the file format Encode kept when it stopped writing through
// encoding/json.
func FuzzWriteCompact(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `"plain"`, ` { "a" : [ 1 , 2.50 , -3e2 ] , "b" : { } } `,
		"{\"s\": \"<b>Tom & Jerry</b>\u2028next\u2029\", \"t\" :\n\t\"\\\"x\\\\\" }",
		`"a \" < \\" `, `["\u003c", "\\u2028", "é 😀"]`, "\"\xe2\x80\"", "\"\xe2\x80\xa8\xe2\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !json.Valid(src) {
			return
		}
		want, err := json.Marshal(marshaler(src))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		if err := writeCompact(w, src); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("writeCompact(%q) = %q, want %q as encoding/json writes it", src, got.Bytes(), want)
		}
	})
}
