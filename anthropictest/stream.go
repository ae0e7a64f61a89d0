package anthropictest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// A Stream is a scripted streaming reply: a builder for the server-sent
// events the Messages API emits for one response. *Stream implements Reply.
// To a request that does not ask for a stream it sends the same response
// whole, as the Message those events build (message.go).
//
// NewStream starts the script with an implicit message_start. Each builder
// method appends to the script and returns the Stream, so scripts read top to
// bottom like the wire:
//
//	NewStream().Text("Hel", "lo").ToolUse("toolu_1", "add", `{"a":`, `1}`).Stop("tool_use")
//
// Block indexes are assigned automatically, in call order, starting at 0.
// A block stays open after its builder returns, so that an Event can still
// land inside it and a fault can cut it off mid-block; it is closed
// (content_block_stop) when the next block starts, at Stop, or by EndBlock.
//
// If the script has neither Stop nor a fault, the stream ends as the API ends
// a normal turn: the open block is closed, then message_delta with stop_reason
// "tool_use" if the script has a tool_use block and "end_turn" otherwise, then
// message_stop.
//
// The wire bytes are rendered once, when the Stream is first served, and
// reused for every later serve. A Stream is safe to serve concurrently, and
// may be served any number of times (see Repeat).
//
// Builder methods panic when called after a terminal fault (ErrorEvent,
// Reset, EndWithoutStop, Stall), or when Block gets deltas for a type that
// arrives whole: those are mistakes in the test, not in the code under
// test.
type Stream struct {
	mu       sync.Mutex
	items    []item
	noStart  bool   // Replay: no implicit message_start
	id       string // set by Message; empty: each reply's own
	model    string // set by Message; empty: the requested model
	inTok    int
	outTok   int
	cacheW   int
	cacheR   int
	compact  [4]int // the compaction iteration's usage (compaction.go)
	server   [2]int // web searches and fetches in message_delta's usage (servertools.go)
	nextIdx  int
	open     bool // a block is open (started and not yet stopped)
	openTool bool // the open block streams tool input
	hasTool  bool // the script has a client tool_use block
	ending   ending
	plan     *plan // rendered wire bytes; nil until served or after a change
}

// ending says how a reply finishes after its last event.
type ending int

const (
	endNone  ending = iota // not yet decided: the default stop is added
	endStop                // Stop was called; return normally
	endClean               // EndWithoutStop: end the body cleanly
	endError               // ErrorEvent: the error event, then end cleanly
	endReset               // Reset: hijack the connection and send RST
	endStall               // Stall: keep the connection open, send nothing
)

type itemKind uint8

const (
	kBlockStart     itemKind = iota // a: content_block JSON
	kTextDelta                      // a: text
	kThinkingDelta                  // a: thinking
	kSignatureDelta                 // a: signature
	kInputDelta                     // a: partial_json
	kDelta                          // a: delta JSON, verbatim
	kBlockStop
	kEvent // a: event name, b: data
	kRaw   // a: bytes, verbatim
	kStop  // a: stop_reason, n: output tokens or -1
	kError // a: error type, b: message
	kPace  // d: delay before each later event
)

// An item is one step of a script. Items are small so that a script of
// 100k deltas costs one slice, and rendering is deferred so that Message and
// Usage may be called at any point of the chain.
type item struct {
	kind  itemKind
	index int
	n     int
	a, b  string
	d     time.Duration
}

// defaultModel is the model a reply names when the request names none, and
// the one Bytes renders.
const defaultModel = "claude-sonnet-5-5"

// NewStream returns an empty script whose message_start carries usage of
// 10 input and 1 output tokens and, as the API's does, a message id of its
// own (msg_01AnthropicTest and the request's number, nine digits) and the
// model the request asked for; Message sets them. A ping follows the first
// content_block_start, where real streams have one.
func NewStream() *Stream { return &Stream{inTok: 10, outTok: 1} }

// Replay returns a Stream that sends sse verbatim, such as a recorded .sse
// file, as a 200 text/event-stream body, flushing at each blank line so that
// events arrive one by one. It has no implicit message_start and no default
// stop; builder methods append to it, so that Replay(nil).Stall() sends the
// headers and then nothing. sse is copied.
func Replay(sse []byte) *Stream {
	s := &Stream{noStart: true, ending: endStop}
	for len(sse) > 0 {
		i := bytes.Index(sse, []byte("\n\n"))
		if i < 0 {
			i = len(sse) - 2
		}
		s.items = append(s.items, item{kind: kRaw, a: string(sse[:i+2])})
		sse = sse[i+2:]
	}
	return s
}

