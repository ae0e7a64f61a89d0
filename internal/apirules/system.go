package apirules

import "strings"

// A message of role "system" in messages is a mid-conversation system
// message (docs/en/build-with-claude/mid-conversation-system-messages):
// operator instructions from that point on, which leave the cached prefix
// alone. Its content is text, and tool_addition and tool_removal blocks,
// as a string or blocks. A run of them counts as one, which must follow a
// user turn (tool results count) or an assistant turn ending in a server
// tool's result, and come last or right before an assistant turn; it
// cannot open messages. Which models take one is the caller's to check.

// systemBlocks are the block types a system message may hold.
var systemBlocks = map[string]bool{"text": true, "tool_addition": true, "tool_removal": true}

// systemPlacement checks where each run of system messages stands; one
// that opens messages is left to the first-user rule.
func (c *checker) systemPlacement(msgs []Message) {
	for from, to := 0, 0; from < len(msgs); from = to {
		to = turnEnd(msgs, from)
		if msgs[from].Role != "system" || from == 0 {
			continue
		}
		prev := msgs[from-1]
		after := prev.Role == "user" || prev.Role == "assistant" && endsInServerResult(prev)
		if before := to == len(msgs) || msgs[to].Role == "assistant"; !after || !before {
			c.add("system-placement", from, -1, "role", "a system message must follow a user turn (or an assistant turn ending in a server tool result) and be last or followed by an assistant turn")
		}
	}
}

// endsInServerResult reports whether m, an assistant message, ends with a
// server tool's result: a turn paused mid-loop.
func endsInServerResult(m Message) bool {
	n := len(m.Content)
	return n > 0 && m.Content[n-1].Type != "tool_result" && strings.HasSuffix(m.Content[n-1].Type, "_tool_result")
}

// firstSystemHint says where a system message that opens messages goes.
func firstSystemHint(m Message) string {
	if m.Role == "system" {
		return ": a system message cannot come first; use the top-level system field"
	}
	return ""
}
