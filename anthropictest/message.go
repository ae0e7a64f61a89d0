package anthropictest

import (
	"bufio"
	"bytes"
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentloop/agentloop/internal/apirules"
)

// A request without "stream": true gets the whole Message at once, as
// application/json, as the official SDKs' non-streaming calls and tool
// runners expect. It is built from the events the same script streams, so
// that one script answers both kinds of request alike: each scripted
// event, Event and Replay's too, is read as a client reads the stream. A
// script's faults have their non-streaming forms: pacing delays the whole
// reply by the sum of its delays, an error event is the HTTP error of its
// type (overloaded_error is 529), Reset and Stall are what they are, and a
// script that ends without message_stop sends half of its body.

// serveMessage answers c with the Message p streams.
func (p *plan) serveMessage(w http.ResponseWriter, c *call) {
	var total, delay time.Duration
	for i, next := 0, 0; i < len(p.ends); i++ {
		for next < len(p.pace) && p.pace[next].event <= i {
			delay = p.pace[next].d
			next++
		}
		total += delay
	}
	if total > 0 && !c.wait(total) {
		return
	}
	switch p.ending {
	case endReset:
		resetConn(w)
		return
	case endStall:
		c.stall()
		return
	}
	msg, complete, e := p.message(c)
	if e != nil {
		e.serve(w, c)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Request-Id", c.id)
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	setRateLimits(h, c)
	w.WriteHeader(http.StatusOK)
	if !complete {
		msg = msg[:len(msg)/2] // net/http then closes the connection: the body ends early
	}
	w.Write(msg)
}

// message returns the Message p streams in reply c (see assemble).
func (p *plan) message(c *call) (msg []byte, complete bool, e *HTTPError) {
	body := p.body
	if p.start {
		body = append(p.event(c, 0, 0, p.ends[0]), p.body[p.ends[0]:]...)
	}
	return assemble(body)
}

// errorStatus is the HTTP status of each error type, for an error event
// answered without a stream: the inverse of apirules.ErrorTypes, where
// timeout_error is the gateway's 504.
var errorStatus = func() map[string]int {
	m := map[string]int{}
	for status, typ := range apirules.ErrorTypes {
		m[typ] = max(m[typ], status)
	}
	return m
}()

// assemble reads the server-sent events of body, as a client does, and
// returns the Message's JSON, whether message_stop came, or the HTTPError
// of an error event.
func assemble(body []byte) (msg []byte, complete bool, e *HTTPError) {
	var m object
	var blocks []*blockAcc
	byIndex := map[int64]*blockAcc{}
	for name, data := range sseEvents(body) {
		ev, _ := decodeObject(data)
		switch name {
		case "message_start":
			m, _ = decodeObject(ev.get("message"))
		case "content_block_start":
			b, _ := decodeObject(ev.get("content_block"))
			acc := &blockAcc{block: b}
			blocks = append(blocks, acc)
			byIndex[ev.num("index")] = acc
		case "content_block_delta":
			if acc := byIndex[ev.num("index")]; acc != nil {
				d, _ := decodeObject(ev.get("delta"))
				acc.add(d)
			}
		case "message_delta":
			d, _ := decodeObject(ev.get("delta"))
			for _, f := range d {
				m.set(f.name, f.value)
			}
			usage, _ := decodeObject(m.get("usage"))
			delta, _ := decodeObject(ev.get("usage"))
			for _, f := range delta {
				usage.set(f.name, f.value)
			}
			m.set("usage", usage.json())
		case "message_stop":
			complete = true
		case "error":
			er, _ := decodeObject(ev.get("error"))
			typ := er.str("type")
			return nil, false, &HTTPError{Status: cmp.Or(errorStatus[typ], 500), Type: typ, Message: er.str("message")}
		}
	}
	content := make([][]byte, len(blocks))
	for i, acc := range blocks {
		content[i] = acc.json()
	}
	m.set("content", jsonArray(content))
	return m.json(), complete, nil
}

// jsonArray returns the JSON array of vs, each JSON.
func jsonArray[V ~[]byte](vs []V) []byte {
	b := []byte{'['}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// A blockAcc is one content block being assembled from its start and its
// deltas.
type blockAcc struct {
	block               object
	text, thinking, sig *strings.Builder
	input               strings.Builder
	citations           []jsontext.Value
	content             jsontext.Value // a compaction's summary
}

func (a *blockAcc) add(d object) {
	appendTo := func(b **strings.Builder, field string) {
		if *b == nil {
			*b = new(strings.Builder)
			(*b).WriteString(a.block.str(field))
		}
		(*b).WriteString(d.str(field))
	}
	switch d.str("type") {
	case "text_delta":
		appendTo(&a.text, "text")
	case "thinking_delta":
		appendTo(&a.thinking, "thinking")
	case "signature_delta":
		appendTo(&a.sig, "signature")
	case "input_json_delta":
		a.input.WriteString(d.str("partial_json"))
	case "citations_delta":
		a.citations = append(a.citations, d.get("citation"))
	case "compaction_delta":
		a.content = d.get("content")
	}
}

// json returns the block with its deltas applied. Tool input that is not
// JSON, which a stream cut short leaves, is sent as a string, so that the
// body stays JSON and the client sees the damage.
func (a *blockAcc) json() []byte {
	b := a.block
	for _, f := range []struct {
		name string
		acc  *strings.Builder
	}{{"text", a.text}, {"thinking", a.thinking}, {"signature", a.sig}} {
		if f.acc != nil {
			b.set(f.name, appendJSONString(nil, f.acc.String()))
		}
	}
	if in := strings.TrimSpace(a.input.String()); in != "" {
		v := jsontext.Value(in)
		if !v.IsValid(apirules.Lenient) {
			v = appendJSONString(nil, in)
		}
		b.set("input", v)
	}
	if a.citations != nil {
		b.set("citations", jsonArray(a.citations))
	}
	if a.content != nil {
		b.set("content", a.content)
	}
	return b.json()
}

// An object is a JSON object as its members, in order, so that what is
// sent back keeps the order of the API's.
type object []member

type member struct {
	name  string
	value jsontext.Value
}

// decodeObject decodes v, which must be a JSON object.
func decodeObject(v []byte) (object, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v), apirules.Lenient)
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var o object
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // before the decoder moves on, which voids tok
		value, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		o = append(o, member{name, slices.Clone(value)})
	}
	return o, nil
}

