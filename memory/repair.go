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
//   - drops assistant messages before the first user message;
//   - keeps, of each user turn's results, one for each tool_use of the turn
//     before, first in the turn, and answers the others with a synthetic
//     is_error result, "not executed: interrupted";
//   - trims the whitespace that ends a final assistant message.
//
// A turn is a run of messages of one role, which the API merges: Repair
// merges only a user turn it must change. An empty history stays empty.
// Exact counts survive for the messages before the first one it changed. A
// valid history, the usual case, is read once and neither copied nor
// changed.
func (h *History) Repair() []string {
	var r repairer
	es := r.pair(r.clean(h.entries))
	trimmed := r.trimFinal(es)
	if r.did == nil {
		return nil
	}
	at := 0 // the first message repair changed
	for at < min(len(es), len(h.entries)) && reflect.DeepEqual(es[at].Message, h.entries[at].Message) {
		at++
	}
	// Found in es, not trimmed: a trimmed final message keeps its exact
	// count, since whitespace is a token at most.
	h.entries = trimmed
	h.rewrote(at)
	for i, what := range r.did {
		r.did[i] = fmt.Sprintf("%s (%d)", what, r.count[what])
	}
	h.cfg.Logger.Info("memory: repaired history", "fixes", r.did)
	return r.did
}

// A repairer is the state of one Repair.
type repairer struct {
	did   []string        // the kinds of change, in order
	count map[string]int  // the changes of each kind
	seen  map[string]bool // the tool_use ids kept
	// calls are the tool calls of the last assistant turn, in order, each
	// with the id it came with and the one it has: their results, in any
	// message of the user turn after it, take them in turn.
	calls []call
}

type call struct{ from, to string }

// note records a change Repair made.
func (r *repairer) note(what string) {
	if r.count == nil {
		r.count = map[string]int{}
	}
	if r.count[what]++; r.count[what] == 1 {
		r.did = append(r.did, what)
	}
}

// An edit is a pass's output, the elements of in (entries or blocks)
// rewritten. It is a part of in while the pass keeps every element as it
// is, and a copy from its first change on, so that a pass over a valid
// history neither copies nor allocates.
type edit[T any] struct {
	in, out []T
	copied  bool
}

// add appends v, which is in[i] unless changed.
func (d *edit[T]) add(i int, v T, changed bool) {
	if !d.copied && !changed && i == len(d.out) {
		d.out = d.in[:i+1]
		return
	}
	if !d.copied {
		d.out, d.copied = append(make([]T, 0, len(d.in)+1), d.out...), true
	}
	d.out = append(d.out, v)
}

// changed reports whether the output differs from in.
func (d *edit[T]) changed() bool { return d.copied || len(d.out) < len(d.in) }

// clean drops unknown roles, a final assistant turn cut off inside a tool
// input, rejected blocks and messages left empty.
func (r *repairer) clean(es []entry) []entry {
	out := edit[entry]{in: es}
	r.seen = make(map[string]bool, len(es)/2) // about a call a turn: the map does not grow
	last := llm.User                          // the role of the message before
	for i, e := range es {
		m := e.Message
		switch {
		case m.Role != llm.User && m.Role != llm.Assistant:
			r.note("dropped messages with an unknown role")
			continue
		case i == len(es)-1 && m.Role == llm.Assistant && e.badJSON && slices.ContainsFunc(m.Content, func(b llm.Block) bool {
			u, ok := b.(llm.ToolUse)
			return ok && !u.ValidInput()
		}):
			r.note("dropped a trailing incomplete assistant turn")
			continue
		}
		if m.Role == llm.Assistant && last == llm.User {
			r.calls = r.calls[:0] // a new assistant turn
		}
		last = m.Role
		kept := edit[llm.Block]{in: m.Content}
		for j, b := range m.Content {
			if fixed, changed := r.block(m.Role, b, e.badJSON); fixed != nil {
				kept.add(j, fixed, changed)
			}
		}
		if len(kept.out) == 0 {
			r.note("dropped empty messages")
			continue
		}
		e.Message.Content = kept.out
		out.add(i, e, kept.changed())
	}
	return out.out
}