func (s *Stream) add(it item) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(it)
	return s
}

func (s *Stream) addLocked(it item) {
	if s.ending > endStop {
		panic("anthropictest: stream builder called after a terminal fault")
	}
	s.plan = nil
	s.items = append(s.items, it)
}

func (s *Stream) closeOpen() {
	if s.open {
		s.addLocked(item{kind: kBlockStop, index: s.nextIdx - 1})
		s.open = false
	}
}

// Message sets the id and the model that message_start carries in every
// reply of the Stream, for a test that needs a fixed id or a model other
// than the one requested (an alias resolved, a fallback); an empty
// argument keeps the default.
func (s *Stream) Message(id, model string) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.model, s.plan = id, model, nil
	return s
}

// Usage sets the usage of message_start: input_tokens, output_tokens,
// cache_creation_input_tokens and cache_read_input_tokens (10, 1, 0 and 0
// by default). The input and cache counts are repeated in message_delta, as
// current API versions do.
func (s *Stream) Usage(input, output, cacheCreation, cacheRead int) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inTok, s.outTok, s.cacheW, s.cacheR, s.plan = input, output, cacheCreation, cacheRead, nil
	return s
}

// Text starts a text block, {"type":"text","text":""}, and sends one
// text_delta per argument.
func (s *Stream) Text(deltas ...string) *Stream { return s.Block(Block{Type: "text"}, deltas...) }

// ToolUse starts a client tool_use block whose start carries the placeholder
// input {}, then sends an input_json_delta with partial_json "" (the API
// almost always leads with one) and one input_json_delta per fragment. The
// fragments are sent exactly as given, so they may split the JSON anywhere:
// inside keys, inside values, inside escape sequences (see Split). With no
// fragments the block has the API's shape for a tool without arguments.
func (s *Stream) ToolUse(id, name string, fragments ...string) *Stream {
	return s.Block(Block{Type: "tool_use", ID: id, Name: name}, fragments...)
}

// Block starts a content block of b's type and streams deltas into it, as
// the API streams that type:
//
//   - "text": {"type":"text","text":""}, then a text_delta per delta.
//   - "thinking": {"type":"thinking","thinking":"","signature":""}, a
//     thinking_delta per delta, an empty thinking_delta, then a
//     signature_delta of b.Signature unless it is empty.
//   - "tool_use", "server_tool_use" and "mcp_tool_use": b.ID, b.Name and
//     b.Input, {} if nil, then an input_json_delta per delta, led by an
//     empty one when b.Input is nil (see ToolUse).
//   - any other type, such as "redacted_thinking", arrives whole, as the
//     JSON of b's fields; deltas are not allowed.
//
// If b.Raw is set, it is sent verbatim as the content_block instead, for
// block types this package does not model (web_search_tool_result…); the
// deltas still follow b.Type, and Event sends any other kind.
func (s *Stream) Block(b Block, deltas ...string) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	var start []byte
	var kind itemKind
	switch b.Type {
	case "text":
		start, kind = []byte(`{"type":"text","text":""}`), kTextDelta
	case "thinking":
		start, kind = []byte(`{"type":"thinking","thinking":"","signature":""}`), kThinkingDelta
	case "tool_use", "server_tool_use", "mcp_tool_use":
		start = append([]byte(`{"type":"`+b.Type+`","id":`), appendJSONString(nil, b.ID)...)
		start = append(append(start, `,"name":`...), appendJSONString(nil, b.Name)...)
		start = append(append(append(start, `,"input":`...), cmp.Or(string(b.Input), "{}")...), '}')
		kind = kInputDelta
	default:
		if len(deltas) > 0 {
			panic("anthropictest: Block of type " + b.Type + " takes no deltas; use Event")
		}
		start, _ = json.Marshal(b)
	}
	if b.Raw != nil {
		start = b.Raw
	}
	s.closeOpen()
	i := s.nextIdx
	s.nextIdx++
	s.addLocked(item{kind: kBlockStart, index: i, a: string(start)})
	s.open = true
	s.openTool = kind == kInputDelta
	s.hasTool = s.hasTool || b.Type == "tool_use"
	s.items = slices.Grow(s.items, len(deltas)+2)
	if kind == kInputDelta && b.Input == nil {
		s.addLocked(item{kind: kInputDelta, index: i})
	}
	for _, d := range deltas {
		s.addLocked(item{kind: kind, index: i, a: d})
	}
	if kind == kThinkingDelta {
		s.addLocked(item{kind: kThinkingDelta, index: i})
		if b.Signature != "" {
			s.addLocked(item{kind: kSignatureDelta, index: i, a: b.Signature})
		}
	}
	return s
}

