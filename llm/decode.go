package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
)

// decoder turns the server-sent events of one response into [Event]s.
//
// Like the official SDKs it dispatches on the SSE event name; an event
// without a name (seen only behind proxies) is dispatched on its data's
// "type" instead of being dropped. Content deltas, the bulk of a stream,
// are read by the scanner in jsonscan.go; the few other events by
// encoding/json.
type decoder struct {
	sse    *sseReader
	log    *slog.Logger
	status int         // of the response, for error events
	header http.Header // of the response, for error events

	usage   Usage   // the turn's usage so far; message_delta overwrites fields
	queue   []Event // events made from one start event, handed out in turn
	head    int     // queue[head:] are still to be handed out
	done    bool    // message_stop was seen
	keyBuf  []byte  // scratch for an escaped key
	typeBuf []byte  // scratch for an escaped type
	strBuf  []byte  // scratch for an escaped string value
}

// decoderPool keeps decoders, with their 64 KiB read buffer and scratch
// slices, from one stream to the next: allocating and zeroing them was
// a third of the bytes a short real stream cost. Events never point into
// a decoder's buffers (they copy what they keep), so a decoder can be
// reused as soon as its stream ends.
var decoderPool = sync.Pool{New: func() any { return &decoder{sse: new(sseReader)} }}

// maxPooledScratch bounds the scratch a pooled decoder keeps, so that one
// huge event does not pin megabytes for the life of the process.
const maxPooledScratch = 1 << 20

// newDecoder returns a decoder for r, from the pool. Call release when the
// stream is done with it.
func newDecoder(r io.Reader, log *slog.Logger) *decoder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := decoderPool.Get().(*decoder)
	d.sse.reset(r)
	*d = decoder{
		sse: d.sse, log: log, status: http.StatusOK,
		queue: d.queue[:0], keyBuf: d.keyBuf[:0], typeBuf: d.typeBuf[:0], strBuf: d.strBuf[:0],
	}
	return d
}

// release returns d to the pool. It must not be used afterwards.
func (d *decoder) release() {
	d.sse.reset(nil)
	s := d.sse
	if max(cap(s.long), cap(s.data), cap(d.strBuf)) > maxPooledScratch {
		return // let the garbage collector have it
	}
	clear(d.queue[:cap(d.queue)]) // events of an abandoned stream
	d.log, d.header = nil, nil
	decoderPool.Put(d)
}

// next returns the next event. After MessageStop it returns io.EOF. A
// stream that ends before message_stop gives an error wrapping
// ErrIncompleteStream; an error event gives an *APIError.
func (d *decoder) next() (Event, error) {
	for {
		if d.head < len(d.queue) {
			ev := d.queue[d.head]
			d.queue[d.head] = nil
			d.head++
			if d.head == len(d.queue) {
				// Reuse the array: most starts make one or two events.
				d.queue, d.head = d.queue[:0], 0
			}
			return ev, nil
		}
		if d.done {
			return nil, io.EOF
		}
		name, data, err := d.sse.next()
		if err != nil {
			switch {
			case errors.Is(err, ErrMalformedEvent):
				return nil, err
			case err == io.EOF:
				return nil, ErrIncompleteStream
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				return nil, err
			default:
				// A reset or a cut connection mid-stream.
				return nil, fmt.Errorf("%w: %w", ErrIncompleteStream, err)
			}
		}
		typ := name
		if len(typ) == 0 {
			typ = d.dataType(data)
		}
		var ev Event
		switch string(typ) {
		case "content_block_delta":
			ev, err = d.blockDelta(data)
		case "content_block_start":
			ev, err = d.blockStart(data)
		case "content_block_stop":
			ev, err = d.blockStop(data)
		case "message_start":
			ev, err = d.messageStart(data)
		case "message_delta":
			ev, err = d.messageDelta(data)
		case "message_stop":
			d.done = true
			return MessageStop{}, nil
		case "ping":
			continue
		case "error":
			return nil, newStreamError(data, d.status, d.header)
		default:
			d.log.Debug("llm: unknown stream event ignored", "event", string(typ))
			continue
		}
		if err != nil {
			return nil, err
		}
		if ev != nil {
			return ev, nil
		}
	}
}

