package anthropictest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
)

// A Reply is how the Server answers one request: a *Stream, an *ErrorReply,
// Replay of recorded bytes, Hang, or a ReplyFunc or Repeat wrapping another
// Reply. The interface is sealed; those are the only implementations.
type Reply interface {
	serve(w http.ResponseWriter, c *call)
}

// ReplyFunc returns a Reply computed from the request it answers, for
// loops whose length depends on the client. f may be called from several
// goroutines at once when requests overlap. A nil result is answered with
// 500 api_error.
func ReplyFunc(f func(r *Request) Reply) Reply { return replyFunc(f) }

type replyFunc func(r *Request) Reply

func (f replyFunc) serve(w http.ResponseWriter, c *call) {
	r := f(c.req)
	if r == nil {
		r = HTTPError(http.StatusInternalServerError, "api_error", "anthropictest: ReplyFunc returned nil").ShouldRetry(false)
	}
	r.serve(w, c)
}

// Repeat returns a Reply that stays at the head of the queue and answers
// every request from then on; replies queued after it are never used.
// Repeat(ReplyFunc(f)) lets f answer a whole conversation.
func Repeat(r Reply) Reply { return &repeat{r} }

type repeat struct{ r Reply }

func (r *repeat) serve(w http.ResponseWriter, c *call) { r.r.serve(w, c) }

// Replay returns a Reply that sends sse verbatim as a 200 text/event-stream
// body, flushing at each blank line so that events arrive one by one. sse is
// copied.
func Replay(sse []byte) Reply {
	p := &plan{body: bytes.Clone(sse)}
	for i := 0; ; {
		j := bytes.Index(p.body[i:], []byte("\n\n"))
		if j < 0 {
			if i < len(p.body) {
				p.ends = append(p.ends, len(p.body))
			}
			break
		}
		i += j + 2
		p.ends = append(p.ends, i)
	}
	return replay{p}
}

// ReplayFile returns Replay of the file at path, such as a recorded .sse
// stream.
func ReplayFile(path string) (Reply, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Replay(b), nil
}

type replay struct{ p *plan }

func (r replay) serve(w http.ResponseWriter, c *call) {
	writeStreamHeader(w, c)
	f, _ := w.(http.Flusher)
	start := 0
	for _, end := range r.p.ends {
		if _, err := w.Write(r.p.body[start:end]); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
		start = end
	}
}

// Hang returns a Reply that sends the 200 text/event-stream headers and
// then nothing, not even message_start, until the client goes away or the
// server closes.
func Hang() Reply { return hang{} }

type hang struct{}

func (hang) serve(w http.ResponseWriter, c *call) {
	writeStreamHeader(w, c)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	c.stall()
}

// An ErrorReply is an HTTP error response, as the API sends before a stream
// starts. Its setters return the ErrorReply so they chain.
type ErrorReply struct {
	status    int
	errType   string
	message   string
	requestID string
	header    http.Header
	body      []byte
}

// HTTPError returns a Reply with the given status and the API's error body,
// {"type":"error","error":{"type":errType,"message":message},"request_id":"req_…"},
// where request_id matches the request-id header.
func HTTPError(status int, errType, message string) *ErrorReply {
	return &ErrorReply{status: status, errType: errType, message: message, header: http.Header{}}
}

// RetryAfter sets the retry-after header, in seconds.
func (e *ErrorReply) RetryAfter(seconds int) *ErrorReply {
	return e.Header("Retry-After", strconv.Itoa(seconds))
}

// RetryAfterMs sets the retry-after-ms header, in milliseconds, which the
// official SDKs prefer over retry-after.
func (e *ErrorReply) RetryAfterMs(ms int) *ErrorReply {
	return e.Header("Retry-After-Ms", strconv.Itoa(ms))
}

// ShouldRetry sets the x-should-retry header, which overrides the official
// SDKs' own choice to retry.
func (e *ErrorReply) ShouldRetry(retry bool) *ErrorReply {
	return e.Header("X-Should-Retry", strconv.FormatBool(retry))
}

// RequestID sets the request-id header and the body's request_id, which are
// otherwise req_anthropictest followed by the request's number.
func (e *ErrorReply) RequestID(id string) *ErrorReply {
	e.requestID = id
	return e
}

// Header sets any other response header, such as an
// anthropic-ratelimit-* header.
func (e *ErrorReply) Header(key, value string) *ErrorReply {
	e.header.Set(key, value)
	return e
}

// Body replaces the response body with raw, verbatim, for bodies that do
// not have the API's shape, such as Cloudflare's 413.
func (e *ErrorReply) Body(raw []byte) *ErrorReply {
	e.body = bytes.Clone(raw)
	return e
}

func (e *ErrorReply) serve(w http.ResponseWriter, c *call) {
	id := c.id
	if e.requestID != "" {
		id = e.requestID
	}
	body := e.body
	if body == nil {
		// A struct, not a map, so the keys keep the API's order.
		type apiError struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // the API leaves <, > and & literal
		enc.Encode(struct {
			Type      string   `json:"type"`
			Error     apiError `json:"error"`
			RequestID string   `json:"request_id"`
		}{"error", apiError{e.errType, e.message}, id})
		body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Request-Id", id)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	for k, v := range e.header {
		h[k] = v
	}
	w.WriteHeader(e.status)
	w.Write(body)
}
