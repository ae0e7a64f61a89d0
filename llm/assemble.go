package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentloop/agentloop/internal/apirules"
)

// An Assembler builds the assistant [Message] of one turn from its events,
// in time linear in the stream's length. The zero value is ready to use.
//
// Add returns each block the moment its BlockStop completes it, so that a
// tool call can start while the model still writes. A block whose
// BlockStop never came (cut off by max_tokens or an error) is reported only
// in [Turn].Incomplete, and must not be run.
//
// Tool input is the concatenated fragments, parsed at BlockStop, else the
// start's input, else {}. An input that is not a JSON object is wrapped as
// {"INVALID_JSON": "<the raw text>"}, as the API's docs suggest, so that
// the block can still be sent back. So is one whose fragments run past
// [maxToolInput]: they are dropped as they come, and the text says why.
//
// Empty text blocks, which the API rejects, are dropped. Other block types
// become [RawBlock]s, with any streamed input or unknown deltas merged in.
// A second MessageStart (a proxy spliced two responses) starts over.
type Assembler struct {
	turn    Turn // but its blocks
	byIndex map[int]*partial
}

// A Turn is what an [Assembler] has of a model turn.
type Turn struct {
	Message Message // the assistant message: its completed blocks
	// Incomplete holds the blocks that never got their BlockStop, with what
	// arrived of them. A tool call among them must not run.
	Incomplete []Block
	StopReason StopReason // "" until one arrives
	Usage      Usage      // cumulative, so far
	// Container is the code execution container, for the next
	// [Request].Container, or "".
	Container string
	Done      bool // MessageStop arrived
}

// partial is a block being assembled.
type partial struct {
	index     int
	kind      string // "text", "thinking", "tool_use" or "raw"
	done      bool
	block     Block    // when done; nil for a dropped empty text block
	buf       []byte   // text or thinking: the part being filled
	parts     [][]byte // the full parts of text or thinking before buf
	sig       []byte   // a signature
	frags     []string // input fragments, joined once at BlockStop
	inputLen  int      // their bytes
	tooBig    bool     // they ran past maxToolInput, and were dropped
	citations []json.RawMessage
	start     Block                     // a tool_use or raw block's start
	fields    map[string]jsontext.Value // a raw block's, once a delta sets one
}

// Add applies ev, and returns the block ev completes, if it does. Events
// that do not fit, such as tool input for no block, are ignored.
func (a *Assembler) Add(ev Event) (Block, bool) {
	switch ev := ev.(type) {
	case MessageStart:
		*a = Assembler{turn: Turn{Usage: ev.Usage, Container: ev.Container}}
	case ToolUseStart:
		a.start(ev.Index, "tool_use",
			ToolUse{ID: ev.ID, Name: ev.Name, Input: ev.Input, Caller: ev.Caller, ToolsetName: ev.ToolsetName})
	case rawStart:
		a.start(ev.Index, "raw", ev.Block)
	case TextDelta:
		a.start(ev.Index, "text", nil).add(ev.Text)
	case ThinkingDelta:
		a.start(ev.Index, "thinking", nil).add(ev.Thinking)
	case ToolInputDelta:
		a.open(ev.Index, "tool_use", "raw").addInput(ev.PartialJSON)
	case signatureDelta:
		if p := a.open(ev.Index, "thinking"); p != nil {
			p.sig = append(p.sig, ev.Signature...)
		} else if p := a.open(ev.Index, "raw"); p != nil {
			// A compaction block's signature: kept, so the block goes back whole.
			sig, _ := json.Marshal(map[string]string{"signature": ev.Signature})
			p.merge(sig)
		}
	case citationDelta:
		if p := a.open(ev.Index, "text"); p != nil {
			p.citations = append(p.citations, ev.Citation)
		}
	case rawDelta:
		if p := a.open(ev.Index, "raw"); p != nil {
			p.merge(ev.Raw)
		}
	case BlockStop:
		if p := a.open(ev.Index); p != nil {
			p.done, p.block = true, p.finish()
			p.buf, p.parts = nil, nil
			p.sig, p.frags = nil, nil
			return p.block, p.block != nil
		}
	case MessageDelta:
		t := &a.turn
		t.StopReason, t.Usage, t.Container = cmp.Or(ev.StopReason, t.StopReason), ev.Usage, cmp.Or(ev.Container, t.Container)
	case MessageStop:
		a.turn.Done = true
	}
	return nil, false
}

