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
//     blocks with a bad or duplicate id, blocks without a type;
//   - drops a trailing incomplete assistant turn: one left empty, or whose
//     tool input is not a JSON object (cut off by max_tokens or a crash);
//     elsewhere such an input becomes {};
//   - merges consecutive messages of one role, tool results first;
//   - drops tool results that answer no tool_use of the message before them,
//     and second results for the same call;
//   - answers every unanswered tool_use with a synthetic is_error result,
//     "not executed: interrupted", in a new user message if needed;
//   - drops messages left empty, and assistant messages before the first
//     user message;
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
	s := make([]slot, len(h.entries))
	for i, e := range h.entries {
		s[i] = slot{e, i}
	}
	// Each pass can expose work for the next (an emptied message makes two
	// of the same role meet), so repeat until nothing changes.
	// Every pass that notes a fix removes or merges something or completes
	// a pairing, so the loop ends; the bound is a guard.
	for range len(s) + 4 {
		before := sum(count)
		s = cleanBlocks(s, note)
		s = dropTrailingIncomplete(s, note)
		s = mergeRuns(s, llm.User, note)
		s = mergeRuns(s, llm.Assistant, note)
		s = pairResults(s, note)
		s = dropEmpty(s, note)
		s = dropLeadingAssistant(s, note)
		s = trimFinal(s, note)
		if sum(count) == before {
			break
		}
	}
	changedAt := len(s)
	for i, sl := range s {
		if sl.orig != i {
			changedAt = i
			break
		}
	}
	if changedAt == len(s) && len(s) == len(h.entries) {
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

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// cleanBlocks drops unknown roles and rejected blocks. A tool_use whose
// input is not an object is kept but marked, by a nil Input of "invalid",
// for dropTrailingIncomplete; elsewhere it becomes {}.
func cleanBlocks(s []slot, note func(string)) []slot {
	out := s[:0]
	ids := map[string]bool{}
	for i, sl := range s {
		m := sl.e.msg
		if m.Role != llm.User && m.Role != llm.Assistant {
			note("dropped messages with an unknown role")
			continue
		}
		var kept []llm.Block
		changed := false
		for _, b := range m.Content {
			nb, ok, what := cleanBlock(m.Role, b, ids, i == len(s)-1)
			if what != "" {
				note(what)
			}
			if !ok {
				changed = true
				continue
			}
			if !blockEqual(nb, b) {
				changed = true
			}
			kept = append(kept, nb)
		}
		if changed {
			sl.e.msg = llm.Message{Role: m.Role, Content: kept}
			sl.orig = -1
		}
		out = append(out, sl)
	}
	return out
}

// cleanBlock returns b fixed, whether to keep it, and what it did.
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
		if !apirules.IsObject(rb.Input) {
			if last {
				return b, true, "" // dropTrailingIncomplete drops the turn
			}
			b.Input = []byte("{}")
			return b, true, "replaced tool inputs that were not JSON objects with {}"
		}
	case llm.ToolResult:
		kept := slices.DeleteFunc(slices.Clone(b.Content), func(c llm.Block) bool {
			switch c := c.(type) {
			case llm.Text:
				return apirules.IsBlank(c.Text)
			case llm.Image:
				return false
			case llm.RawBlock:
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

func blockEqual(a, b llm.Block) bool {
	switch a := a.(type) {
	case llm.ToolUse:
		bb, ok := b.(llm.ToolUse)
		return ok && a.ID == bb.ID && string(a.Input) == string(bb.Input)
	case llm.ToolResult:
		bb, ok := b.(llm.ToolResult)
		return ok && len(a.Content) == len(bb.Content)
	}
	return true
}

// dropTrailingIncomplete drops a final assistant turn that never finished.
func dropTrailingIncomplete(s []slot, note func(string)) []slot {
	if len(s) == 0 {
		return s
	}
	last := s[len(s)-1].e.msg
	if last.Role != llm.Assistant {
		return s
	}
	incomplete := len(last.Content) == 0
	for _, b := range last.Content {
		if u, ok := b.(llm.ToolUse); ok && !apirules.IsObject(ruleBlock(u).Input) {
			incomplete = true
		}
	}
	if !incomplete {
		return s
	}
	note("dropped a trailing incomplete assistant turn")
	return s[:len(s)-1]
}

func dropLeadingAssistant(s []slot, note func(string)) []slot {
	n := 0
	for n < len(s) && s[n].e.msg.Role != llm.User {
		n++
	}
	if n > 0 {
		note("dropped assistant messages before the first user message")
	}
	return s[n:]
}

// mergeRuns merges consecutive messages of role into one. For user
// messages, tool results move to the front.
func mergeRuns(s []slot, role llm.Role, note func(string)) []slot {
	out := s[:0]
	for _, sl := range s {
		if n := len(out); n > 0 && sl.e.msg.Role == role && out[n-1].e.msg.Role == role {
			prev := &out[n-1]
			content := append(slices.Clip(prev.e.msg.Content), sl.e.msg.Content...)
			if role == llm.User {
				content = resultsFirst(content)
			}
			prev.e.msg = llm.Message{Role: role, Content: content}
			prev.e.usage = prev.e.usage.Add(sl.e.usage)
			prev.e.summary = prev.e.summary || sl.e.summary
			prev.orig = -1
			note("merged consecutive " + string(role) + " messages")
			continue
		}
		out = append(out, sl)
	}
	return out
}

// resultsFirst moves tool_result blocks to the front, keeping order.
func resultsFirst(bs []llm.Block) []llm.Block {
	out := make([]llm.Block, 0, len(bs))
	for _, b := range bs {
		if _, ok := b.(llm.ToolResult); ok {
			out = append(out, b)
		}
	}
	for _, b := range bs {
		if _, ok := b.(llm.ToolResult); !ok {
			out = append(out, b)
		}
	}
	return out
}

// pairResults makes every tool_use answered exactly once in the next
// message, and every tool_result answer the message before it.
func pairResults(s []slot, note func(string)) []slot {
	out := make([]slot, 0, len(s)+1)
	for i := 0; i < len(s); i++ {
		sl := s[i]
		if sl.e.msg.Role == llm.User {
			var uses []string
			if n := len(out); n > 0 && out[n-1].e.msg.Role == llm.Assistant {
				uses = toolUses(out[n-1].e.msg)
			}
			sl = keepAnswers(sl, uses, note)
		}
		out = append(out, sl)
		if sl.e.msg.Role != llm.Assistant {
			continue
		}
		order := toolUses(sl.e.msg)
		if len(order) == 0 {
			continue
		}
		if i+1 < len(s) && s[i+1].e.msg.Role == llm.User {
			next := keepAnswers(s[i+1], order, note)
			var missing []llm.Block
			for _, id := range order {
				if !hasResult(next.e.msg, id) {
					missing = append(missing, interrupted(id))
				}
			}
			if len(missing) > 0 {
				note("answered interrupted tool calls")
				next.e.msg = llm.Message{Role: llm.User, Content: resultsFirst(append(missing, next.e.msg.Content...))}
				next.orig = -1
			}
			out = append(out, next)
			i++
			continue
		}
		content := make([]llm.Block, len(order))
		for k, id := range order {
			content[k] = interrupted(id)
		}
		note("answered interrupted tool calls")
		out = append(out, slot{entry{msg: llm.Message{Role: llm.User, Content: content}}, -1})
	}
	return out
}

// keepAnswers drops from a user message the tool results that answer
// nothing in uses, or answer twice, and puts the rest first.
func keepAnswers(sl slot, uses []string, note func(string)) slot {
	seen := map[string]bool{}
	kept := make([]llm.Block, 0, len(sl.e.msg.Content))
	dropped := false
	for _, b := range sl.e.msg.Content {
		if r, ok := b.(llm.ToolResult); ok {
			if !slices.Contains(uses, r.ToolUseID) || seen[r.ToolUseID] {
				dropped = true
				continue
			}
			seen[r.ToolUseID] = true
		}
		kept = append(kept, b)
	}
	ordered := resultsFirst(kept)
	if dropped {
		note("dropped orphan tool results")
	}
	if dropped || !slices.EqualFunc(ordered, kept, func(a, b llm.Block) bool { return sameKind(a, b) }) {
		if !dropped {
			note("moved tool results before other content")
		}
		sl.e.msg = llm.Message{Role: llm.User, Content: ordered}
		sl.orig = -1
	}
	return sl
}

func sameKind(a, b llm.Block) bool { return a.BlockType() == b.BlockType() }

func interrupted(id string) llm.Block {
	return llm.ToolResult{ToolUseID: id, IsError: true, Content: []llm.Block{llm.Text{Text: interruptedResult}}}
}

func dropEmpty(s []slot, note func(string)) []slot {
	out := s[:0]
	for _, sl := range s {
		if len(sl.e.msg.Content) == 0 {
			note("dropped empty messages")
			continue
		}
		out = append(out, sl)
	}
	return out
}

// trimFinal trims the whitespace that ends a final assistant message, which
// the API rejects in the message it resumes (a paused turn).
func trimFinal(s []slot, note func(string)) []slot {
	if len(s) == 0 {
		return s
	}
	sl := &s[len(s)-1]
	c := sl.e.msg.Content
	if sl.e.msg.Role != llm.Assistant || len(c) == 0 {
		return s
	}
	t, ok := c[len(c)-1].(llm.Text)
	if trimmed := strings.TrimRightFunc(t.Text, unicode.IsSpace); ok && trimmed != t.Text {
		t.Text = trimmed
		sl.e.msg = llm.Message{Role: llm.Assistant, Content: append(slices.Clone(c[:len(c)-1]), t)}
		sl.orig = -1
		note("trimmed whitespace ending the final assistant message")
	}
	return s
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

func hasResult(m llm.Message, id string) bool {
	return slices.ContainsFunc(m.Content, func(b llm.Block) bool {
		r, ok := b.(llm.ToolResult)
		return ok && r.ToolUseID == id
	})
}
