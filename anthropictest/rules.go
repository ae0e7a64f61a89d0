package anthropictest

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
	"unicode"

	"github.com/agentloop/agentloop/internal/apirules"
)

// A finding is one way a request's messages break a rule. message, block
// and item locate it: the message, its content block, and the block inside
// a tool_result; -1 where it is not that precise. field names the
// offending field, if any; path writes the location in the API's notation.
type finding struct {
	rule                 string
	message, block, item int
	field                string
	msg                  string
}

// checkRules returns every way msgs break the rules for messages (as
// CheckRequest names them), those of the messages and their blocks in
// message order, then the tool pairing's.
//
// Consecutive messages of one role are allowed, because the API merges them
// into one turn, and the tool rules apply to the merged turns: a tool_use
// is answered at the start of the user turn after its assistant turn. A
// final assistant message is a prefill: it may be empty, but may not end in
// whitespace. A message of another role breaks the "role" rule
// (checkMessages holds mid-conversation system messages to their own).
func checkRules(msgs []Message) []finding {
	var c checker
	if len(msgs) == 0 {
		c.add("no-messages", -1, -1, "", "at least one message is required")
		return c.fs
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
	return c.fs
}

type checker struct{ fs []finding }

func (c *checker) add(rule string, msg, block int, field, format string, args ...any) {
	c.fs = append(c.fs, finding{rule: rule, message: msg, block: block, item: -1, field: field, msg: fmt.Sprintf(format, args...)})
}

func (c *checker) block(i, j int, role string, b Block, ids map[string]int) {
	switch {
	case b.Type == "":
		c.add("block-type", i, j, "type", "a content block needs a type")
	case !apirules.AllowedIn(role, b.Type):
		c.add("block-role", i, j, "type", "a %s block cannot be in a %s message", b.Type, role)
	}
	switch b.Type {
	case "text":
		if apirules.IsBlank(b.Text) {
			c.add("empty-text", i, j, "", "text content blocks must contain non-whitespace text")
		}
	case "tool_use":
		switch first, seen := ids[b.ID]; {
		case !apirules.ValidID(b.ID):
			c.add("tool-use-id", i, j, "id", "tool_use id %q must match ^[a-zA-Z0-9_-]+$", b.ID)
		case seen:
			c.add("tool-use-id", i, j, "id", "tool_use id %q is already used in message %d", b.ID, first)
		case b.Name == "":
			c.add("tool-use-id", i, j, "name", "tool_use %q names no tool", b.ID)
		default:
			ids[b.ID] = i
		}
		if ok, _ := apirules.IsObject(b.Input); !ok {
			got := "nothing"
			if b.Input != nil {
				got = fmt.Sprintf("%.40s", bytes.TrimSpace(b.Input))
			}
			c.add("tool-input", i, j, "input", "tool_use input must be a JSON object, got %s", got)
		}
	case "tool_result":
		for k, x := range b.Content {
			if x.Type == "text" && apirules.IsBlank(x.Text) && !b.StringContent { // a string's blankness is not checked
				c.add("empty-text", i, j, "", "text content blocks must contain non-whitespace text")
				c.fs[len(c.fs)-1].item = k
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

// pairs checks that each assistant turn's tool_use blocks are answered,
// once each, by the tool_result blocks that open the next user turn. A turn
// is a run of consecutive messages of one role, as the API merges them.
func (c *checker) pairs(msgs []Message) {
	// By id: the tool_use blocks of the assistant turn before, and the
	// tool_result blocks of the user turn after. Two maps, refilled, not one
	// per turn: a long conversation has many turns.
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

// opensWithCompaction reports whether m is an assistant message whose
// first block is a compaction block (see apirules.CompactionBlock): a
// conversation may open with it.
func opensWithCompaction(m Message) bool {
	return m.Role == "assistant" && len(m.Content) > 0 && m.Content[0].Type == apirules.CompactionBlock
}