// start opens a block of kind at index that starts as start (nil for text
// or thinking, which start as a delta). If index has a block already, it
// returns that one if it is open and of kind, else nil.
func (a *Assembler) start(index int, kind string, start Block) *partial {
	if _, dup := a.byIndex[index]; dup {
		return a.open(index, kind)
	}
	p := &partial{index: index, kind: kind, start: start}
	if a.byIndex == nil {
		a.byIndex = map[int]*partial{}
	}
	a.byIndex[index] = p
	return p
}

// open returns the open block at index if it is of one of kinds, or any.
func (a *Assembler) open(index int, kinds ...string) *partial {
	p := a.byIndex[index]
	if p == nil || p.done || len(kinds) > 0 && !slices.Contains(kinds, p.kind) {
		return nil
	}
	return p
}

// add appends text to p's, if there is a p, in parts that double up to 256
// KiB and are never copied to grow: the block's string is then made once,
// of its size (see text). A buffer grown by doubling, which became the
// string, held up to twice a long answer's length for as long as the
// history kept it; one grown by a quarter allocated five times it.
func (p *partial) add(s string) {
	if p == nil {
		return
	}
	if len(p.buf)+len(s) > cap(p.buf) {
		p.parts = append(p.parts, p.buf)
		p.buf = make([]byte, 0, max(len(s), min(2*cap(p.buf), 256<<10)))
	}
	p.buf = append(p.buf, s...)
}

// text returns the text or thinking that arrived, in one string of its size.
func (p *partial) text() string {
	n := len(p.buf)
	for _, part := range p.parts {
		n += len(part)
	}
	var b strings.Builder
	b.Grow(n)
	for _, part := range append(p.parts, p.buf) {
		b.Write(part)
	}
	return b.String()
}

// maxToolInput is the most input one tool call may stream: 32 MiB, the
// size of the largest request the API takes, which a history holding a
// bigger input could never be sent in again. Without it a stream could
// make the Assembler hold any amount (200 MiB of deltas took 653 MB).
const maxToolInput = 32 << 20

// tooBigInput replaces an input that ran past maxToolInput. It is marked
// invalid, so that the call is answered with an is_error result instead
// of being run, and the model told why, to try again in smaller pieces.
var tooBigInput = apirules.MarkInvalid(fmt.Appendf(nil,
	"[dropped: this input ran past %d MiB, the most one tool call may send; split the work into smaller calls]", maxToolInput>>20))

// addInput appends a fragment to p's input, if there is a p, unless the input
// has run past maxToolInput: then what came, and all that follows, is dropped.
func (p *partial) addInput(frag string) {
	if p == nil || p.tooBig {
		return
	}
	if p.inputLen += len(frag); p.inputLen > maxToolInput {
		p.tooBig, p.frags = true, nil
		return
	}
	p.frags = append(p.frags, frag)
}

// input is the tool call's input from its start's input and its
// fragments, joined once at their exact size: the history keeps it. It is
// checked once, here, and strict says it is a JSON object of valid UTF-8.
func (p *partial) input(start json.RawMessage) (in json.RawMessage, strict bool) {
	if p.tooBig {
		return tooBigInput, true
	}
	in = make([]byte, 0, p.inputLen)
	for _, f := range p.frags {
		in = append(in, f...)
	}
	if in = bytes.TrimSpace(in); len(in) == 0 {
		in = bytes.Clone(bytes.TrimSpace(start))
		if len(in) == 0 || string(in) == "null" {
			return json.RawMessage("{}"), true
		}
	}
	if ok, strict := apirules.IsObject(in); ok {
		return in, strict
	}
	return apirules.MarkInvalid(in), true
}

// finish builds the block from what arrived; nil for an empty text block.
func (p *partial) finish() Block {
	switch p.kind {
	case "text":
		t := Text{Text: p.text(), Citations: p.citations}
		if t.Text == "" && len(t.Citations) == 0 {
			return nil
		}
		return t
	case "thinking":
		return Thinking{Thinking: p.text(), Signature: string(p.sig)}
	case "tool_use":
		b := p.start.(ToolUse)
		in, strict := p.input(b.Input)
		if b.Input = in; strict {
			b.checked = in
		}
		return b
	}
	if len(p.frags) == 0 && !p.tooBig && p.fields == nil {
		return p.start
	}
	raw := p.rebuild()
	// Typed as a reloaded turn is (redacted_thinking, a base64 image).
	if b, err := unmarshalBlock(raw); err == nil {
		return b
	}
	return RawBlock{Type: p.start.blockType(), JSON: raw}
}

