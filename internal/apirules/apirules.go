// Package apirules is the one statement of the Messages API's rules, those
// the API answers with 400 when broken: for a request's messages (memory
// keeps its history within them, anthropictest rejects requests that break
// them), for a final assistant turn, for bound thinking blocks and for
// sampling parameters. It also names the API's error types, which llm reads
// and anthropictest writes, marks a tool input that is not JSON, and holds
// the JSON grammar the module reads with ([Lenient]). It works on its own
// small view of a message, because anthropictest must not import llm, whose
// own tests use anthropictest.
package apirules

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
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

// A Message is what the rules need of a message.
type Message struct {
	Role    string
	Content []Block
}

// A Block is what the rules need of a content block. Fields a block's type
// does not have are zero.
type Block struct {
	Type      string
	Text      string          // text
	ID, Name  string          // tool_use
	Input     json.RawMessage // tool_use; nil when absent
	ToolUseID string          // tool_result
	Signature string          // thinking; redacted_thinking keeps Data
	Data      string          // redacted_thinking
	Content   []Block         // tool_result
}

// A Violation is one way messages break a rule. Message, Block and Item
// locate it: the message, its content block, and the block inside a
// tool_result; -1 where it is not that precise. Field names the offending
// field, if any. The rules, as Rule names them: no-messages, role,
// first-user, empty-content, empty-text, trailing-whitespace, block-type,
// block-role, tool-use-id, tool-input, tool-unanswered, tool-result-first,
// tool-result-once, tool-result-orphan, thinking-signature.
type Violation struct {
	Rule                 string
	Message, Block, Item int
	Field                string
	Msg                  string
}

// Check returns every violation of the rules in msgs: those of the
// messages and their blocks in message order, then the tool pairing's.
//
// Consecutive messages of one role are allowed, because the API merges them
// into one turn, and the tool rules apply to the merged turns: a tool_use
// is answered at the start of the user turn after its assistant turn. A
// final assistant message is a prefill: it may be empty, but may not end in
// whitespace. A message of another role breaks the "role" rule (the fake
// API, anthropictest, holds mid-conversation system messages to their own).
func Check(msgs []Message) []Violation {
	var c checker
	if len(msgs) == 0 {
		c.add("no-messages", -1, -1, "", "at least one message is required")
		return c.vs
	}
	if msgs[0].Role != "user" && !opensWithCompaction(msgs[0]) {
		c.add("first-user", 0, -1, "role", "the first message must be a user message, not %q", msgs[0].Role)
	}
	ids := map[string]int{} // tool_use id → message of its first use
	for i, m := range msgs {
		last := i == len(msgs)-1
		if m.Role != "user" && m.Role != "assistant" {
			c.add("role", i, -1, "role", "unknown role %q: use user or assistant (system goes in the system field)", m.Role)
		}
		if len(m.Content) == 0 && !(last && m.Role == "assistant") {
			c.add("empty-content", i, -1, "content", "empty content: only a final assistant message may be empty")
		}
		for j, b := range m.Content {
			c.block(i, j, m.Role, b, ids)
		}
		if n := len(m.Content); last && m.Role == "assistant" && n > 0 && m.Content[n-1].Type == "text" {
			if t := m.Content[n-1].Text; t != strings.TrimRightFunc(t, unicode.IsSpace) {
				c.add("trailing-whitespace", i, n-1, "", "a final assistant message cannot end with whitespace")
			}
		}
	}
	c.pairs(msgs)
	return c.vs
}

type checker struct{ vs []Violation }

