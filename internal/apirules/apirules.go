// Package apirules states once the Messages API's rules that both the
// core and the fake API (anthropictest) apply, those the API answers with
// 400 when broken: which role's message may hold a block, a tool_use id's
// pattern, a tool input's JSON object, blank text, a final assistant turn,
// bound thinking blocks and sampling parameters. It also names the API's
// error types, which llm reads and anthropictest writes, marks a tool input
// that is not JSON, and holds the JSON grammar the module reads with
// ([Lenient]). It works on strings and bytes, not on llm's types, because
// anthropictest must not import llm, whose own tests use anthropictest; the
// checker of a whole request's messages is anthropictest's alone.
package apirules

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrorTypes names the API's error type for each HTTP error status it
// documents, as an error body without one (a proxy's) is read and as the
// fake API answers.
var ErrorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	408: "timeout_error",
	409: "conflict_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	504: "timeout_error",
	529: "overloaded_error",
}

// AllowedIn reports whether a message of role may hold a block of type
// typ: tool_use and thinking only the assistant's, tool_result, image and
// document only the user's.
func AllowedIn(role, typ string) bool {
	switch {
	case typ == "tool_use" || IsThinking(typ):
		return role != "user"
	case typ == "tool_result" || typ == "image" || typ == "document":
		return role != "assistant"
	}
	return true
}

// ValidID reports whether id matches the API's pattern for tool_use ids,
// ^[a-zA-Z0-9_-]+$. Repair asks it of every call before every request: a
// cutset takes a sixth of a regular expression's time.
func ValidID(id string) bool {
	return id != "" && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

// IsObject reports whether in is a JSON object, valid as encoding/json's
// Valid has it (duplicate names and invalid UTF-8 allowed), and whether
// strictly one too: with no invalid UTF-8 in it, raw or escaped (a lone
// surrogate), which an encoder mends, so that one writes it unchanged. For a
// valid UTF-8 input, the usual one, that is one pass, half json.Valid's time.
func IsObject(in json.RawMessage) (ok, strict bool) {
	if in = bytes.Trim(in, " \t\r\n"); len(in) == 0 || in[0] != '{' { // JSON's whitespace, not Unicode's
		return false, false
	}
	if jsontext.Value(in).IsValid(jsontext.AllowDuplicateNames(true)) {
		return true, true
	}
	return jsontext.Value(in).IsValid(Lenient), false
}

// Lenient makes go-json-experiment read JSON as encoding/json does, in the
// grammar the module reads and writes all JSON with: duplicate names (the
// last wins) and invalid UTF-8 (a binary file's text, half a surrogate pair
// in a delta), replaced by U+FFFD.
var Lenient = json2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// IsBlank reports whether s has no visible text; the API rejects such text
// blocks.
func IsBlank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) < 0
}

// CompactionBlock is the type of the block server compaction writes (kept
// as an llm.RawBlock, and sent back unchanged). It stands in for the
// messages it summarises: the API drops every block before it from the
// prompt. An on-demand compaction (compaction: {"type": "summarize"})
// returns it alone, in an assistant message that later requests send
// first, so a conversation may open with that message instead of a user
// message.
const CompactionBlock = "compaction"