// startJSON returns the JSON of a raw block's start.
func (p *partial) startJSON() json.RawMessage {
	if rb, ok := p.start.(RawBlock); ok {
		return rb.JSON
	}
	raw, _ := json.Marshal(p.start) // every block type marshals
	return raw
}

// fieldsOf returns the fields of the JSON object raw, or nil.
func fieldsOf(raw []byte) (fields map[string]jsontext.Value) {
	if json2.Unmarshal(raw, &fields, lenient) != nil {
		return nil
	}
	return fields
}

// rebuild returns the raw block's JSON with its input and deltas' fields.
func (p *partial) rebuild() json.RawMessage {
	raw, hasInput := p.startJSON(), len(p.frags) > 0 || p.tooBig
	if placeholder := []byte(`"input":{}}`); hasInput && p.fields == nil && bytes.HasSuffix(raw, placeholder) {
		// The API's own shape, the empty input last: a splice costs a few
		// allocations where the general path costs some twenty.
		in, _ := p.input(nil)
		return slices.Concat(raw[:len(raw)-3], in, []byte("}"))
	}
	fields := maps.Clone(p.fields) // not changed: Turn may finish p again
	if fields == nil {
		fields = fieldsOf(raw)
	}
	if fields == nil {
		return raw
	}
	if hasInput {
		in, _ := p.input(json.RawMessage(fields["input"]))
		fields["input"] = jsontext.Value(in)
	}
	typ := fields["type"]
	delete(fields, "type")
	out, err := json2.Marshal(struct {
		Type jsontext.Value            `json:"type"`
		Rest map[string]jsontext.Value `json:",embed"`
	}{typ, fields}, lenient, json2.Deterministic(true))
	if err != nil {
		return raw
	}
	return out
}

// maxMergedFields bounds the fields a block may have before deltas add
// one, lest a hostile stream make finish quadratic.
const maxMergedFields = 32

// merge applies an unknown delta's fields to the block's: a string is
// appended to a string, any other value replaces the field's.
func (p *partial) merge(delta json.RawMessage) {
	if p.fields == nil {
		if p.fields = fieldsOf(p.startJSON()); p.fields == nil {
			return // not an object: kept as it came
		}
	}
	fields := fieldsOf(delta) // the decoder has checked it
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		old, had := p.fields[k]
		if v := fields[k]; k == "type" || (!had && len(p.fields) >= maxMergedFields) {
			continue
		} else if old.Kind() == '"' && v.Kind() == '"' {
			p.fields[k] = append(old[:len(old)-1], v[1:]...) // still one JSON string
		} else {
			p.fields[k] = v
		}
	}
}

// Turn returns the turn so far, its blocks in index order.
func (a *Assembler) Turn() Turn {
	t := a.turn
	t.Message.Role = Assistant
	byIndex := func(x, y *partial) int { return cmp.Compare(x.index, y.index) }
	for _, p := range slices.SortedFunc(maps.Values(a.byIndex), byIndex) {
		if !p.done {
			if b := p.finish(); b != nil {
				t.Incomplete = append(t.Incomplete, b)
			}
		} else if p.block != nil {
			t.Message.Content = append(t.Message.Content, p.block)
		}
	}
	return t
}

// BlockEvents returns the events that stream block b at index, BlockStop
// last, so that a Model that hands on a turn it received whole (such as a
// Temporal activity's result) can yield it as a stream: an Assembler
// given them rebuilds b.
func BlockEvents(index int, b Block) []Event {
	return append(openEvents(nil, index, b), BlockStop{Index: index})
}

// openEvents appends to q the events that open block b at index, as the
// stream does: its start, then deltas for what it already holds.
func openEvents(q []Event, index int, b Block) []Event {
	switch b := b.(type) {
	case Text:
		q = append(q, TextDelta{Index: index, Text: b.Text})
		for _, c := range b.Citations {
			q = append(q, citationDelta{Index: index, Citation: c})
		}
	case Thinking:
		q = append(q, ThinkingDelta{Index: index, Thinking: b.Thinking})
		if b.Signature != "" {
			q = append(q, signatureDelta{Index: index, Signature: b.Signature})
		}
	case ToolUse:
		if string(b.Caller) == "null" {
			b.Caller = nil
		}
		q = append(q, ToolUseStart{Index: index, ID: b.ID, Name: b.Name, Input: b.Input, Caller: b.Caller, ToolsetName: b.ToolsetName})
	default:
		q = append(q, rawStart{Index: index, Block: b})
	}
	return q
}