func (c *checker) add(rule string, msg, block int, field, format string, args ...any) {
	c.vs = append(c.vs, Violation{Rule: rule, Message: msg, Block: block, Item: -1, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// assistantOnly and userOnly are the blocks only one role may hold.
var (
	assistantOnly = map[string]bool{"tool_use": true, "thinking": true, "redacted_thinking": true}
	userOnly      = map[string]bool{"tool_result": true, "image": true, "document": true}
)

func (c *checker) block(i, j int, role string, b Block, ids map[string]int) {
	switch {
	case b.Type == "":
		c.add("block-type", i, j, "type", "a content block needs a type")
	case !AllowedIn(role, b.Type):
		c.add("block-role", i, j, "type", "a %s block cannot be in a %s message", b.Type, role)
	}
	switch b.Type {
	case "text":
		if IsBlank(b.Text) {
			c.add("empty-text", i, j, "", "text content blocks must contain non-whitespace text")
		}
	case "tool_use":
		switch first, seen := ids[b.ID]; {
		case !ValidID(b.ID):
			c.add("tool-use-id", i, j, "id", "tool_use id %q must match ^[a-zA-Z0-9_-]+$", b.ID)
		case seen:
			c.add("tool-use-id", i, j, "id", "tool_use id %q is already used in message %d", b.ID, first)
		case b.Name == "":
			c.add("tool-use-id", i, j, "name", "tool_use %q names no tool", b.ID)
		default:
			ids[b.ID] = i
		}
		if ok, _ := IsObject(b.Input); !ok {
			got := "nothing"
			if b.Input != nil {
				got = fmt.Sprintf("%.40s", bytes.TrimSpace(b.Input))
			}
			c.add("tool-input", i, j, "input", "tool_use input must be a JSON object, got %s", got)
		}
	case "tool_result":
		for k, x := range b.Content {
			if x.Type == "text" && IsBlank(x.Text) {
				c.add("empty-text", i, j, "", "text content blocks must contain non-whitespace text")
				c.vs[len(c.vs)-1].Item = k
			}
		}
	case "thinking":
		if b.Signature == "" {
			c.add("thinking-signature", i, j, "signature", "thinking blocks must keep their signature")
		}
	case "redacted_thinking":
		if b.Data == "" {
			c.add("thinking-signature", i, j, "data", "redacted_thinking blocks must keep their data")
		}
	}
}

// AllowedIn reports whether a message of role may hold a block of type
// typ: tool_use and thinking only the assistant's, tool_result, image and
// document only the user's.
func AllowedIn(role, typ string) bool {
	return !(assistantOnly[typ] && role == "user" || userOnly[typ] && role == "assistant")
}

// pairs checks that each assistant turn's tool_use blocks are answered,
// once each, by the tool_result blocks that open the next user turn. A turn
// is a run of consecutive messages of one role, as the API merges them.
func (c *checker) pairs(msgs []Message) {
	// By id: the tool_use blocks of the assistant turn before, and the
	// tool_result blocks of the user turn after. Two maps, refilled, not one
	// per turn: memory checks its history before every request.
	asked, answered := map[string]int{}, map[string]int{}
	for from, to := 0, 0; from < len(msgs); from = to {
		to = turnEnd(msgs, from)
		switch msgs[from].Role {
		case "assistant":
			next, end := to < len(msgs) && msgs[to].Role == "user", to
			if next {
				end = turnEnd(msgs, to)
			}
			tally(answered, msgs[to:end], "tool_result")
			tally(asked, msgs[from:to], "tool_use")
			for i := from; i < to; i++ {
				for j, b := range msgs[i].Content {
					if b.Type != "tool_use" || b.ID == "" {
						continue
					}
					switch n := answered[b.ID]; {
					case !next:
						c.add("tool-unanswered", i, j, "", "tool_use %q has no tool_result: no user message follows", b.ID)
					case n == 0:
						c.add("tool-unanswered", i, j, "", "tool_use %q has no tool_result in the next user message", b.ID)
					case n > 1:
						c.add("tool-result-once", i, j, "", "tool_use %q is answered by %d tool_results; it needs exactly one", b.ID, n)
					}
				}
			}
			continue // asked is the next turn's
		case "user":
			leading := true
			for i := from; i < to; i++ {
				for j, b := range msgs[i].Content {
					switch {
					case b.Type != "tool_result":
						leading = false
					case asked[b.ToolUseID] == 0:
						c.add("tool-result-orphan", i, j, "", "tool_result for %q answers no tool_use of the assistant message before it", b.ToolUseID)
					case !leading:
						c.add("tool-result-first", i, j, "", "tool_result for %q must come before any other block of the user message", b.ToolUseID)
					}
				}
			}
		}
		clear(asked)
	}
}

// turnEnd returns the end of the turn that starts at msgs[i].
func turnEnd(msgs []Message, i int) int {
	j := i + 1
	for j < len(msgs) && msgs[j].Role == msgs[i].Role {
		j++
	}
	return j
}

// tally refills n with the count of msgs' blocks of type typ by id.
func tally(n map[string]int, msgs []Message, typ string) {
	clear(n)
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == typ {
				n[cmp.Or(b.ToolUseID, b.ID)]++
			}
		}
	}
}

// ValidID reports whether id matches the API's pattern for tool_use ids.
var ValidID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`).MatchString

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