// EndBlock closes the open block now, so that what follows (a ping, an
// unknown event, a fault) lands between blocks rather than inside one.
func (s *Stream) EndBlock() *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeOpen()
	return s
}

// Event sends one event with the given name and data, verbatim: a ping,
// Event("ping", `{"type": "ping"}`), which the API sends anywhere, an event
// type the client has never seen, a hand-made malformed event, or any
// event the other builders do not send, such as a citations_delta inside
// the open block (blocks are numbered from 0, in call order):
//
//	Event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{…}}}`)
//
// or a stop_sequence stop, after EndBlock and before EndWithoutStop:
//
//	Event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":3}}`).
//		Event("message_stop", `{"type":"message_stop"}`)
//
// It does not touch block indexes.
func (s *Stream) Event(name, dataJSON string) *Stream {
	return s.add(item{kind: kEvent, a: name, b: dataJSON})
}

// Stop closes the open block and sends message_delta with the stop_reason
// and usage, then message_stop. The output token count in message_delta is
// outputTokens if given, else the number of deltas in the script (at least
// 1). Stop("max_tokens") leaves an open tool_use block without its
// content_block_stop, as the API does when the limit cuts a streamed tool
// call short; call EndBlock first for a complete one.
func (s *Stream) Stop(reason string, outputTokens ...int) *Stream {
	it := item{kind: kStop, a: reason, n: -1}
	if len(outputTokens) > 0 {
		it.n = outputTokens[0]
	}
	return s.stop(it)
}

func (s *Stream) stop(it item) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it.a == "max_tokens" && s.openTool {
		s.open = false
	}
	s.closeOpen()
	s.addLocked(it)
	if s.ending == endNone {
		s.ending = endStop
	}
	return s
}

// Pace delays each event scripted after it by d, for slow token-by-token
// streams; Pace(0) stops delaying. The delay ends early, and the reply with
// it, when the client goes away or the server closes.
func (s *Stream) Pace(d time.Duration) *Stream { return s.add(item{kind: kPace, d: d}) }

// ErrorEvent sends an error event mid-stream,
// {"type":"error","error":{"type":errType,"message":message},"request_id":"req_…"},
// with the request-id header's value, then ends the response without
// message_stop, as the API does when it is overloaded mid-stream. The open
// block, if any, is left open.
func (s *Stream) ErrorEvent(errType, message string) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(item{kind: kError, a: errType, b: message})
	s.ending = endError
	return s
}

// Reset ends the stream by resetting the TCP connection (RST) after the
// events scripted so far, the way a dropped connection looks to a client.
func (s *Stream) Reset() *Stream { return s.terminal(endReset) }

// EndWithoutStop ends the response cleanly right after the events scripted
// so far, with no message_delta or message_stop.
func (s *Stream) EndWithoutStop() *Stream { return s.terminal(endClean) }

// Stall sends the events scripted so far and then nothing, keeping the
// connection open until the client goes away or the server closes. Call it
// right after NewStream for a stream that stalls after message_start, or
// after Replay(nil) for one that stalls before any event.
func (s *Stream) Stall() *Stream { return s.terminal(endStall) }

func (s *Stream) terminal(e ending) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending > endStop {
		panic("anthropictest: stream builder called after a terminal fault")
	}
	s.ending, s.plan = e, nil
	return s
}

// Bytes returns the whole response body the Stream sends, as one byte
// slice: the body it sends to a server's first request, for model
// claude-sonnet-5-5, unless Message says otherwise. Faults that are not
// bytes (Reset, Stall, pacing) are not represented. It is handy for
// benchmarks and golden files, and Replay(Bytes()) sends the same body.
func (s *Stream) Bytes() []byte {
	return append([]byte(nil), s.compile().body...)
}