// block returns b fixed, or nil to drop it, and whether it changed b.
// badJSON says whether b's message may hold JSON that is not (see entry).
func (r *repairer) block(role llm.Role, b llm.Block, badJSON bool) (llm.Block, bool) {
	drop := func(what string) (llm.Block, bool) { r.note(what); return nil, true }
	switch typ := typeOf(b, badJSON); {
	case typ == "":
		return drop("dropped blocks without a type")
	case !apirules.AllowedIn(string(role), typ):
		return drop("dropped " + typ + " blocks from " + string(role) + " messages")
	}
	switch v := b.(type) {
	case llm.Text:
		if apirules.IsBlank(v.Text) {
			return drop("dropped blank text")
		}
	case llm.Thinking:
		if v.Signature == "" {
			return drop("dropped unsigned thinking")
		}
	case llm.RedactedThinking:
		if v.Data == "" {
			return drop("dropped unsigned thinking")
		}
	case llm.ToolUse:
		if v.Name == "" {
			return drop("dropped tool_use blocks with no name")
		}
		id := v.ID
		for n := 1; !apirules.ValidID(id) || r.seen[id]; n++ {
			id = fmt.Sprintf("toolu_repaired_%d", n)
		}
		changed := id != v.ID
		if changed {
			r.note("gave tool calls with a bad or duplicate id a fresh one")
		}
		r.seen[id], r.calls, v.ID = true, append(r.calls, call{v.ID, id}), id
		if badJSON && !v.ValidInput() {
			v.Input, changed = []byte("{}"), true
			r.note("replaced tool inputs that were not JSON objects with {}")
		}
		if changed {
			return v, true
		}
	case llm.ToolResult:
		changed := false
		if k := slices.IndexFunc(r.calls, func(c call) bool { return c.from == v.ToolUseID }); k >= 0 {
			changed, v.ToolUseID = v.ToolUseID != r.calls[k].to, r.calls[k].to // its call's id, which may be fresh
			r.calls = slices.Delete(r.calls, k, k+1)
		}
		misplaced := func(c llm.Block) bool {
			switch c := c.(type) {
			case llm.Text:
				return apirules.IsBlank(c.Text)
			case llm.Image, llm.RawBlock:
				return typeOf(c, badJSON) == ""
			}
			return true
		}
		if slices.ContainsFunc(v.Content, misplaced) {
			v.Content, changed = slices.DeleteFunc(slices.Clone(v.Content), misplaced), true
			r.note("dropped blank or misplaced content from tool results")
		}
		if changed {
			return v, true
		}
	}
	return b, false // not v: boxing it again would allocate
}

// typeOf returns b's type: "" for nil and, if badJSON, for a raw block
// whose JSON is not, which the API would reject.
func typeOf(b llm.Block, badJSON bool) string {
	if r, ok := b.(llm.RawBlock); b == nil || ok && badJSON && !json.Valid(r.JSON) {
		return ""
	}
	return llm.TypeOf(b)
}

// badJSON reports whether b holds JSON the API cannot take: a tool input
// that is not an object, a raw block that is not JSON. measured asks it
// once, so that Repair reads big inputs only in a message that has one.
func badJSON(b llm.Block) bool {
	switch b := b.(type) {
	case llm.ToolUse:
		return !b.ValidInput()
	case llm.RawBlock:
		return !json.Valid(b.JSON)
	case llm.ToolResult:
		return slices.ContainsFunc(b.Content, badJSON)
	}
	return false
}

// pair makes each user turn open with exactly one result for every
// tool_use of the assistant turn before it, and no other result; a turn it
// changes becomes one message. It drops the assistant messages before the
// first user message, where clean or a turn it empties leaves them.
func (r *repairer) pair(es []entry) []entry {
	out := edit[entry]{in: es}
	var uses []string // the tool_use ids of the assistant turn before
	for i := 0; i < len(es); i++ {
		e := es[i]
		if e.Message.Role == llm.Assistant {
			if len(out.out) == 0 {
				r.note("dropped assistant messages before the first user message")
				continue
			}
			for _, b := range e.Message.Content {
				if u, ok := b.(llm.ToolUse); ok {
					uses = append(uses, u.ID)
				}
			}
			out.add(i, e, false)
			continue
		}
		j, content := i+1, e.Message.Content // es[i:j] is the user turn
		for ; j < len(es) && es[j].Message.Role == llm.User; j++ {
			content = append(slices.Clip(content), es[j].Message.Content...)
			e.Usage, e.Summary = e.Usage.Add(es[j].Usage), e.Summary || es[j].Summary
		}
		content, changed := r.answer(content, uses)
		switch {
		case !changed:
			for k := i; k < j; k++ {
				out.add(k, es[k], false)
			}
		case len(content) == 0:
			r.note("dropped empty messages")
		default:
			e.Message = llm.Message{Role: llm.User, Content: content} // Repair compares the content
			out.add(i, e, true)
		}
		i, uses = j-1, uses[:0]
	}
	if len(uses) > 0 {
		content, _ := r.answer(nil, uses)
		out.add(len(es), entry{Entry: Entry{Message: llm.Message{Role: llm.User, Content: content}}}, true)
	}
	return out.out
}

