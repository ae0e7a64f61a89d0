package anthropictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
)

// This file is strict mode's check of thinking blocks sent back (see
// strict.go): bound to their conversation, and read by their model.
//
// To tell a replayed block from its original, the server records each
// signed thinking block it streams: its signature, the model, a hash of
// its prefix and the thinking block before it. Blocks it did not stream
// (a hand-made history, another server's) are not checked. Blocks
// scripted without a signature are streamed without one, as scripted.

// An issue is one signed thinking block the server streamed.
type issue struct {
	model  string
	prefix [sha256.Size]byte // the hash of its prefix, thinking left out
	before string            // the signature of the thinking block before it, if any
}

// checkThinking checks every thinking block of p that the server issued:
// its model can read it, and, with prefix set, its prefix is unchanged.
func (s *Server) checkThinking(p *Params, prefix bool) *HTTPError {
	pr := newPrefix(p)
	before, seen := "", false // the last issued block present, and whether there was one
	for i, m := range p.Messages {
		for j, b := range m.Content {
			if !apirules.IsThinking(b.Type) {
				pr.add(m.Role, b)
				continue
			}
			s.mu.Lock()
			is := s.issued[b.Signature]
			s.mu.Unlock()
			if b.Type != "thinking" || len(is) == 0 {
				continue
			}
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			if k := slices.IndexFunc(is, func(x issue) bool { return apirules.Reads(p.Model, x.model) }); k < 0 {
				return &HTTPError{Status: 400, Message: fmt.Sprintf(msgModel, at, is[0].model, p.Model)}
			}
			sum := pr.sum()
			if prefix && !slices.ContainsFunc(is, func(x issue) bool { return x.prefix == sum && (!seen || x.before == before) }) {
				return &HTTPError{Status: 400, Message: fmt.Sprintf(msgBound, at)}
			}
			before, seen = b.Signature, true
		}
	}
	return nil
}

// register records the signed thinking blocks of the stream st as served
// for c's request, so that checkThinking knows them when they come back.
func (s *Server) register(c *call, st *Stream) {
	st.mu.Lock()
	var items []item
	if slices.ContainsFunc(st.items, func(it item) bool { return it.kind == kSignatureDelta }) {
		items = slices.Clone(st.items)
	}
	st.mu.Unlock()
	if items == nil {
		return // nothing to record: the request, which may be megabytes, is not decoded
	}
	p, err := c.req.full()
	if err != nil {
		return
	}
	pr := newPrefix(p)
	before := ""
	for _, m := range p.Messages {
		for _, b := range m.Content {
			if b.Type == "thinking" {
				s.mu.Lock()
				_, ok := s.issued[b.Signature]
				s.mu.Unlock()
				if ok {
					before = b.Signature
				}
			} else if !apirules.IsThinking(b.Type) {
				pr.add(m.Role, b)
			}
		}
	}
	for _, blk := range assembleBlocks(items) {
		if blk.Type != "thinking" {
			if !apirules.IsThinking(blk.Type) {
				pr.add("assistant", blk)
			}
			continue
		}
		if blk.Signature == "" {
			continue
		}
		s.mu.Lock()
		if s.issued == nil {
			s.issued = map[string][]issue{}
		}
		s.issued[blk.Signature] = append(s.issued[blk.Signature], issue{model: p.Model, prefix: pr.sum(), before: before})
		s.mu.Unlock()
		before = blk.Signature
	}
}

// deltaField says which of a block's texts a delta adds to.
var deltaField = map[itemKind]int{kTextDelta: 0, kThinkingDelta: 1, kSignatureDelta: 2, kInputDelta: 3}

