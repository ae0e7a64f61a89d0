package anthropictest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/agentloop/agentloop/internal/apirules"
)

// A Reply is how the Server answers one request: a *Stream (built with
// NewStream or Replay), an HTTPError, or a ReplyFunc or Repeat wrapping
// another Reply. The interface is sealed; those are the only
// implementations.
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
		r = HTTPError{Message: "anthropictest: ReplyFunc returned nil", ShouldRetry: "false"}
	}
	r.serve(w, c)
}

// Repeat returns a Reply that stays at the head of the queue and answers
// every request from then on; replies queued after it are never used.
// Repeat(ReplyFunc(f)) lets f answer a whole conversation.
func Repeat(r Reply) Reply { return &repeat{r} }

type repeat struct{ r Reply }

func (r *repeat) serve(w http.ResponseWriter, c *call) { r.r.serve(w, c) }

// An HTTPError is an HTTP error response, as the API sends before a stream
// starts. Its zero value is 500 api_error. The body is the API's,
// {"type":"error","error":{"type":…,"message":…},"request_id":"req_…"},
// with request_id matching the request-id header:
//
//	anthropictest.HTTPError{Status: 529, Message: "Overloaded", RetryAfter: 2 * time.Second}
type HTTPError struct {
	// Status is the HTTP status. Default 500.
	Status int
	// Type is the error type, such as "rate_limit_error". Default: the
	// API's type for Status ("overloaded_error" for 529, "api_error" for
	// a status the API does not document).
	Type string
	// Message is the error message.
	Message string
	// RequestID is the request-id header and the body's request_id.
	// Default: req_anthropictest followed by the request's number.
	RequestID string
	// RetryAfter, if positive, is sent as retry-after in seconds when it is
	// a whole number of seconds, as the API does, and as retry-after-ms
	// otherwise (the official SDKs read both, preferring retry-after-ms).
	RetryAfter time.Duration
	// ShouldRetry, if "true" or "false", is sent as x-should-retry, which
	// overrides the official SDKs' own choice to retry. Default: "true"
	// for 529, as the API sends, and none otherwise.
	ShouldRetry string
	// ErrorCode, if set, is sent as the error's details.error_code, as the
	// API's newer errors carry, such as thread_not_found.
	ErrorCode string
	// Header holds any other response headers, such as
	// anthropic-ratelimit-*. They are set last, so they override the rest.
	Header http.Header
	// Body, if not nil, replaces the response body verbatim, for bodies that
	// do not have the API's shape, such as Cloudflare's 413.
	Body []byte
}

func (e HTTPError) serve(w http.ResponseWriter, c *call) {
	status := cmp.Or(e.Status, http.StatusInternalServerError)
	id := cmp.Or(e.RequestID, c.id)
	body := e.Body
	if body == nil {
		typ := cmp.Or(e.Type, apirules.ErrorTypes[status], "api_error")
		// A struct, not a map, so the keys keep the API's order.
		type details struct {
			ErrorCode string `json:"error_code"`
		}
		type apiError struct {
			Type    string   `json:"type"`
			Message string   `json:"message"`
			Details *details `json:"details,omitempty"`
		}
		var d *details
		if e.ErrorCode != "" {
			d = &details{e.ErrorCode}
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // the API leaves <, > and & literal
		enc.Encode(struct {
			Type      string   `json:"type"`
			Error     apiError `json:"error"`
			RequestID string   `json:"request_id"`
		}{"error", apiError{typ, e.Message, d}, id})
		body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Request-Id", id)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	switch d := e.RetryAfter; {
	case d <= 0:
	case d%time.Second == 0:
		h.Set("Retry-After", strconv.FormatInt(int64(d/time.Second), 10))
	default:
		h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
	}
	if retry := e.ShouldRetry; retry != "" || status == 529 {
		h.Set("X-Should-Retry", cmp.Or(retry, "true"))
	}
	for k, v := range e.Header {
		h[k] = v
	}
	w.WriteHeader(status)
	w.Write(body)
}
