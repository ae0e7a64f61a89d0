package memory

import "github.com/agentloop/agentloop/llm"

// This file is the server-side half of compaction: which context edits a
// request asks the API for, and what the history keeps when the API has
// compacted it. Config.Compaction chooses; compact.go is the client side.

// minServerTrigger is the smallest compaction trigger the API accepts.
const minServerTrigger = 50_000

// mode returns the compaction strategy in effect: Config.Compaction, or
// for "" the model's best, "server" where it compacts on the server and
// "client" elsewhere.
func (h *History) mode() string {
	if m := h.cfg.Compaction; m != "" {
		return m
	}
	if info, _ := llm.LookupModel(h.cfg.Model); info.ServerCompaction {
		return "server"
	}
	return "client"
}

// Strategy returns the compaction strategy in effect, as [Config].Compaction
// names them: "server", "client" or "off".
func (h *History) Strategy() string { return h.mode() }

// ContextManagement returns the context_management the next request should
// send, or nil for none. Context editing comes first, as the cheapest step:
// once the history passes half of Config.ContextLimit, the API clears old
// tool results (and, when thinking is on, old turns' thinking) from what
// the model reads, at least a tenth of the limit at a time so that the
// broken prompt cache is worth it. In "server" mode the API then compacts
// at 80% of the limit (at least 50,000 tokens, the API's minimum), writing
// a compaction block the history keeps (see [History.AppendAssistant]).
// The client-side [History.Compact] stays the fallback at ContextLimit.
func (h *History) ContextManagement(thinking bool) *llm.ContextManagement {
	info, _ := llm.LookupModel(h.cfg.Model)
	mode, limit := h.mode(), h.cfg.ContextLimit
	var cm llm.ContextManagement
	// An explicit "client" asks for the client's own compaction alone.
	if mode == "server" || h.cfg.Compaction == "" && info.ContextEditing {
		if thinking && h.Tokens() > limit/2 {
			// The API wants clear_thinking first. Kept below the trigger,
			// every turn's thinking stays and with it the prompt cache.
			cm.Edits = append(cm.Edits, llm.ContextEdit{Type: llm.ClearThinking,
				Keep: &llm.EditLimit{Type: "thinking_turns", Value: 1}})
		}
		cm.Edits = append(cm.Edits, llm.ContextEdit{Type: llm.ClearToolUses,
			Trigger:      &llm.EditLimit{Type: "input_tokens", Value: max(1, limit/2)},
			Keep:         &llm.EditLimit{Type: "tool_uses", Value: h.cfg.KeepRecent},
			ClearAtLeast: &llm.EditLimit{Type: "input_tokens", Value: max(1, limit/10)}})
	}
	if mode == "server" {
		cm.Edits = append(cm.Edits, llm.ContextEdit{Type: llm.Compact,
			Trigger: &llm.EditLimit{Type: "input_tokens", Value: max(minServerTrigger, limit*8/10)}})
	}
	if len(cm.Edits) == 0 {
		return nil
	}
	return &cm
}

// serverNote stands first in a history the server compacted, so that the
// history still opens with a user message; the API drops it, with
// everything else before the compaction block, from the prompt.
const serverNote = "[Earlier turns were compacted on the server; the compaction block that follows holds their summary.]"

// serverCompacted applies a compaction block in msg, a turn to append:
// the block replaces every message and block before it, as it does for
// the API, so that the history (and a session file) keeps only what the
// model still reads and counts it right. The block itself is kept byte for
// byte. It reports whether msg held a block.
func (h *History) serverCompacted(msg llm.Message) (llm.Message, bool) {
	k := -1
	for i, b := range msg.Content {
		if b.BlockType() == llm.CompactionBlock {
			k = i
		}
	}
	if k < 0 {
		return msg, false
	}
	msg.Content = msg.Content[k:]
	h.entries = append(h.entries[:0:0], measured(entry{msg: userText(serverNote), summary: true}))
	return msg, true
}
