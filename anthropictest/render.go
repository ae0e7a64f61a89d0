package anthropictest

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A plan is a rendered script: the body and where each event ends in it.
// Two events differ from reply to reply, and are rendered again for each:
// message_start, first if start is set, which carries the reply's id and
// model, and the error event, last if errType is set, which carries the
// request's id. body holds them as Bytes renders them.
type plan struct {
	body   []byte
	ends   []int      // end offset in body of each event
	pace   []paceMark // delay changes, by event number, ascending
	ending ending

	start           bool
	id, model       string // set by Message, if at all
	startUsage      []byte
	errType, errMsg string
}

type paceMark struct {
	event int
	d     time.Duration
}

func (s *Stream) compile() *plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plan != nil {
		return s.plan
	}
	p := &plan{ending: s.ending}
	deltas := 0
	size := 400
	for _, it := range s.items {
		size += len(it.a) + len(it.b) + 128 // the longest fixed part is ~110 bytes
		switch it.kind {
		case kTextDelta, kThinkingDelta, kSignatureDelta, kInputDelta, kDelta:
			deltas++
		}
	}
	p.body = make([]byte, 0, size)
	p.ends = make([]int, 0, len(s.items)+4)
	b := p.body

	if !s.noStart {
		p.start, p.id, p.model = true, s.id, s.model
		p.startUsage = s.appendUsage(nil, s.outTok, true)
		b = p.appendStart(b, msgID(1), defaultModel)
		p.ends = append(p.ends, len(b))
	}

	var tail []item
	if s.ending == endNone {
		// The default end of a turn: close the open block and stop.
		if s.open {
			tail = append(tail, item{kind: kBlockStop, index: s.nextIdx - 1})
		}
		reason := "end_turn"
		if s.hasTool {
			reason = "tool_use"
		}
		tail = append(tail, item{kind: kStop, a: reason, n: -1})
	}
	for _, it := range s.items {
		b = s.render(p, b, it, deltas)
	}
	for _, it := range tail {
		b = s.render(p, b, it, deltas)
	}
	p.body = b
	s.plan = p
	return p
}

// render appends the event(s) of one item to b and records where they end.
func (s *Stream) render(p *plan, b []byte, it item, deltas int) []byte {
	switch it.kind {
	case kPace:
		p.pace = append(p.pace, paceMark{event: len(p.ends), d: it.d})
		return b
	case kBlockStart:
		b = append(append(append(appendBlockEvent(b, "content_block_start", it.index), `,"content_block":`...), it.a...), "}\n\n"...)
		if p.start && it.index == 0 {
			p.ends = append(p.ends, len(b))
			b = append(b, pingEvent...)
		}
	case kTextDelta:
		b = appendDelta(b, it.index, `{"type":"text_delta","text":`, it.a)
	case kThinkingDelta:
		b = appendDelta(b, it.index, `{"type":"thinking_delta","thinking":`, it.a)
	case kSignatureDelta:
		b = appendDelta(b, it.index, `{"type":"signature_delta","signature":`, it.a)
	case kInputDelta:
		b = appendDelta(b, it.index, `{"type":"input_json_delta","partial_json":`, it.a)
	case kDelta:
		b = append(append(append(appendBlockEvent(b, "content_block_delta", it.index), `,"delta":`...), it.a...), "}\n\n"...)
	case kBlockStop:
		b = append(appendBlockEvent(b, "content_block_stop", it.index), "}\n\n"...)
	case kEvent:
		b = append(b, "event: "...)
		b = append(b, it.a...)
		b = append(b, "\ndata: "...)
		b = append(b, it.b...)
		b = append(b, "\n\n"...)
	case kRaw:
		b = append(b, it.a...)
	case kStop:
		out := it.n
		if out < 0 {
			out = max(deltas, 1)
		}
		b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
		b = appendJSONString(b, it.a)
		b = append(b, `,"stop_sequence":null},"usage":`...)
		b = s.appendUsage(b, out, false)
		b = append(b, "}\n\n"...)
		p.ends = append(p.ends, len(b))
		b = append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	case kError:
		p.errType, p.errMsg = it.a, it.b
		b = p.appendError(b, reqID(1))
	}
	p.ends = append(p.ends, len(b))
	return b
}

// pingEvent is the ping the API sends after a stream's first
// content_block_start, with its space.
const pingEvent = "event: ping\ndata: {\"type\": \"ping\"}\n\n"

