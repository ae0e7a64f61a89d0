package apirules

import (
	"bytes"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"
)

// A tool_use block whose input is not a JSON object cannot be sent back as
// it is; the API's docs suggest wrapping the model's text as
// {"INVALID_JSON": "<the text>"}, so that the turn stays valid and the
// model is told its call was malformed.

// MarkInvalid returns text wrapped as an invalid tool input.
func MarkInvalid(text []byte) json.RawMessage {
	out, _ := json.Marshal(struct {
		S string `json:"INVALID_JSON"`
	}{string(text)})
	return out
}

// InvalidInput reports whether input is one that [MarkInvalid] wrapped,
// and returns the text the model sent.
func InvalidInput(input []byte) (string, bool) {
	// The mark is the only field, so its name comes first: a big input is not searched.
	dec := jsontext.NewDecoder(bytes.NewReader(input), Lenient)
	open, _ := dec.ReadToken()
	name, _ := dec.ReadToken()
	var m map[string]string
	if open.Kind() != '{' || name.Kind() != '"' || name.String() != "INVALID_JSON" ||
		!bytes.Contains(input, []byte(`"INVALID_JSON"`)) || json.Unmarshal(input, &m) != nil || len(m) != 1 {
		return "", false
	}
	s, ok := m["INVALID_JSON"]
	return s, ok
}
