package memory

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// slot is an entry during repair. orig is the entry's index before repair,
// or -1 once repair has changed it, so that exact counts survive for the
// untouched prefix.
type slot struct {
	e    entry
	orig int
}

// Repair fixes what can be fixed so that [History.Validate] passes, and
// returns one line for each kind of fix it made. The agent calls it before
// every request and after every run; [Load] calls it too. In order, it:
//
//   - drops messages with an unknown role, and blocks the API rejects: blank
//     text, unsigned thinking, blocks in the wrong role's message, tool_use
//     blocks with a bad or duplicate id, blocks without a type; then
//     messages left empty;
//   - drops a trailing assistant turn cut off inside a tool input (by
//     max_tokens or a crash); elsewhere such an input becomes {};
//   - merges consecutive messages of one role, and drops assistant
//     messages before the first user message;
//   - keeps, of the tool results that open each user turn, those that
//     answer the assistant turn before it, once each, and answers every
//     other tool_use of that turn with a synthetic is_error result, "not
//     executed: interrupted", in a new user message if needed;
//   - trims the whitespace that ends a final assistant message.
//
// An empty history stays empty: there is nothing to repair it with.
func (h *History) Repair() []string {
	// The agent calls Repair before every request, and the history is
	// almost always valid: check first, cheaply.
	if len(h.violations()) == 0 {
		return nil
	}
	var did []string
	count := map[string]int{}
	note := func(what string) {
		if count[what] == 0 {
			did = append(did, what)
		}
		count[what]++
	}
	s := pair(merge(clean(h.entries, note), note), note)
	trimmed := trimFinal(s, note)

	changedAt := len(s)
	for i, sl := range s {
		if sl.orig != i {
			changedAt = i
			break
		}
	}
	if changedAt == len(s) && len(s) == len(h.entries) && !trimmed {
		return nil
	}
	h.entries = h.entries[:0:0]
	for _, sl := range s {
		if sl.orig < 0 {
			sl.e.chars, sl.e.imageTokens = measure(sl.e.msg)
		}
		h.entries = append(h.entries, sl.e)
	}
	h.changed(changedAt)
	out := make([]string, len(did))
	for i, what := range did {
		out[i] = fmt.Sprintf("%s (%d)", what, count[what])
	}
	h.cfg.Logger.Info("memory: repaired history", "fixes", out)
	return out
}

// clean drops unknown roles, rejected blocks, messages left empty, and a
// final assistant turn cut off inside a tool input.
func clean(es []entry, note func(string)) []slot {
	var out []slot
	ids := map[string]bool{}
	for i, e := range es {
		m := e.msg
		if m.Role != llm.User && m.Role != llm.Assistant {
			note("dropped messages with an unknown role")
			continue
		}
		sl := slot{e, i}
		kept := make([]llm.Block, 0, len(m.Content))
		for _, b := range m.Content {
			nb, ok, what := cleanBlock(m.Role, b, ids, i == len(es)-1)
			if what != "" {
				note(what)
				sl.orig = -1
			}
			if ok {
				kept = append(kept, nb)
			}
		}
		if sl.orig < 0 {
			sl.e.msg = llm.Message{Role: m.Role, Content: kept}
		}
		if len(kept) == 0 {
			note("dropped empty messages")
			continue
		}
		out = append(out, sl)
	}
	if n := len(out); n > 0 && out[n-1].e.msg.Role == llm.Assistant && slices.ContainsFunc(out[n-1].e.msg.Content, func(b llm.Block) bool {
		u, ok := b.(llm.ToolUse)
		return ok && !apirules.IsObject(ruleBlock(u).Input)
	}) {
		note("dropped a trailing incomplete assistant turn")
		out = out[:n-1]
	}
	return out
}

// cleanBlock returns b fixed, whether to keep it, and what it did, if
// anything. A tool_use whose input is not an object is kept unchanged in
// the last message, for clean to drop the turn.
func cleanBlock(role llm.Role, b llm.Block, ids map[string]bool, last bool) (llm.Block, bool, string) {
	rb := ruleBlock(b)
	switch {
	case rb.Type == "":
		return nil, false, "dropped blocks without a type"
	case !apirules.AllowedIn(string(role), rb.Type):
		return nil, false, "dropped " + rb.Type + " blocks from " + string(role) + " messages"
	}
	switch b := b.(type) {
	case llm.Text:
		if apirules.IsBlank(b.Text) {
			return nil, false, "dropped blank text"
		}
	case llm.Thinking, llm.RedactedThinking:
		if rb.Signature == "" && rb.Data == "" {
			return nil, false, "dropped unsigned thinking"
		}
	case llm.ToolUse:
		if !apirules.ValidID(b.ID) || ids[b.ID] || b.Name == "" {
			return nil, false, "dropped tool_use blocks with a bad or duplicate id or no name"
		}
		ids[b.ID] = true
		if !apirules.IsObject(rb.Input) && !last {
			b.Input = []byte("{}")
			return b, true, "replaced tool inputs that were not JSON objects with {}"
		}
	case llm.ToolResult:
		kept := slices.DeleteFunc(slices.Clone(b.Content), func(c llm.Block) bool {
			switch c := c.(type) {
			case llm.Text:
				return apirules.IsBlank(c.Text)
			case llm.Image, llm.RawBlock:
				return ruleBlock(c).Type == ""
			}
			return true
		})
		if len(kept) != len(b.Content) {
			b.Content = kept
			return b, true, "dropped blank or misplaced content from tool results"
		}
	}
	return b, true, ""
}

