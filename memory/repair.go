package memory

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// Repair fixes what breaks the Messages API's rules (those
// anthropictest.CheckRequest enforces), and returns one line for each kind
// of fix it made. The agent calls it before every request and after every
// run; [Restore] calls it too. In order, it:
//
//   - drops unknown roles and the blocks the API rejects (blank text,
//     unsigned thinking, blocks in the wrong role's message or without a
//     type, tool_use without a name), then empty messages;
//   - gives a tool_use with a bad or duplicate id, and its results, a fresh
//     id: dropped, it would leave its turn last mid-run, a prefill;
//   - drops a final assistant turn cut off inside a tool input (by
//     max_tokens or a crash); elsewhere such an input becomes {};
//   - merges consecutive messages of one role, and drops assistant messages
//     before the first user message;
//   - keeps, of the results opening each user turn, one for each tool_use
//     of the turn before, and answers the others with a synthetic is_error
//     result, "not executed: interrupted";
//   - trims the whitespace that ends a final assistant message.
//
// An empty history stays empty. Exact counts survive for the messages
// before the first one it changed. A valid history, the usual case, costs
// one check of the rules.
func (h *History) Repair() []string {
	if len(h.violations()) == 0 {
		return nil
	}
	did, count := []string(nil), map[string]int{}
	note := func(what string) {
		if count[what]++; count[what] == 1 {
			did = append(did, what)
		}
	}
	es := pair(clean(slices.Clone(h.entries), note), note)
	at := 0 // the first message repair changed
	for at < min(len(es), len(h.entries)) && reflect.DeepEqual(es[at].Message, h.entries[at].Message) {
		at++
	}
	// A trimmed final message keeps its exact count: whitespace is a token at most.
	if !trimFinal(es, note) && at == len(es) && at == len(h.entries) {
		return nil
	}
	for i := at; i < len(es); i++ {
		es[i] = measured(es[i])
	}
	h.entries = es
	h.rewrote(at)
	for i, what := range did {
		did[i] = fmt.Sprintf("%s (%d)", what, count[what])
	}
	h.cfg.Logger.Info("memory: repaired history", "fixes", did)
	return did
}

// clean drops unknown roles, a final assistant turn cut off inside a tool
// input, rejected blocks and messages left empty, and merges the rest.
func clean(es []entry, note func(string)) []entry {
	out := es[:0]
	// The ids kept, and the ids the calls since the last user message got,
	// by the id each came with, in order: its results take them in turn.
	seen, turn := map[string]bool{}, map[string][]string{}
	for i, e := range es {
		m := e.Message
		switch {
		case m.Role != llm.User && m.Role != llm.Assistant:
			note("dropped messages with an unknown role")
			continue
		case i == len(es)-1 && m.Role == llm.Assistant && slices.ContainsFunc(e.rules, func(b apirules.Block) bool {
			ok, _ := apirules.IsObject(b.Input)
			return b.Type == "tool_use" && !ok
		}):
			note("dropped a trailing incomplete assistant turn")
			continue
		}
		kept := make([]llm.Block, 0, len(m.Content))
		for j, b := range m.Content {
			if b, ok := cleanBlock(m.Role, b, e.rules[j], seen, turn, note); ok {
				kept = append(kept, b)
			}
		}
		e.Message = llm.Message{Role: m.Role, Content: kept}
		if m.Role == llm.User {
			clear(turn)
		}
		if len(kept) == 0 {
			note("dropped empty messages")
			continue
		}
		out = appendMerged(out, e, note)
	}
	return out
}

// cleanBlock returns b (whose rules view is rb) fixed, or false to drop it.
func cleanBlock(role llm.Role, b llm.Block, rb apirules.Block, seen map[string]bool, turn map[string][]string, note func(string)) (llm.Block, bool) {
	drop := func(what string) (llm.Block, bool) { note(what); return nil, false }
	switch {
	case rb.Type == "":
		return drop("dropped blocks without a type")
	case !apirules.AllowedIn(string(role), rb.Type):
		return drop("dropped " + rb.Type + " blocks from " + string(role) + " messages")
	}
	switch b := b.(type) {
	case llm.Text:
		if apirules.IsBlank(b.Text) {
			return drop("dropped blank text")
		}
	case llm.Thinking, llm.RedactedThinking:
		if rb.Signature == "" && rb.Data == "" {
			return drop("dropped unsigned thinking")
		}
	case llm.ToolUse:
		if b.Name == "" {
			return drop("dropped tool_use blocks with no name")
		}
		id := b.ID
		for n := 1; !apirules.ValidID(id) || seen[id]; n++ {
			id = fmt.Sprintf("toolu_repaired_%d", n)
		}
		if id != b.ID {
			note("gave tool calls with a bad or duplicate id a fresh one")
		}
		seen[id], turn[b.ID], b.ID = true, append(turn[b.ID], id), id
		if ok, _ := apirules.IsObject(rb.Input); !ok {
			b.Input = []byte("{}")
			note("replaced tool inputs that were not JSON objects with {}")
		}
		return b, true
	case llm.ToolResult:
		if q := turn[b.ToolUseID]; len(q) > 0 {
			turn[b.ToolUseID], b.ToolUseID = q[1:], q[0] // its call's id, which may be fresh
		}
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
			note("dropped blank or misplaced content from tool results")
		}
		return b, true
	}
	return b, true
}