func malformed(what string, data []byte) error {
	if len(data) > 200 {
		data = data[:200]
	}
	return fmt.Errorf("%w: %s: %q", ErrMalformedEvent, what, data)
}

// dataType returns the "type" field of the object in data, or nil.
func (d *decoder) dataType(data []byte) []byte {
	sc := scanObject(data)
	for k, v, ok := sc.next(&d.keyBuf); ok; k, v, ok = sc.next(&d.keyBuf) {
		if string(k) == "type" {
			t, _ := d.rawString(v, &d.typeBuf)
			return t
		}
	}
	return nil
}

// rawString returns the contents of the raw JSON string v, undoing escapes
// into *buf only when there are any. It does not allocate.
func (d *decoder) rawString(v []byte, buf *[]byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], true
	}
	s, ok := unescape(v, (*buf)[:0])
	*buf = s
	return s, ok
}

// indexed reads the "index" of a content_block_* event and the raw value
// of its field key, which must be present unless key is "".
func (d *decoder) indexed(data []byte, key string) (index int, val []byte, ok bool) {
	haveIndex := false
	sc := scanObject(data)
	for k, v, more := sc.next(&d.keyBuf); more; k, v, more = sc.next(&d.keyBuf) {
		switch string(k) {
		case "index":
			index, haveIndex = atoi(v)
		case key:
			val = v
		}
	}
	return index, val, !sc.err() && haveIndex && (key == "" || val != nil)
}

// blockDelta reads a content_block_delta. This is the hot path: one
// allocation for the string, one for the event.
func (d *decoder) blockDelta(data []byte) (Event, error) {
	index, delta, ok := d.indexed(data, "delta")
	if !ok {
		return nil, malformed("content_block_delta", data)
	}
	var typ, payload []byte
	ds := scanObject(delta)
	for k, v, ok := ds.next(&d.keyBuf); ok; k, v, ok = ds.next(&d.keyBuf) {
		switch string(k) {
		case "type":
			typ = v
		case "text", "partial_json", "thinking", "signature", "citation":
			payload = v
		}
	}
	if ds.err() {
		return nil, malformed("content_block_delta", data)
	}
	t, _ := d.rawString(typ, &d.typeBuf)
	str := func() (string, error) {
		s, ok := unquote(payload, &d.strBuf)
		if !ok {
			return "", malformed(string(t), data)
		}
		return s, nil
	}
	switch string(t) {
	case "text_delta":
		s, err := str()
		return TextDelta{Index: index, Text: s}, err
	case "input_json_delta":
		s, err := str()
		return ToolInputDelta{Index: index, PartialJSON: s}, err
	case "thinking_delta":
		s, err := str()
		return ThinkingDelta{Index: index, Thinking: s}, err
	case "signature_delta":
		s, err := str()
		return SignatureDelta{Index: index, Signature: s}, err
	case "citations_delta":
		if !validJSON(payload) {
			return nil, malformed("citations_delta", data)
		}
		return CitationDelta{Index: index, Citation: bytes.Clone(payload)}, nil
	default:
		if !validJSON(delta) {
			return nil, malformed("content_block_delta", data)
		}
		d.log.Debug("llm: unknown delta type passed on raw", "type", string(t), "index", index)
		return BlockDelta{Index: index, Type: string(t), Raw: bytes.Clone(delta)}, nil
	}
}

func (d *decoder) blockStop(data []byte) (Event, error) {
	index, _, ok := d.indexed(data, "")
	if !ok {
		return nil, malformed("content_block_stop", data)
	}
	return BlockStop{Index: index}, nil
}

func (d *decoder) blockStart(data []byte) (Event, error) {
	// Scanned rather than unmarshalled: a block that arrives whole, such
	// as a web search result, can be tens of kilobytes.
	index, block, ok := d.indexed(data, "content_block")
	if !ok {
		return nil, malformed("content_block_start", data)
	}
	if err := d.startEvents(index, block); err != nil {
		return nil, malformed("content_block_start", data)
	}
	return nil, nil // next hands out the queued events
}