// merge merges consecutive messages of one role, as the API would, and
// drops assistant messages before the first user message.
func merge(s []slot, note func(string)) []slot {
	out := s[:0]
	for _, sl := range s {
		switch n := len(out); {
		case n == 0 && sl.e.msg.Role == llm.Assistant:
			note("dropped assistant messages before the first user message")
		case n > 0 && out[n-1].e.msg.Role == sl.e.msg.Role:
			mergeInto(&out[n-1], sl, note)
		default:
			out = append(out, sl)
		}
	}
	return out
}

func mergeInto(prev *slot, sl slot, note func(string)) {
	role := sl.e.msg.Role
	content := append(slices.Clip(prev.e.msg.Content), sl.e.msg.Content...)
	if role == llm.User {
		content = resultsFirst(content)
	}
	prev.e.msg = llm.Message{Role: role, Content: content}
	prev.e.usage = prev.e.usage.Add(sl.e.usage)
	prev.e.summary = prev.e.summary || sl.e.summary
	prev.orig = -1
	note("merged consecutive " + string(role) + " messages")
}

// pair makes each user turn open with exactly one result for every
// tool_use of the assistant turn before it, and no other result. It takes
// alternating turns, and keeps them alternating and user-first: a user turn
// left empty is dropped, and the assistant turns around it merged, or the
// one after it dropped if it was the first.
func pair(s []slot, note func(string)) []slot {
	out := s[:0]
	var uses []string // the tool_use ids of the last assistant turn kept
	for _, sl := range s {
		n := len(out)
		if sl.e.msg.Role == llm.Assistant {
			switch {
			case n == 0: // the user turn before it was emptied
				note("dropped assistant messages before the first user message")
				continue
			case out[n-1].e.msg.Role == llm.Assistant:
				mergeInto(&out[n-1], sl, note)
			default:
				out = append(out, sl)
			}
			uses = toolUses(out[len(out)-1].e.msg)
			continue
		}
		if sl = answer(sl, uses, note); len(sl.e.msg.Content) == 0 {
			note("dropped empty messages")
			continue
		}
		out, uses = append(out, sl), nil
	}
	if len(uses) > 0 {
		out = append(out, answer(slot{entry{msg: llm.Message{Role: llm.User}}, -1}, uses, note))
	}
	return out
}

// answer returns the user turn sl with the results it holds for uses, once
// each and first, a synthetic result for each use it lacks, and no other
// result.
func answer(sl slot, uses []string, note func(string)) slot {
	var results, rest []llm.Block
	seen := map[string]bool{}
	for _, b := range sl.e.msg.Content {
		r, ok := b.(llm.ToolResult)
		switch {
		case !ok:
			rest = append(rest, b)
		case !slices.Contains(uses, r.ToolUseID) || seen[r.ToolUseID]:
			note("dropped orphan tool results")
		default:
			seen[r.ToolUseID] = true
			results = append(results, b)
		}
	}
	for _, id := range uses {
		if !seen[id] {
			note("answered interrupted tool calls")
			results = append(results, llm.ToolResult{ToolUseID: id, IsError: true, Content: []llm.Block{llm.Text{Text: interruptedResult}}})
		}
	}
	content := append(results, rest...)
	if !slices.EqualFunc(content, sl.e.msg.Content, func(a, b llm.Block) bool { return blockID(a) == blockID(b) }) {
		sl.e.msg = llm.Message{Role: llm.User, Content: content}
		sl.orig = -1
	}
	return sl
}

// blockID tells blocks apart well enough for answer to see a change.
func blockID(b llm.Block) string {
	if r, ok := b.(llm.ToolResult); ok {
		return "tool_result " + r.ToolUseID
	}
	return b.BlockType()
}

// resultsFirst moves tool_result blocks to the front, keeping order.
func resultsFirst(bs []llm.Block) []llm.Block {
	isResult := func(b llm.Block) bool { _, ok := b.(llm.ToolResult); return ok }
	out := slices.DeleteFunc(slices.Clone(bs), func(b llm.Block) bool { return !isResult(b) })
	return append(out, slices.DeleteFunc(slices.Clone(bs), isResult)...)
}

// trimFinal trims the whitespace that ends a final assistant message, which
// the API rejects in the message it resumes (a paused turn). The message's
// exact count stays: whitespace is a token at most.
func trimFinal(s []slot, note func(string)) bool {
	if len(s) == 0 || s[len(s)-1].e.msg.Role != llm.Assistant {
		return false
	}
	sl := &s[len(s)-1]
	c := sl.e.msg.Content
	t, ok := c[len(c)-1].(llm.Text)
	if trimmed := strings.TrimRightFunc(t.Text, unicode.IsSpace); ok && trimmed != t.Text {
		t.Text = trimmed
		sl.e.msg = llm.Message{Role: llm.Assistant, Content: append(slices.Clone(c[:len(c)-1]), t)}
		note("trimmed whitespace ending the final assistant message")
		return true
	}
	return false
}

// toolUses returns the tool_use ids of m, in order.
func toolUses(m llm.Message) []string {
	var ids []string
	for _, b := range m.Content {
		if u, ok := b.(llm.ToolUse); ok {
			ids = append(ids, u.ID)
		}
	}
	return ids
}