func (o object) get(name string) jsontext.Value {
	for _, m := range o {
		if m.name == name {
			return m.value
		}
	}
	return nil
}

// str returns the member name if it is a string, else "".
func (o object) str(name string) string {
	v := o.get(name)
	if v.Kind() != '"' {
		return ""
	}
	tok, _ := jsontext.NewDecoder(bytes.NewReader(v), apirules.Lenient).ReadToken()
	return tok.String()
}

// num returns the member name if it is an integer, else -1.
func (o object) num(name string) int64 {
	n, err := strconv.ParseInt(string(o.get(name)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// set replaces the member name, or adds it at the end.
func (o *object) set(name string, v []byte) {
	for i := range *o {
		if (*o)[i].name == name {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, member{name, v})
}

func (o object) json() []byte {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(appendJSONString(b, m.name), ':'), m.value...)
	}
	return append(b, '}')
}

// sseEvents yields the name and data of each event of body, by the rules
// the official SDKs' decoders follow: lines end in \n, \r\n or \r; data
// lines join with \n; one space after the colon is dropped; comments are
// skipped.
func sseEvents(body []byte) func(yield func(string, []byte) bool) {
	return func(yield func(string, []byte) bool) {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, len(body)+1)
		sc.Split(scanLines)
		var name string
		var data []byte
		have := false
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 {
				if have && !yield(name, data) {
					return
				}
				name, data, have = "", nil, false
				continue
			}
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				name, have = string(value), true
			case "data":
				if data != nil {
					data = append(data, '\n')
				}
				data, have = append(data, value...), true
			}
		}
		if have {
			yield(name, data)
		}
	}
}

// scanLines is bufio.ScanLines for SSE, which also ends a line at a lone \r.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0 && atEOF && len(data) > 0:
		return len(data), data, nil
	case i < 0:
		return 0, nil, nil
	case data[i] == '\r' && i+1 == len(data) && !atEOF:
		return 0, nil, nil // a \n may follow
	case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
		return i + 2, data[:i], nil
	}
	return i + 1, data[:i], nil
}