// startEvents queues the events that open the block raw at index: its
// start event, then deltas for any text the start already carries, so that
// a consumer needs no special case for it.
//
// The block is read with the scanner, not encoding/json: starts are one
// event in six of a real stream, and an Unmarshal costs a dozen
// allocations where the scanner costs one per string that is not empty.
// What is kept raw (a tool's input, citations, unknown blocks) is checked
// with json.Valid, since the scanner only skips over it.
func (d *decoder) startEvents(index int, raw []byte) error {
	var (
		typ                       []byte
		id, name, toolset         []byte
		text, thinking, signature []byte
		input, caller, citations  []byte
	)
	sc := scanObject(raw)
	for k, v, ok := sc.next(&d.keyBuf); ok; k, v, ok = sc.next(&d.keyBuf) {
		switch string(k) {
		case "type":
			typ, _ = d.rawString(v, &d.typeBuf)
		case "id":
			id = v
		case "name":
			name = v
		case "toolset_name":
			toolset = v
		case "text":
			text = v
		case "thinking":
			thinking = v
		case "signature":
			signature = v
		case "input":
			input = v
		case "caller":
			caller = v
		case "citations":
			citations = v
		}
	}
	if sc.err() {
		return errors.New("invalid JSON")
	}
	queued := len(d.queue)
	// str is the value of an optional string field: absent and null
	// give "".
	bad := false
	str := func(v []byte) string {
		if v == nil || string(v) == "null" {
			return ""
		}
		s, ok := unquote(v, &d.strBuf)
		bad = bad || !ok
		return s
	}
	switch string(typ) {
	case "text":
		d.queue = append(d.queue, TextStart{Index: index, Text: str(text)})
		if len(citations) > 0 && string(citations) != "null" && string(citations) != "[]" {
			// Rare: a text block that opens with citations. Let
			// encoding/json split and check the array.
			var cs []json.RawMessage
			if err := json.Unmarshal(citations, &cs); err != nil {
				return err
			}
			for _, c := range cs {
				d.queue = append(d.queue, CitationDelta{Index: index, Citation: c})
			}
		}
	case "thinking":
		d.queue = append(d.queue, ThinkingStart{Index: index})
		if s := str(thinking); s != "" {
			d.queue = append(d.queue, ThinkingDelta{Index: index, Thinking: s})
		}
		if s := str(signature); s != "" {
			d.queue = append(d.queue, SignatureDelta{Index: index, Signature: s})
		}
	case "tool_use":
		ev := ToolUseStart{Index: index, ID: str(id), Name: str(name), ToolsetName: str(toolset)}
		if input != nil {
			if !validJSON(input) {
				return errors.New("invalid input")
			}
			ev.Input = bytes.Clone(input)
		}
		if caller != nil && string(caller) != "null" {
			if !validJSON(caller) {
				return errors.New("invalid caller")
			}
			ev.Caller = bytes.Clone(caller)
		}
		d.queue = append(d.queue, ev)
	case "":
		return errors.New("no type")
	default:
		// Kept verbatim, so only checked, not decoded.
		if !validJSON(raw) {
			return errors.New("invalid JSON")
		}
		d.queue = append(d.queue, BlockStart{Index: index, Type: blockTypeName(typ), Raw: bytes.Clone(bytes.TrimSpace(raw))})
	}
	if bad {
		d.queue = d.queue[:queued]
		return errors.New("invalid string")
	}
	return nil
}

// blockTypeName returns typ as a string, without allocating for the block
// types the API sends today. The switch on string(typ) does not allocate.
func blockTypeName(typ []byte) string {
	switch string(typ) {
	case "server_tool_use":
		return "server_tool_use"
	case "web_search_tool_result":
		return "web_search_tool_result"
	case "web_fetch_tool_result":
		return "web_fetch_tool_result"
	case "code_execution_tool_result":
		return "code_execution_tool_result"
	case "bash_code_execution_tool_result":
		return "bash_code_execution_tool_result"
	case "text_editor_code_execution_tool_result":
		return "text_editor_code_execution_tool_result"
	case "tool_search_tool_result":
		return "tool_search_tool_result"
	case "mcp_tool_use":
		return "mcp_tool_use"
	case "mcp_tool_result":
		return "mcp_tool_result"
	case "container_upload":
		return "container_upload"
	case "redacted_thinking":
		return "redacted_thinking"
	}
	return string(typ)
}
