package llm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// maxEventSize bounds one server-sent event, lest a hostile server make the
// reader buffer without end. A tool input sent whole can reach megabytes;
// the official SDK allows 32 MiB, and so do we.
const maxEventSize = 32 << 20

var (
	errEventTooLarge = fmt.Errorf("%w: event larger than %d bytes", errMalformedEvent, maxEventSize)
	errLoneCR        = fmt.Errorf("%w: a lone CR as a line end is not supported", errMalformedEvent)
)

// sseReader splits a text/event-stream into events with a bufio.Scanner, as
// the MCP Go SDK's scanEvents does. An event still pending at the end of the
// stream is delivered, so a missing final blank line loses nothing.
//
// Lines end in LF or CRLF, as both official SDKs read them. A lone CR,
// which the WHATWG standard also allows, is reported as malformed rather
// than misread: no Anthropic endpoint or proxy sends one, and a CR cannot
// occur inside a JSON value.
type sseReader struct {
	sc   *bufio.Scanner
	data []byte // the joined data lines of the pending event, each ending in LF
	name []byte // the event field of the pending event
	bom  bool   // the byte-order mark check is done
	// behind says, at the end of an event, that a whole event and at
	// least joinBacklog bytes already read follow it (see decoder.join).
	behind, again      bool // again: next returns the last event again
	lastName, lastData []byte
	lastErr            error
}

// joinBacklog is how far behind the stream a reader must be for deltas to
// be joined: a model streams about 1 to 2 KiB a second, and a short answer
// is shorter, so that a reader keeping up gets the deltas as they were sent.
const joinBacklog = 4 << 10

// split is bufio.ScanLines, noting at the end of each event whether the
// reader is behind.
func (s *sseReader) split(data []byte, atEOF bool) (int, []byte, error) {
	n, line, err := bufio.ScanLines(data, atEOF)
	if rest := data[n:]; n > 0 && len(line) == 0 {
		s.behind = len(rest) >= joinBacklog && (bytes.Contains(rest, []byte("\n\n")) || bytes.Contains(rest, []byte("\n\r\n")))
	}
	return n, line, err
}

// next returns the next event's name and data, valid until the following
// call. At the end of the stream it returns io.EOF.
func (s *sseReader) next() (name, data []byte, err error) {
	if s.again {
		s.again = false
		return s.lastName, s.lastData, s.lastErr
	}
	defer func() { s.lastName, s.lastData, s.lastErr = name, data, err }()
	s.name, s.data = s.name[:0], s.data[:0]
	seen := false // the pending event has an event or data field
	for {
		more := s.sc.Scan()
		if err := s.sc.Err(); !more && err != nil { // what arrived before err is read first
			if err == bufio.ErrTooLong {
				err = errEventTooLarge
			}
			return nil, nil, err
		} else if !more && !seen {
			return nil, nil, io.EOF
		}
		line := s.sc.Bytes()
		if !s.bom {
			s.bom = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if (!more || len(line) == 0) && seen {
			return s.name, bytes.TrimSuffix(s.data, []byte("\n")), nil
		}
		if bytes.IndexByte(line, '\r') >= 0 {
			return nil, nil, errLoneCR
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			s.name, seen = append(s.name[:0], value...), true
		case "data":
			if len(s.data)+len(value) >= maxEventSize {
				return nil, nil, errEventTooLarge
			}
			s.data, seen = append(append(s.data, value...), '\n'), true
		}
		// Comments, id, retry and other fields mean nothing to this API.
	}
}

// decoder turns the server-sent events of one response into [Event]s. It
// dispatches on the event name, or on the data's "type" when a proxy
// dropped it, as the official SDKs do, and decodes the data into reused
// wire structs with go-json-experiment/json in one pass (encoding/json
// validates first: 2–4× slower a delta, at 9 allocations instead of 2).
type decoder struct {
	sse    sseReader
	log    *slog.Logger
	header http.Header // of the response, for error events
	usage  Usage       // the turn's so far; message_delta overwrites fields
	queue  []Event     // the events of one start, handed out in turn
	wire   wireEvent
	joined []byte // the text of a join
}

// wireEvent is the data of every stream event, reused so that a delta
// costs no allocation beyond its string.
type wireEvent struct {
	Index        int            `json:"index"` // -1 until the data sets it
	Delta        wireDelta      `json:"delta"`
	ContentBlock jsontext.Value `json:"content_block"`
	Usage        wireUsage      `json:"usage"`
	Message      *struct {
		ID         string           `json:"id"`
		Model      string           `json:"model"`
		Content    []jsontext.Value `json:"content"`
		Usage      wireUsage        `json:"usage"`
		Container  wireContainer    `json:"container"`
		StopReason string           `json:"stop_reason"`
	} `json:"message"`
}

// wireDelta is the delta of a content_block_delta or a message_delta.
type wireDelta struct {
	Type        string         `json:"type"`
	Text        wireText       `json:"text"`
	PartialJSON wireText       `json:"partial_json"`
	Thinking    wireText       `json:"thinking"`
	Signature   wireText       `json:"signature"`
	Citation    jsontext.Value `json:"citation"`
	StopReason  string         `json:"stop_reason"`
	Container   wireContainer  `json:"container"`
}

// wireContainer is a container object; its expiry, renewed with every use,
// is not kept.
type wireContainer struct {
	ID string `json:"id"`
}

// wireUsage is a usage object, decoded into the Usage it points to:
// encoding/json's semantics keep a field that is absent or null.
type wireUsage struct {
	*Usage
	Iterations []struct {
		Type string `json:"type"`
		Usage
	} `json:"iterations"`
}

// compact sets the usage's compaction from the iterations, if there are
// any: what the server's compaction used, billed apart.
func (w wireUsage) compact() {
	if w.Iterations != nil {
		w.Compaction = nil // cumulative, as the rest
	}
	for _, it := range w.Iterations {
		if it.Type == "compaction" {
			it.Compaction = nil
			w.Compaction = new(cmp.Or(w.Compaction, &Usage{}).Add(it.Usage))
		}
	}
}

// wireText is a JSON string (or null, for "") unquoted into a buffer kept
// from event to event: an escaped delta costs one allocation, not two.
type wireText []byte

func (t *wireText) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	switch {
	case err != nil:
		return err
	case v.Kind() == 'n':
		*t = (*t)[:0]
		return nil
	case v.Kind() != '"':
		return fmt.Errorf("%s where a string belongs", v.Kind())
	}
	// ReadValue checked the syntax; invalid UTF-8, allowed, is now U+FFFD.
	*t, _ = jsontext.AppendUnquote((*t)[:0], v)
	return nil
}

