package apirules

import (
	"encoding/json"

	json2 "github.com/go-json-experiment/json"
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
	var m struct {
		Text *string `json:"INVALID_JSON"`
	}
	// The mark is the only member: reading stops at any other, so a big input is not read.
	if json2.Unmarshal(input, &m, Lenient, json2.RejectUnknownMembers(true)) != nil || m.Text == nil {
		return "", false
	}
	return *m.Text, true
}