// appendMerged appends e to out, merged, as the API merges them, into a last
// message of its role, or drops it if it is an assistant message first.
func appendMerged(out []entry, e entry, note func(string)) []entry {
	n, role := len(out), e.Message.Role
	switch {
	case n == 0 && role == llm.Assistant:
		note("dropped assistant messages before the first user message")
		return out
	case n == 0 || out[n-1].Message.Role != role:
		return append(out, e)
	}
	prev := &out[n-1]
	// pair then puts a user turn's tool results first.
	prev.Message = llm.Message{Role: role, Content: append(slices.Clip(prev.Message.Content), e.Message.Content...)}
	prev.Usage = prev.Usage.Add(e.Usage)
	prev.Summary = prev.Summary || e.Summary
	note("merged consecutive " + string(role) + " messages")
	return out
}

// pair makes each user turn open with exactly one result for every
// tool_use of the assistant turn before it, and no other result. It keeps
// the alternating turns clean gives it alternating and user-first: a user
// turn left empty goes, and the assistant turns around it merge.
func pair(es []entry, note func(string)) []entry {
	out := es[:0]
	var uses []string // the tool_use ids of the last assistant turn kept
	for _, e := range es {
		if e.Message.Role == llm.Assistant {
			if out, uses = appendMerged(out, e, note), nil; len(out) > 0 {
				for _, b := range out[len(out)-1].Message.Content {
					if u, ok := b.(llm.ToolUse); ok {
						uses = append(uses, u.ID)
					}
				}
			}
			continue
		}
		if e = answer(e, uses, note); len(e.Message.Content) == 0 {
			note("dropped empty messages")
			continue
		}
		out, uses = append(out, e), nil
	}
	if len(uses) > 0 {
		out = append(out, answer(entry{Entry: Entry{Message: llm.Message{Role: llm.User}}}, uses, note))
	}
	return out
}

// answer returns the user turn e opening with one result for each of uses,
// its own or a synthetic one, and no other result.
func answer(e entry, uses []string, note func(string)) entry {
	var results, rest []llm.Block
	seen := map[string]bool{}
	for _, b := range e.Message.Content {
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
	e.Message = llm.Message{Role: llm.User, Content: append(results, rest...)} // Repair compares the content
	return e
}

// trimFinal trims the whitespace that ends a final assistant message, which
// the API rejects in the message it resumes (a paused turn).
func trimFinal(es []entry, note func(string)) bool {
	if len(es) == 0 || es[len(es)-1].Message.Role != llm.Assistant {
		return false
	}
	e, c := &es[len(es)-1], es[len(es)-1].Message.Content
	if t, ok := c[len(c)-1].(llm.Text); ok && strings.TrimRightFunc(t.Text, unicode.IsSpace) != t.Text {
		t.Text = strings.TrimRightFunc(t.Text, unicode.IsSpace)
		e.Message = llm.Message{Role: llm.Assistant, Content: append(slices.Clone(c[:len(c)-1]), t)}
		e.rules = ruleBlocks(e.Message.Content) // its measures stay: whitespace is a token at most
		note("trimmed whitespace ending the final assistant message")
		return true
	}
	return false
}

// violations lists what breaks the Messages API's rules in the history as
// the next request would send it.
func (h *History) violations() []apirules.Violation {
	if len(h.entries) == 0 {
		return nil // nothing to send yet; the next prompt starts a valid history
	}
	msgs := make([]apirules.Message, len(h.entries))
	for i, e := range h.entries {
		msgs[i] = apirules.Message{Role: string(e.Message.Role), Content: e.rules}
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
		if b.ValidInput() {
			in = []byte("{}") // as llm marshals an empty one; a checked one needs no second check
		}
		return apirules.Block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: in}
	case llm.ToolResult:
		return apirules.Block{Type: "tool_result", ToolUseID: b.ToolUseID, Content: ruleBlocks(b.Content)}
	case llm.Thinking:
		return apirules.Block{Type: "thinking", Signature: b.Signature}
	case llm.RedactedThinking:
		return apirules.Block{Type: "redacted_thinking", Data: b.Data}
	case llm.Image:
		return apirules.Block{Type: "image"}
	case llm.RawBlock:
		if json.Valid(b.JSON) {
			return apirules.Block{Type: b.Type}
		}
	}
	return apirules.Block{} // nil, or raw JSON that is not: no type, which the rules reject
}

// rewrote records that a rewrite (compaction, repair, another prefix or
// model) changed messages from i on: their exact counts go and, on a model
// that binds its thinking (see internal/apirules' bound thinking), so does
// their thinking, with the messages it leaves empty, which the API merges.
func (h *History) rewrote(i int) {
	for j := i; j < len(h.entries); j++ {
		h.entries[j].Tokens = 0
	}
	if h.model.UnboundThinking || !slices.ContainsFunc(h.entries[i:], hasThinking) {
		return
	}
	n, out := 0, h.entries[:i:i]
	for _, e := range h.entries[i:] {
		if hasThinking(e) {
			kept := slices.DeleteFunc(slices.Clone(e.Message.Content), isThinking)
			n += len(e.Message.Content) - len(kept)
			if len(kept) == 0 {
				continue
			}
			e.Message = llm.Message{Role: e.Message.Role, Content: kept}
			e = measured(e)
		}
		out = append(out, e)
	}
	h.entries = out
	h.cfg.Logger.Info("memory: dropped the thinking a rewrite invalidated", "blocks", n, "from", i)
}

func isThinking(b llm.Block) bool {
	_, t := b.(llm.Thinking)
	_, r := b.(llm.RedactedThinking)
	return t || r
}

func hasThinking(e entry) bool { return slices.ContainsFunc(e.Message.Content, isThinking) }