// newDecoder returns a decoder for r, a response's body whose header is h.
func newDecoder(r io.Reader, h http.Header, log *slog.Logger) *decoder {
	d := &decoder{log: cmp.Or(log, slog.New(slog.DiscardHandler)), header: h, sse: sseReader{sc: bufio.NewScanner(r)}}
	d.sse.sc.Buffer(make([]byte, 64<<10), maxEventSize)
	d.sse.sc.Split(d.sse.split)
	return d
}

// next returns the next event, an error wrapping ErrIncompleteStream if the
// stream ends before MessageStop, or an error event's *APIError. Its
// reader, the client, stops at MessageStop.
func (d *decoder) next() (Event, error) {
	for {
		if len(d.queue) > 0 {
			ev := d.queue[0]
			d.queue = d.queue[1:]
			return ev, nil
		}
		name, data, err := d.sse.next()
		switch {
		case err == io.EOF:
			return nil, ErrIncompleteStream
		case errors.Is(err, errMalformedEvent), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return nil, err
		case err != nil: // a reset or a cut connection mid-stream
			return nil, fmt.Errorf("%w: %w", ErrIncompleteStream, err)
		}
		if len(name) == 0 {
			var w struct {
				Type string `json:"type"`
			}
			json2.Unmarshal(data, &w, lenient)
			name = []byte(w.Type)
		}
		switch string(name) {
		case "message_stop":
			return MessageStop{}, nil
		case "ping":
		case "error":
			return nil, newAPIError(0, d.header, data)
		case "content_block_delta", "content_block_start", "content_block_stop", "message_delta", "message_start":
			if ev, err := d.event(name, data); ev != nil || err != nil {
				return ev, err
			}
		default:
			d.log.Debug("llm: unknown stream event ignored", "event", string(name))
		}
	}
}

// malformed is the error of an event, or a response, that data cannot be.
func malformed(what string, data []byte, err error) error {
	if err != nil {
		what += ": " + err.Error()
	}
	return fmt.Errorf("%w: %s: %q", errMalformedEvent, what, data[:min(len(data), 200)])
}

