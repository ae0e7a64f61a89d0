package anthropictest

import (
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
)

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

// checkMessages returns apirules.Check's violations of msgs with system
// messages allowed where the API takes them: not an unknown role, but held
// to the blocks and the places above.
func checkMessages(msgs []apirules.Message) []apirules.Violation {
	var vs []apirules.Violation
	for _, v := range apirules.Check(msgs) {
		switch {
		case v.Rule == "role" && msgs[v.Message].Role == "system":
			continue
		case v.Rule == "first-user" && msgs[0].Role == "system":
			v.Msg += ": a system message cannot come first; use the top-level system field"
		}
		vs = append(vs, v)
	}
	for i, m := range msgs {
		for j, b := range m.Content {
			if m.Role == "system" && b.Type != "" && !systemBlocks[b.Type] {
				vs = append(vs, apirules.Violation{Rule: "block-role", Message: i, Block: j, Item: -1, Field: "type", Msg: "a " + b.Type + " block cannot be in a system message"})
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
			vs = append(vs, apirules.Violation{Rule: "system-placement", Message: from, Block: -1, Item: -1, Field: "role",
				Msg: "a system message must follow a user turn (or an assistant turn ending in a server tool result) and be last or followed by an assistant turn"})
		}
	}
	return vs
}

// endsInServerResult reports whether m, an assistant message, ends with a
// server tool's result: a turn paused mid-loop.
func endsInServerResult(m apirules.Message) bool {
	n := len(m.Content)
	return n > 0 && m.Content[n-1].Type != "tool_result" && strings.HasSuffix(m.Content[n-1].Type, "_tool_result")
}
