package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// interruptedResult is the content of the synthetic result that
// [History.Repair] gives a tool call that never got one.
const interruptedResult = "not executed: interrupted"

// Validate checks the history, as the next request would send it, against
// the Messages API's rules: the same rules anthropictest.CheckRequest
// enforces, so that a valid history is never answered with a 400 for its
// structure. The error lists every violation.
func (h *History) Validate() error {
	vs := h.violations()
	if len(vs) == 0 {
		return nil
	}
	ps := make([]string, len(vs))
	for i, v := range vs {
		if ps[i] = fmt.Sprintf("message %d", v.Message); v.Block >= 0 {
			ps[i] += fmt.Sprintf(", block %d", v.Block)
		}
		ps[i] += fmt.Sprintf(": %s [%s]", v.Msg, v.Rule)
	}
	return errors.New("memory: history breaks the API's rules: " + strings.Join(ps, "; "))
}

func (h *History) violations() []apirules.Violation {
	if len(h.entries) == 0 {
		return nil // nothing to send yet; the next prompt starts a valid history
	}
	msgs := make([]apirules.Message, len(h.entries))
	for i, e := range h.entries {
		msgs[i] = apirules.Message{Role: string(e.msg.Role), Content: ruleBlocks(e.msg.Content)}
	}
	return apirules.Check(msgs)
}

func ruleBlocks(bs []llm.Block) []apirules.Block {
	out := make([]apirules.Block, len(bs))
	for i, b := range bs {
		out[i] = ruleBlock(b)
	}
	return out
}

func ruleBlock(b llm.Block) apirules.Block {
	switch b := b.(type) {
	case llm.Text:
		return apirules.Block{Type: "text", Text: b.Text}
	case llm.ToolUse:
		in := b.Input
		if len(in) == 0 {
			in = []byte("{}") // as llm marshals it
		}
		return apirules.Block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: in}
	case llm.ToolResult:
		return apirules.Block{Type: "tool_result", ToolUseID: b.ToolUseID, Content: ruleBlocks(b.Content)}
	case llm.Thinking:
		return apirules.Block{Type: "thinking", Signature: b.Signature}
	case llm.RedactedThinking:
		return apirules.Block{Type: "redacted_thinking", Data: b.Data}
	case llm.RawBlock:
		if !json.Valid(b.JSON) {
			return apirules.Block{} // no type: the rules reject it
		}
	case nil:
		return apirules.Block{}
	}
	return apirules.Block{Type: b.BlockType()}
}