// assembleBlocks returns the content blocks a script streams, as a client
// assembles them: text and partial inputs joined, signatures set.
func assembleBlocks(items []item) []Block {
	var out []Block
	var texts []*[4]strings.Builder // per block: text, thinking, signature, input
	byIndex := map[int]int{}
	for _, it := range items {
		if it.kind == kBlockStart {
			var b Block
			json.Unmarshal([]byte(it.a), &b)
			b.Raw = json.RawMessage(it.a)
			byIndex[it.index] = len(out)
			out, texts = append(out, b), append(texts, new([4]strings.Builder))
			continue
		}
		if f, ok := deltaField[it.kind]; ok {
			if k, ok := byIndex[it.index]; ok {
				texts[k][f].WriteString(it.a)
			}
		}
	}
	for k := range out {
		t := texts[k]
		out[k].Text += t[0].String()
		out[k].Thinking += t[1].String()
		out[k].Signature += t[2].String()
		if in := strings.TrimSpace(t[3].String()); in != "" {
			out[k].Input = json.RawMessage(in)
		}
	}
	return out
}

// A prefix hashes what comes before a thinking block, as the prefix check
// compares it: system, tools, and each non-thinking block with its role.
// Message boundaries do not count, since the API merges consecutive
// messages of one role; cache_control markers do not count either. A
// compaction block starts the prefix afresh after system and tools, since
// server-side compaction is no edit: what it replaced is not compared, nor
// is its summary, which arrives in deltas.
type prefix struct {
	h    hash.Hash
	base []byte // the hash's input for system and tools
}

func newPrefix(p *Params) *prefix {
	pr := &prefix{h: sha256.New()}
	var system any
	if len(p.System) > 0 && p.System[0] == '"' {
		var text string
		json.Unmarshal(p.System, &text)
		system = []any{map[string]any{"type": "text", "text": text}}
	} else if len(p.System) > 0 {
		json.Unmarshal(p.System, &system)
	}
	pr.write("system", canonical(system))
	for _, t := range p.Tools {
		var v any
		json.Unmarshal(t, &v)
		pr.write("tool", canonical(v))
	}
	return pr
}

func (pr *prefix) write(kind string, v any) {
	data, _ := json.Marshal(v) // map keys sorted: a canonical form
	head := fmt.Appendf(nil, "%s\x00%d\x00", kind, len(data))
	pr.h.Write(head)
	pr.h.Write(data)
	if kind == "system" || kind == "tool" {
		pr.base = append(append(pr.base, head...), data...)
	}
}

// add hashes block b of a message of role.
func (pr *prefix) add(role string, b Block) {
	if b.Type == "compaction" {
		pr.h.Reset()
		pr.h.Write(pr.base)
		pr.h.Write([]byte("compaction\x00"))
		return
	}
	m := map[string]any{"type": b.Type}
	if b.Raw != nil {
		d := json.NewDecoder(bytes.NewReader(b.Raw))
		d.UseNumber()
		d.Decode(&m)
	}
	switch b.Type {
	case "text":
		m = map[string]any{"type": "text", "text": b.Text}
	case "tool_use", "server_tool_use", "mcp_tool_use":
		var in any
		d := json.NewDecoder(bytes.NewReader(b.Input))
		d.UseNumber()
		if d.Decode(&in) == nil {
			m["input"] = in
		}
	}
	pr.write(role, canonicalBlock(m))
}

func (pr *prefix) sum() (s [sha256.Size]byte) {
	copy(s[:], pr.h.Sum(nil))
	return s
}

// canonicalBlock returns block v as the prefix check compares it: without
// cache_control, a text block by its text alone, and a tool_result's
// string content as one text block.
func canonicalBlock(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	delete(m, "cache_control")
	switch m["type"] {
	case "text":
		return map[string]any{"type": "text", "text": m["text"]}
	case "tool_result":
		switch c := m["content"].(type) {
		case string:
			m["content"] = []any{map[string]any{"type": "text", "text": c}}
		case []any:
			for i := range c {
				c[i] = canonicalBlock(c[i])
			}
		}
	}
	return m
}

// canonical removes cache_control from a list of system blocks or a tool.
func canonical(v any) any {
	switch v := v.(type) {
	case []any:
		for i := range v {
			v[i] = canonical(v[i])
		}
	case map[string]any:
		delete(v, "cache_control")
	}
	return v
}