// msgID and reqID are the message id and request id of a server's nth
// reply: msg_01 and 22 characters, as the API's; req_ and 27.
func msgID(n int) string { return fmt.Sprintf("msg_01AnthropicTest%09d", n) }
func reqID(n int) string { return fmt.Sprintf("req_anthropictest%010d", n) }

// appendStart appends the message_start event of a reply with the given
// id and model, unless Message set them.
func (p *plan) appendStart(b []byte, id, model string) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	b = appendJSONString(b, cmp.Or(p.id, id))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, cmp.Or(p.model, model))
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	b = append(b, p.startUsage...)
	return append(b, "}}\n\n"...)
}

// appendError appends the error event of a reply to request requestID.
func (p *plan) appendError(b []byte, requestID string) []byte {
	b = append(b, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"...)
	b = appendJSONString(b, p.errType)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, p.errMsg)
	b = append(b, `},"request_id":`...)
	b = appendJSONString(b, requestID)
	return append(b, "}\n\n"...)
}

// event returns event i of the plan, body[from:to], as sent in reply c.
func (p *plan) event(c *call, i, from, to int) []byte {
	switch {
	case i == 0 && p.start:
		return p.appendStart(nil, c.msgID, c.model)
	case i == len(p.ends)-1 && p.errType != "":
		return p.appendError(nil, c.id)
	}
	return p.body[from:to]
}

func (s *Stream) appendUsage(b []byte, output int, start bool) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(s.inTok), 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(s.cacheW), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(s.cacheR), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(output), 10)
	if start {
		b = append(b, `,"service_tier":"standard"`...)
	} else {
		b = s.appendServerUse(s.appendIterations(b, output))
	}
	return append(b, '}')
}

func appendDelta(b []byte, index int, prefix, value string) []byte {
	b = append(append(appendBlockEvent(b, "content_block_delta", index), `,"delta":`...), prefix...)
	return append(appendJSONString(b, value), "}}\n\n"...)
}

// appendBlockEvent appends the opening of a content block event, up to
// its index: `event: name\ndata: {"type":name,"index":N`.
func appendBlockEvent(b []byte, name string, index int) []byte {
	b = append(append(append(append(b, "event: "...), name...), "\ndata: {\"type\":\""...), name...)
	return strconv.AppendInt(append(b, `","index":`...), int64(index), 10)
}

// serve writes the stream: the headers, then each event flushed on its own
// (or in large writes when the server is Buffered), then the ending.
func (s *Stream) serve(w http.ResponseWriter, c *call) {
	if c.srv != nil && !c.srv.Lenient {
		c.srv.register(c, s)
	}
	p := s.compile()
	if c.threaded && c.srv != nil {
		// A whole Message is held before it is sent, so that a client that
		// continues the thread as soon as it has read it finds it; any
		// other reply frees the thread once served (serveHTTP).
		if msg, complete, e := p.message(c); complete && e == nil {
			c.srv.settleThread(c.req, c, msg)
		}
	}
	if !c.stream {
		p.serveMessage(w, c)
		return
	}
	writeStreamHeader(w, c)
	f, _ := w.(http.Flusher)
	if c.srv != nil && c.srv.Buffered && len(p.pace) == 0 {
		// Three writes at most: the events rendered per reply, and the rest.
		n, from := len(p.ends), 0
		if p.start {
			w.Write(p.event(c, 0, 0, p.ends[0]))
			from = p.ends[0]
		}
		to := len(p.body)
		if p.errType != "" {
			to = from
			if n >= 2 {
				to = p.ends[n-2]
			}
		}
		if _, err := w.Write(p.body[from:to]); err != nil {
			return
		}
		if p.errType != "" {
			w.Write(p.event(c, n-1, to, len(p.body)))
		}
		if f != nil {
			f.Flush()
		}
	} else {
		start, delay, next := 0, time.Duration(0), 0
		for i, end := range p.ends {
			for next < len(p.pace) && p.pace[next].event <= i {
				delay = p.pace[next].d
				next++
			}
			if delay > 0 && !c.wait(delay) {
				return
			}
			if _, err := w.Write(p.event(c, i, start, end)); err != nil {
				return
			}
			if f != nil {
				f.Flush()
			}
			start = end
		}
	}
	switch p.ending {
	case endReset:
		resetConn(w)
	case endStall:
		if f != nil {
			f.Flush() // the headers, when no event was sent
		}
		c.stall()
	}
}
