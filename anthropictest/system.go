package anthropictest

import "strings"

// A message of role "system" in messages is a mid-conversation system
// message (docs/en/build-with-claude/mid-conversation-system-messages):
// operator instructions from that point on, which leave the cached prefix
// alone. Its content is text, and tool_addition and tool_removal blocks,
// as a string or blocks. A run of them counts as one, which must follow a
// user turn (tool results count) or an assistant turn ending in a server
// tool's result, and come last or right before an assistant turn; it
// cannot open messages. Which models take one is strict.go's to check.
// The core never writes one, so these rules are the fake API's alone.

// systemBlocks are the block types a system message may hold.
var systemBlocks = map[string]bool{"text": true, "tool_addition": true, "tool_removal": true}

// checkMessages returns checkRules' findings in msgs with system messages
// allowed where the API takes them: not an unknown role, but held to the
// blocks and the places above.
func checkMessages(msgs []Message) []finding {
	var fs []finding
	for _, f := range checkRules(msgs) {
		switch {
		case f.rule == "role" && msgs[f.message].Role == "system":
			continue
		case f.rule == "first-user" && msgs[0].Role == "system":
			f.msg += ": a system message cannot come first; use the top-level system field"
		}
		fs = append(fs, f)
	}
	for i, m := range msgs {
		for j, b := range m.Content {
			if m.Role == "system" && b.Type != "" && !systemBlocks[b.Type] {
				fs = append(fs, finding{rule: "block-role", message: i, block: j, item: -1, field: "type", msg: "a " + b.Type + " block cannot be in a system message"})
			}
		}
	}
	// Each run of system messages, but one that opens messages, which is
	// the first-user rule's.
	for from := 1; from < len(msgs); from++ {
		if msgs[from].Role != "system" || msgs[from-1].Role == "system" {
			continue
		}
		to := from + 1
		for to < len(msgs) && msgs[to].Role == "system" {
			to++
		}
		prev := msgs[from-1]
		after := prev.Role == "user" || prev.Role == "assistant" && endsInServerResult(prev)
		if before := to == len(msgs) || msgs[to].Role == "assistant"; !after || !before {
			fs = append(fs, finding{rule: "system-placement", message: from, block: -1, item: -1, field: "role",
				msg: "a system message must follow a user turn (or an assistant turn ending in a server tool result) and be last or followed by an assistant turn"})
		}
	}
	return fs
}

// endsInServerResult reports whether m, an assistant message, ends with a
// server tool's result: a turn paused mid-loop.
func endsInServerResult(m Message) bool {
	n := len(m.Content)
	return n > 0 && m.Content[n-1].Type != "tool_result" && strings.HasSuffix(m.Content[n-1].Type, "_tool_result")
}