// answer returns a user turn's content opening with one result for each of
// uses, its own or a synthetic one, and no other result, and whether that
// changed it.
func (r *repairer) answer(content []llm.Block, uses []string) ([]llm.Block, bool) {
	out := edit[llm.Block]{in: content}
	answers := func(id string) bool { // whether out answers the call id
		return slices.ContainsFunc(out.out, func(b llm.Block) bool {
			res, ok := b.(llm.ToolResult)
			return ok && res.ToolUseID == id
		})
	}
	others := 0 // the blocks so far that are no result
	for j, b := range content {
		res, ok := b.(llm.ToolResult)
		switch {
		case !ok:
			others++
		case !slices.Contains(uses, res.ToolUseID) || answers(res.ToolUseID):
			r.note("dropped orphan tool results")
		default:
			if others > 0 {
				r.note("moved tool results before the other blocks of their turn")
			}
			out.add(j, b, false)
		}
	}
	for _, id := range uses {
		if !answers(id) {
			r.note("answered interrupted tool calls")
			out.add(-1, llm.ToolResult{ToolUseID: id, IsError: true, Content: []llm.Block{llm.Text{Text: interruptedResult}}}, true)
		}
	}
	for j, b := range content {
		if _, ok := b.(llm.ToolResult); !ok {
			out.add(j, b, false)
		}
	}
	return out.out, out.changed()
}

// trimFinal returns es with the whitespace that ends a final assistant
// message trimmed, which the API rejects in the message it resumes (a
// paused turn).
func (r *repairer) trimFinal(es []entry) []entry {
	if len(es) == 0 || es[len(es)-1].Message.Role != llm.Assistant {
		return es
	}
	e := es[len(es)-1]
	c := e.Message.Content
	t, ok := c[len(c)-1].(llm.Text)
	if !ok || strings.TrimRightFunc(t.Text, unicode.IsSpace) == t.Text {
		return es
	}
	t.Text = strings.TrimRightFunc(t.Text, unicode.IsSpace)
	e.Message = llm.Message{Role: llm.Assistant, Content: append(slices.Clone(c[:len(c)-1]), t)}
	r.note("trimmed whitespace ending the final assistant message")
	return append(es[:len(es)-1:len(es)-1], e) // a copy: es may be the history's own
}

// rewrote records that a rewrite (compaction, repair, another prefix or
// model) changed messages from i on: they are measured again, and their
// exact counts go and, on a model that binds its thinking (see
// internal/apirules' bound thinking), so does their thinking, with the
// messages it leaves empty, which the API merges.
func (h *History) rewrote(i int) {
	n, out := 0, h.entries[:i]
	for _, e := range h.entries[i:] {
		if !h.model.UnboundThinking && hasThinking(e) {
			kept := slices.DeleteFunc(slices.Clone(e.Message.Content), isThinking)
			n += len(e.Message.Content) - len(kept)
			if len(kept) == 0 {
				continue
			}
			e.Message = llm.Message{Role: e.Message.Role, Content: kept}
		}
		e.Tokens = 0
		out = append(out, measured(e))
	}
	h.entries = out
	if n > 0 {
		h.cfg.Logger.Info("memory: dropped the thinking a rewrite invalidated", "blocks", n, "from", i)
	}
}

func isThinking(b llm.Block) bool { return apirules.IsThinking(typeOf(b, false)) }

func hasThinking(e entry) bool { return slices.ContainsFunc(e.Message.Content, isThinking) }