// event reads one event into d.wire; the events of a start it queues.
func (d *decoder) event(what, data []byte) (Event, error) {
	dw := &d.wire
	if err := d.decode(data); err != nil {
		return nil, malformed(string(what), data, err)
	}
	i, w := dw.Index, &dw.Delta
	switch {
	case string(what) == "message_start":
		return d.messageStart(data)
	case string(what) == "message_delta":
		dw.Usage.compact()
		return MessageDelta{StopReason: StopReason(w.StopReason), Usage: d.usage, Container: w.Container.ID}, nil
	case i < 0:
		return nil, malformed(string(what), data, errors.New("no index"))
	case string(what) == "content_block_stop":
		return BlockStop{Index: i}, nil
	case string(what) == "content_block_start":
		if err := d.startEvents(i, dw.ContentBlock); err != nil {
			return nil, malformed(string(what), data, err)
		}
		return nil, nil
	}
	// A content_block_delta, the hot path: allocates its string and event.
	switch w.Type {
	case "text_delta":
		return TextDelta{Index: i, Text: d.join(i, w.Type, &w.Text)}, nil
	case "input_json_delta":
		return ToolInputDelta{Index: i, PartialJSON: string(w.PartialJSON)}, nil
	case "thinking_delta":
		return ThinkingDelta{Index: i, Thinking: d.join(i, w.Type, &w.Thinking)}, nil
	case "signature_delta":
		return signatureDelta{Index: i, Signature: string(w.Signature)}, nil
	case "citations_delta":
		return citationDelta{Index: i, Citation: []byte(w.Citation)}, nil
	}
	var raw struct {
		Delta jsontext.Value `json:"delta"`
	}
	json2.Unmarshal(data, &raw, lenient) // valid: checked above
	d.log.Debug("llm: unknown delta type passed on raw", "type", w.Type, "index", i)
	return rawDelta{Index: i, Raw: []byte(raw.Delta)}, nil
}

// decode reads data into d.wire, whose buffers it reuses.
func (d *decoder) decode(data []byte) error {
	dw := &d.wire
	*dw = wireEvent{Index: -1, Usage: wireUsage{Usage: &d.usage}, ContentBlock: dw.ContentBlock[:0],
		Delta: wireDelta{Text: dw.Delta.Text[:0], PartialJSON: dw.Delta.PartialJSON[:0], Thinking: dw.Delta.Thinking[:0],
			Signature: dw.Delta.Signature[:0]}}
	return json2.Unmarshal(data, dw, asV1)
}

// join returns the text of the delta just read, text (a field of d.wire),
// joined with those of the deltas of its type for block i that follow it,
// as long as the reader is behind: one that fell behind a long answer (a
// slow terminal, a busy machine) catches up in one event where it would
// take thousands, each allocated and passed up through every layer. The
// first event it does not join is read again next.
func (d *decoder) join(i int, typ string, text *wireText) string {
	d.joined = append(d.joined[:0], *text...)
	for d.sse.behind {
		if name, data, err := d.sse.next(); err != nil || string(name) != "content_block_delta" || d.decode(data) != nil || d.wire.Index != i || d.wire.Delta.Type != typ {
			d.sse.again = true
			break
		}
		d.joined = append(d.joined, *text...)
	}
	return string(d.joined)
}

// startEvents queues the events that open the block raw at index: its
// start, then deltas for what it already holds.
func (d *decoder) startEvents(index int, raw []byte) error {
	b, err := unmarshalBlock(raw)
	if rb, ok := b.(RawBlock); ok {
		b = RawBlock{Type: rb.Type, JSON: bytes.Clone(rb.JSON)} // not the decoder's buffer
	}
	if err == nil {
		d.queue = openEvents(d.queue, index, b)
	}
	return err
}

// messageStart reads a message_start; usage starts over with it.
func (d *decoder) messageStart(data []byte) (Event, error) {
	m := d.wire.Message
	if m == nil {
		return nil, malformed("message_start", data, nil)
	}
	d.usage = *cmp.Or(m.Usage.Usage, &Usage{})
	m.Usage.Usage = &d.usage
	m.Usage.compact()
	// A message may come whole in message_start (programmatic tool
	// calling): its blocks are handed out as if streamed, in one shape.
	for i, raw := range m.Content {
		if err := d.startEvents(i, raw); err != nil {
			d.queue = d.queue[:0]
			return nil, malformed("message_start content", data, err)
		}
		d.queue = append(d.queue, BlockStop{Index: i})
	}
	if m.StopReason != "" {
		d.queue = append(d.queue, MessageDelta{StopReason: StopReason(m.StopReason), Usage: d.usage, Container: m.Container.ID})
	}
	return MessageStart{ID: m.ID, Model: m.Model, Usage: d.usage, Container: m.Container.ID}, nil
}
