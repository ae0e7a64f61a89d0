package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// ErrInvalid is wrapped by the errors of [History.Validate] and
// [ValidateMessages].
var ErrInvalid = errors.New("memory: history breaks the API's rules")

// Interrupted is the content of the synthetic result that [History.Repair]
// gives a tool call that never got one.
const Interrupted = "not executed: interrupted"

// Validate checks the history against the Messages API's structural rules
// (see [ValidateMessages]). The error wraps [ErrInvalid] and lists every
// violation.
func (h *History) Validate() error {
	msgs := make([]llm.Message, len(h.entries))
	for i, e := range h.entries {
		msgs[i] = e.msg
	}
	return ValidateMessages(msgs)
}

// ValidateMessages checks msgs against the Messages API's structural rules,
// and returns an error wrapping [ErrInvalid] that lists every violation:
//
//   - there is at least one message, and the first is a user message;
//   - roles are user or assistant, and alternate (the API would merge two
//     in a row, which moves tool results away from the front);
//   - no message is empty, and no text block is blank;
//   - user messages hold no thinking, redacted thinking or tool_use blocks;
//     assistant messages hold no tool_result or image blocks;
//   - thinking blocks carry their signature;
//   - every tool_use has a valid id (letters, digits, _ and -), unique in
//     the history, a name, and a JSON object as input;
//   - every tool_use is answered exactly once by a tool_result in the next
//     message, which must be a user message;
//   - every tool_result answers a tool_use of the message just before it,
//     and tool_result blocks come before any other block.
//
// A final assistant message without tool_use is allowed: the API reads it as
// a prefill, and the agent appends the next user message before sending.
func ValidateMessages(msgs []llm.Message) error {
	ps := problems(msgs)
	if len(ps) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(ps, "; "))
}

func problems(msgs []llm.Message) []string {
	var ps []string
	add := func(i int, format string, args ...any) {
		ps = append(ps, fmt.Sprintf("message %d: ", i)+fmt.Sprintf(format, args...))
	}
	if len(msgs) == 0 {
		return []string{"no messages"}
	}
	ids := map[string]bool{}
	answered := map[string]bool{}
	var uses []string // the tool_use ids the previous message asks for
	for i, m := range msgs {
		if m.Role != llm.User && m.Role != llm.Assistant {
			add(i, "unknown role %q", m.Role)
			uses = nil
			continue
		}
		if i == 0 && m.Role != llm.User {
			add(i, "the first message must be a user message")
		}
		if i > 0 && m.Role == msgs[i-1].Role {
			add(i, "two %s messages in a row", m.Role)
		}
		if len(m.Content) == 0 {
			add(i, "empty content")
		}
		clear(answered)
		other := false
		for j, b := range m.Content {
			if err := checkBlock(m.Role, b); err != nil {
				add(i, "block %d: %v", j, err)
			}
			switch b := b.(type) {
			case llm.ToolUse:
				if ids[b.ID] {
					add(i, "block %d: duplicate tool_use id %q", j, b.ID)
				}
				ids[b.ID] = true
			case llm.ToolResult:
				if m.Role != llm.User {
					break
				}
				switch {
				case other:
					add(i, "block %d: tool_result after other content; tool results must come first", j)
				case answered[b.ToolUseID]:
					add(i, "block %d: second tool_result for %q", j, b.ToolUseID)
				case !slices.Contains(uses, b.ToolUseID):
					add(i, "block %d: tool_result for %q answers no tool_use of the previous message", j, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
			}
			if _, ok := b.(llm.ToolResult); !ok {
				other = true
			}
		}
		uses = uses[:0]
		if m.Role == llm.Assistant {
			uses = appendToolUseIDs(uses, m)
		}
		for _, id := range uses {
			switch {
			case i+1 == len(msgs):
				add(i, "tool_use %q is not answered: no message follows", id)
			case msgs[i+1].Role != llm.User:
				add(i, "tool_use %q is not answered: the next message is not a user message", id)
			case !hasResult(msgs[i+1], id):
				add(i, "tool_use %q is not answered in the next message", id)
			}
		}
	}
	return ps
}

// checkBlock checks the rules of a single block in a message of role.
func checkBlock(role llm.Role, b llm.Block) error {
	switch b := b.(type) {
	case llm.Text:
		if isBlank(b.Text) {
			return errors.New("blank text")
		}
	case llm.Thinking:
		if role != llm.Assistant {
			return errors.New("thinking in a user message")
		}
		if b.Signature == "" {
			return errors.New("thinking without its signature")
		}
	case llm.RedactedThinking:
		if role != llm.Assistant {
			return errors.New("redacted_thinking in a user message")
		}
		if b.Data == "" {
			return errors.New("redacted_thinking without data")
		}
	case llm.ToolUse:
		if role != llm.Assistant {
			return errors.New("tool_use in a user message")
		}
		if !validID(b.ID) {
			return fmt.Errorf("tool_use id %q is not [a-zA-Z0-9_-]+", b.ID)
		}
		if b.Name == "" {
			return fmt.Errorf("tool_use %q has no name", b.ID)
		}
		if !isObject(b.Input) {
			return fmt.Errorf("tool_use %q input is not a JSON object", b.ID)
		}
	case llm.ToolResult:
		if role != llm.User {
			return errors.New("tool_result in an assistant message")
		}
		for k, c := range b.Content {
			switch c := c.(type) {
			case llm.Text:
				if isBlank(c.Text) {
					return fmt.Errorf("tool_result %q: content %d: blank text", b.ToolUseID, k)
				}
			case llm.Image, llm.RawBlock:
			default:
				return fmt.Errorf("tool_result %q: content %d: %s block not allowed", b.ToolUseID, k, c.BlockType())
			}
		}
	case llm.Image:
		if role != llm.User {
			return errors.New("image in an assistant message")
		}
	case llm.RawBlock:
		if !json.Valid(b.JSON) {
			return fmt.Errorf("raw %s block holds invalid JSON", b.Type)
		}
	case nil:
		return errors.New("nil block")
	}
	return nil
}

// validID reports whether id matches ^[a-zA-Z0-9_-]+$, the API's pattern
// for tool_use ids.
func validID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isObject reports whether in is a JSON object. Empty input means {}, as
// llm marshals it.
func isObject(in json.RawMessage) bool {
	in = bytes.TrimSpace(in)
	if len(in) == 0 {
		return true
	}
	return in[0] == '{' && json.Valid(in)
}

func toolUseIDs(m llm.Message) map[string]bool {
	ids := map[string]bool{}
	for _, b := range m.Content {
		if u, ok := b.(llm.ToolUse); ok {
			ids[u.ID] = true
		}
	}
	return ids
}

func toolUseOrder(m llm.Message) []string { return appendToolUseIDs(nil, m) }

func appendToolUseIDs(ids []string, m llm.Message) []string {
	for _, b := range m.Content {
		if u, ok := b.(llm.ToolUse); ok {
			ids = append(ids, u.ID)
		}
	}
	return ids
}

func hasResult(m llm.Message, id string) bool {
	for _, b := range m.Content {
		if r, ok := b.(llm.ToolResult); ok && r.ToolUseID == id {
			return true
		}
	}
	return false
}
