package memory

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/llm"
)

// This file is the server side of compaction: the context edits a request
// asks the API for, and what the history keeps of a compaction the API did.

// strategy returns the compaction strategy in effect: "server", "client"
// or "off" (see [Config].Compaction).
func (h *History) strategy() string {
	if m := h.cfg.Compaction; m != "" {
		return m
	}
	if info, _ := llm.LookupModel(h.cfg.Model); info.ServerCompaction {
		return "server"
	}
	return "client"
}

// ContextManagement returns the context_management of the next request,
// or nil. Context editing is the first, cheapest step: past half of
// Config.ContextLimit the API clears old tool results (and, with thinking
// on, old turns' thinking) from what the model reads, at least a tenth of
// the limit at a time, so that the prompt cache it breaks is worth it. In
// "server" mode the API then compacts at 80% of the limit (at least the
// API's minimum, 50,000 tokens); [History.AppendAssistant] keeps the block.
// [History.Compact] stays the fallback at ContextLimit.
func (h *History) ContextManagement(thinking bool) *llm.ContextManagement {
	info, _ := llm.LookupModel(h.cfg.Model)
	mode, limit := h.strategy(), h.cfg.ContextLimit
	var cm llm.ContextManagement
	// An explicit "client" asks for the client's own compaction alone.
	if mode == "server" || h.cfg.Compaction == "" && info.ContextEditing {
		if thinking && h.Tokens() > limit/2 { // below, thinking stays, and the cache with it
			cm.Edits = append(cm.Edits, llm.ContextEdit{Type: llm.ClearThinking, // the API wants it first
				Keep: &llm.EditLimit{Type: "thinking_turns", Value: 1}})
		}
		cm.Edits = append(cm.Edits, llm.ContextEdit{Type: llm.ClearToolUses,
			Trigger:      &llm.EditLimit{Type: "input_tokens", Value: max(1, limit/2)},
			Keep:         &llm.EditLimit{Type: "tool_uses", Value: h.cfg.KeepRecent},
			ClearAtLeast: &llm.EditLimit{Type: "input_tokens", Value: max(1, limit/10)}})
	}
	if mode == "server" {
		cm.Edits = append(cm.Edits, llm.ContextEdit{Type: llm.Compact,
			Trigger: &llm.EditLimit{Type: "input_tokens", Value: max(50_000, limit*8/10)}})
	}
	if len(cm.Edits) == 0 {
		return nil
	}
	return &cm
}

// serverNote opens a history the server compacted, which must still open
// with a user message; the API drops it, as all before the block.
const serverNote = "[Earlier turns were compacted on the server; the compaction block that follows holds their summary.]"

// serverCompacted applies a compaction block in msg, a turn to append: as
// for the API, the block replaces every message and block before it, so
// that the history and its session file keep what the model still reads,
// and count it right. The block is kept byte for byte. It reports whether
// msg held one.
func (h *History) serverCompacted(msg llm.Message) (llm.Message, bool) {
	k := -1
	for i, b := range msg.Content {
		if r, ok := b.(llm.RawBlock); ok && r.Type == llm.CompactionBlock { // b may be nil
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

// serverCleared reports whether context editing may have cleared tool
// results from the prompt of the turn being appended: past its trigger, the
// turn's input measures less than the history holds, and must not teach
// the estimator its characters per token.
func (h *History) serverCleared() bool {
	cm := h.ContextManagement(false)
	return cm != nil && cm.Edits[0].Type == llm.ClearToolUses && h.Tokens() > h.cfg.ContextLimit/2
}

// serverSummary has the server summarise the whole history, when model
// and mode allow: its compaction block (kept as serverCompacted keeps one)
// replaces every message. It returns how many (zero when it did not ask).
func (h *History) serverSummary(ctx context.Context, m llm.Model) (int, llm.Usage, error) {
	if info, _ := llm.LookupModel(h.cfg.Model); !info.ServerCompaction || h.strategy() != "server" {
		return 0, llm.Usage{}, nil
	}
	req := h.request()
	req.Cache, req.Summarize = true, &llm.Summarize{} // no context_management: the API refuses both
	reply, u, err := collect(ctx, m, req)
	if err != nil {
		return 0, u, fmt.Errorf("memory: server compaction: %w", err)
	}
	n := len(h.entries)
	if reply, ok := h.serverCompacted(reply); ok {
		// No exact count: u's input is the history before the compaction.
		h.push(entry{msg: reply, usage: u, model: h.cfg.Model})
		return n, u, nil
	}
	return 0, u, fmt.Errorf("memory: server compaction: the reply holds no compaction block")
}
