package llm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// decoder turns the server-sent events of one response into [Event]s.
//
// Like the official SDKs it dispatches on the SSE event name; an event
// without a name (seen only behind proxies) is dispatched on its data's
// "type" instead of being dropped. Each event's data is decoded into the
// small wire structs below by github.com/go-json-experiment/json, the
// module that becomes encoding/json/v2 in Go 1.27: in one pass, where
// encoding/json validates first and then decodes, which made a delta
// 2–4× slower and cost 9 allocations instead of 2. What is kept raw (a
// tool's input, citations, blocks of other types) is a jsontext.Value,
// which Unmarshal has checked along with the rest.
type decoder struct {
	sse    sseReader
	log    *slog.Logger
	header http.Header // of the response, for error events

	usage Usage   // the turn's usage so far; message_delta overwrites fields
	queue []Event // events made from one start event, handed out in turn
	done  bool    // message_stop was seen
	wire  wireEvent
	block wireBlock
}

// wireEvent is the data of every stream event but message_start: each
// event type fills its own fields. It is reused from event to event, so
// that a delta costs no allocation beyond its string.
type wireEvent struct {
	Index        int            `json:"index"` // -1 until the data sets it
	Delta        wireDelta      `json:"delta"`
	ContentBlock jsontext.Value `json:"content_block"`
	Usage        wireUsage      `json:"usage"`
}

// wireUsage is a usage object. Its fields are pointers because an absent
// or null field must not overwrite what the turn already has.
type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// merge returns u with the fields w sets overwritten.
func (w wireUsage) merge(u Usage) Usage {
	for _, f := range []struct{ src, dst *int64 }{{w.InputTokens, &u.InputTokens}, {w.OutputTokens, &u.OutputTokens},
		{w.CacheCreationInputTokens, &u.CacheCreationInputTokens}, {w.CacheReadInputTokens, &u.CacheReadInputTokens}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return u
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

// wireContainer is a container object such as
// {"id":"container_…","expires_at":"…"}. The expiry is not kept: the API
// renews it with every use, and a request that names an expired container
// gets a clear error.
type wireContainer struct {
	ID string `json:"id"`
}

// wireText is a JSON string (or null, for "") unquoted into a buffer that
// is kept from event to event, so that an escaped delta costs one
// allocation, for the string it becomes, rather than two.
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
	// ReadValue has checked the syntax, so an error here can only report
	// invalid UTF-8, which lenient allows and which is now U+FFFD.
	*t, _ = jsontext.AppendUnquote((*t)[:0], v)
	return nil
}

// reset clears w for the next event, keeping the buffers that nothing
// handed out points into.
func (w *wireEvent) reset() {
	d := &w.Delta
	*w = wireEvent{Index: -1, ContentBlock: w.ContentBlock[:0], Delta: wireDelta{Text: d.Text[:0],
		PartialJSON: d.PartialJSON[:0], Thinking: d.Thinking[:0], Signature: d.Signature[:0]}}
}

// newDecoder returns a decoder for r.
func newDecoder(r io.Reader, log *slog.Logger) *decoder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &decoder{log: log}
	d.sse.br = bufio.NewReaderSize(r, 64<<10)
	return d
}

// next returns the next event. After MessageStop it returns io.EOF. A
// stream that ends before message_stop gives an error wrapping
// ErrIncompleteStream; an error event gives an *APIError.
func (d *decoder) next() (Event, error) {
	for {
		if len(d.queue) > 0 {
			ev := d.queue[0]
			d.queue[0] = nil
			d.queue = d.queue[1:]
			if len(d.queue) == 0 {
				d.queue = d.queue[:0:cap(d.queue)] // most starts make one or two events
			}
			return ev, nil
		}
		if d.done {
			return nil, io.EOF
		}
		name, data, err := d.sse.next()
		if err != nil {
			switch {
			case errors.Is(err, errMalformedEvent):
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
		if len(name) == 0 {
			name = d.dataType(data)
		}
		var ev Event
		switch string(name) {
		case "content_block_delta":
			ev, err = d.blockDelta(data)
		case "content_block_start":
			err = d.blockStart(data)
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
			return nil, newStreamError(data, d.header)
		default:
			d.log.Debug("llm: unknown stream event ignored", "event", string(name))
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

// dataType returns the "type" of an event that came without a name.
func (d *decoder) dataType(data []byte) []byte {
	var w struct {
		Type string `json:"type"`
	}
	json2.Unmarshal(data, &w, lenient)
	return []byte(w.Type)
}

func malformed(what string, data []byte, err error) error {
	if len(data) > 200 {
		data = data[:200]
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v: %q", errMalformedEvent, what, err, data)
	}
	return fmt.Errorf("%w: %s: %q", errMalformedEvent, what, data)
}

// decode unmarshals the data of an event of type what into d.wire, which
// it clears first, and requires an index when indexed is set.
func (d *decoder) decode(what string, data []byte, indexed bool) error {
	d.wire.reset()
	if err := json2.Unmarshal(data, &d.wire, lenient); err != nil {
		return malformed(what, data, err)
	}
	if indexed && d.wire.Index < 0 {
		return malformed(what, data, errors.New("no index"))
	}
	return nil
}

// blockDelta reads a content_block_delta. This is the hot path: one
// allocation for the string, one for the event.
func (d *decoder) blockDelta(data []byte) (Event, error) {
	if err := d.decode("content_block_delta", data, true); err != nil {
		return nil, err
	}
	i, w := d.wire.Index, &d.wire.Delta
	switch w.Type {
	case "text_delta":
		return TextDelta{Index: i, Text: string(w.Text)}, nil
	case "input_json_delta":
		return ToolInputDelta{Index: i, PartialJSON: string(w.PartialJSON)}, nil
	case "thinking_delta":
		return ThinkingDelta{Index: i, Thinking: string(w.Thinking)}, nil
	case "signature_delta":
		return signatureDelta{Index: i, Signature: string(w.Signature)}, nil
	case "citations_delta":
		return citationDelta{Index: i, Citation: []byte(w.Citation)}, nil
	}
	// A delta this package does not model: the whole of it, raw.
	var raw struct {
		Delta jsontext.Value `json:"delta"`
	}
	json2.Unmarshal(data, &raw, lenient) // valid: decode has checked data
	d.log.Debug("llm: unknown delta type passed on raw", "type", w.Type, "index", i)
	return rawDelta{Index: i, Type: string(w.Type), Raw: []byte(raw.Delta)}, nil
}

func (d *decoder) blockStop(data []byte) (Event, error) {
	if err := d.decode("content_block_stop", data, true); err != nil {
		return nil, err
	}
	return BlockStop{Index: d.wire.Index}, nil
}

func (d *decoder) blockStart(data []byte) error {
	if err := d.decode("content_block_start", data, true); err != nil {
		return err
	}
	if err := d.startEvents(d.wire.Index, d.wire.ContentBlock); err != nil {
		return malformed("content_block_start", data, err)
	}
	return nil // next hands out the queued events
}

// wireBlock is a content block as content_block_start and message_start
// carry it.
type wireBlock struct {
	Type        string           `json:"type"`
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Input       jsontext.Value   `json:"input"`
	Caller      jsontext.Value   `json:"caller"`
	ToolsetName string           `json:"toolset_name"`
	Text        string           `json:"text"`
	Thinking    string           `json:"thinking"`
	Signature   string           `json:"signature"`
	Citations   []jsontext.Value `json:"citations"`
}

// startEvents queues the events that open the block raw at index: its
// start event, then deltas for any text the start already carries, so that
// a consumer needs no special case for it. raw has been checked to be
// valid JSON by the Unmarshal that found it; it is copied if kept.
func (d *decoder) startEvents(index int, raw jsontext.Value) error {
	d.block = wireBlock{} // reused only to save an allocation per start
	b := &d.block
	if err := json2.Unmarshal(raw, b, lenient); err != nil {
		return err
	}
	switch b.Type {
	case "text":
		d.queue = append(d.queue, TextStart{Index: index, Text: b.Text})
		for _, c := range b.Citations {
			d.queue = append(d.queue, citationDelta{Index: index, Citation: []byte(c)})
		}
	case "thinking":
		d.queue = append(d.queue, thinkingStart{Index: index})
		if b.Thinking != "" {
			d.queue = append(d.queue, ThinkingDelta{Index: index, Thinking: b.Thinking})
		}
		if b.Signature != "" {
			d.queue = append(d.queue, signatureDelta{Index: index, Signature: b.Signature})
		}
	case "tool_use":
		if string(b.Caller) == "null" {
			b.Caller = nil
		}
		d.queue = append(d.queue, ToolUseStart{Index: index, ID: b.ID, Name: b.Name, Input: []byte(b.Input),
			Caller: []byte(b.Caller), ToolsetName: b.ToolsetName})
	case "":
		return errors.New("no type")
	default:
		// Kept verbatim.
		d.queue = append(d.queue, rawStart{Index: index, Type: b.Type, Raw: bytes.Clone(raw)})
	}
	return nil
}

// messageStart reads a message_start. A second one restarts the turn (a
// proxy spliced two responses), and usage starts over with it.
func (d *decoder) messageStart(data []byte) (Event, error) {
	var w struct {
		Message *struct {
			ID         string           `json:"id"`
			Model      string           `json:"model"`
			Content    []jsontext.Value `json:"content"`
			Usage      wireUsage        `json:"usage"`
			Container  wireContainer    `json:"container"`
			StopReason string           `json:"stop_reason"`
		} `json:"message"`
	}
	if err := json2.Unmarshal(data, &w, lenient); err != nil || w.Message == nil {
		return nil, malformed("message_start", data, err)
	}
	m := w.Message
	d.usage = m.Usage.merge(Usage{})
	// A message can arrive with its content already in message_start and
	// no block events (programmatic tool calling). Hand the blocks out as
	// if they had been streamed, so that consumers see one shape.
	for i, raw := range m.Content {
		if err := d.startEvents(i, raw); err != nil {
			d.queue = d.queue[:0]
			return nil, malformed("message_start content", data, err)
		}
		d.queue = append(d.queue, BlockStop{Index: i})
	}
	if m.StopReason != "" {
		d.queue = append(d.queue, MessageDelta{StopReason: StopReason(m.StopReason), Usage: d.usage,
			Container: m.Container.ID})
	}
	return MessageStart{ID: m.ID, Model: m.Model, Usage: d.usage, Container: m.Container.ID}, nil
}

func (d *decoder) messageDelta(data []byte) (Event, error) {
	if err := d.decode("message_delta", data, false); err != nil {
		return nil, err
	}
	w := &d.wire.Delta
	d.usage = d.wire.Usage.merge(d.usage)
	return MessageDelta{StopReason: StopReason(w.StopReason), Usage: d.usage,
		Container: w.Container.ID}, nil
}
