package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrIncompleteStream means the response ended, or the connection broke,
// before message_stop: the turn is not complete. It is retryable.
var ErrIncompleteStream = errors.New("llm: stream ended before message_stop")

// The other errors a stream can end with besides an [*APIError]. Callers
// classify them with IsRetryable, so they are not exported.
var (
	// errIdleTimeout: the server sent nothing, not even a ping, for the
	// idle timeout. Retryable.
	errIdleTimeout = errors.New("llm: stream idle timeout")
	// errConnection: the request could not be sent or no response
	// arrived (a refused or reset connection, DNS, TLS). Retryable.
	errConnection = errors.New("llm: connection failed")
	// errMalformedEvent: the server sent an event this package cannot
	// read. Not retryable: the same server would likely send the same
	// bytes again.
	errMalformedEvent = errors.New("llm: malformed stream event")
)

// An APIError is an error reported by the Messages API, either as an HTTP
// error status or as an "error" event inside a 200 stream.
type APIError struct {
	// StatusCode is the HTTP error status. It is zero for an error event
	// that arrived inside a stream, whose response had begun with 200:
	// such an error is what its Type says, not an HTTP failure.
	StatusCode int
	// Type is the API's error type, such as "overloaded_error". When the
	// body has none (a proxy's error page), it is derived from StatusCode.
	Type string
	// Message is the API's human-readable message.
	Message string
	// RequestID is the request-id header or the body's request_id.
	RequestID string
	// RetryAfter is the wait the server asked for with retry-after-ms or
	// retry-after; zero when it asked for none.
	RetryAfter time.Duration

	code      string // error.details.error_code, such as "enforced_spend_limit_reached"
	retryable bool   // sending the same request again may succeed; see IsRetryable
}

// Error returns the HTTP status if there was one, then the type, the
// message, the error code if any and the request id, for example
// "llm: overloaded_error: Overloaded (request req_…)" for an error event
// mid-stream, or "llm: 529 overloaded_error: Overloaded (request req_…)".
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	if e.StatusCode != 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
		b.WriteByte(' ')
	}
	b.WriteString(e.Type)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.code != "" {
		b.WriteString(" [")
		b.WriteString(e.code)
		b.WriteByte(']')
	}
	if e.RequestID != "" {
		b.WriteString(" (request ")
		b.WriteString(e.RequestID)
		b.WriteByte(')')
	}
	return b.String()
}

// IsRetryable reports whether err is a transient failure worth sending the
// same request again for: a retryable [*APIError] (overloaded, rate
// limited, a server error), [ErrIncompleteStream], a stalled stream or a
// failed connection. A cancelled context is not.
//
// [Client.Stream] retries such errors itself until it has yielded an event;
// after that it returns them, and the caller decides.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		return ae.retryable
	}
	return errors.Is(err, ErrIncompleteStream) || errors.Is(err, errIdleTimeout) || errors.Is(err, errConnection)
}

// errorBody is the shape of an error response body and of an error event.
// Every field is optional: proxies (Cloudflare's 413) and older API
// versions leave some out, and request_id may be null.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details *struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
	RequestID *string `json:"request_id"`
}

// decode fills e from body, an error body or event, and reports whether it
// was the API's JSON. Its request_id, when set, names the request.
func (e *APIError) decode(body []byte) bool {
	var w errorBody
	if json.Unmarshal(body, &w) != nil || (w.Error.Type == "" && w.Error.Message == "") {
		return false
	}
	e.Type, e.Message = w.Error.Type, w.Error.Message
	if w.Error.Details != nil {
		e.code = w.Error.Details.ErrorCode
	}
	if w.RequestID != nil && *w.RequestID != "" {
		e.RequestID = *w.RequestID
	}
	return true
}

// statusTypes names the error type of a status when the body names none.
var statusTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	408: "timeout_error",
	409: "conflict_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	504: "timeout_error",
	529: "overloaded_error",
}

// newHTTPError builds the APIError for an HTTP error response. now is the
// current time, for a retry-after given as an HTTP date.
func newHTTPError(status int, h http.Header, body []byte, now time.Time) *APIError {
	e := &APIError{StatusCode: status, RequestID: h.Get("request-id")}
	if !e.decode(body) {
		// Not the API's JSON: a proxy or load balancer answered. Keep the
		// start of the body as the message; it is usually enough to tell.
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		e.Message = msg
	}
	if e.Type == "" {
		e.Type = statusTypes[status]
		if e.Type == "" {
			e.Type = "http_error"
		}
	}
	e.retryable = retryableStatus(status, e.code)
	// x-should-retry is the server's own verdict, so it overrides ours
	// either way.
	switch h.Get("x-should-retry") {
	case "true":
		e.retryable = true
	case "false":
		e.retryable = false
	}
	e.RetryAfter = parseRetryAfter(h, now)
	return e
}

// retryableStatus is the policy for an HTTP status: connection-level
// trouble (408), conflicts (409), rate limits (429) and server errors
// (5xx, 529 included) are transient; any other 4xx is the request's fault.
// A 429 for an exhausted spend limit will not pass by itself.
func retryableStatus(status int, code string) bool {
	switch {
	case status == http.StatusTooManyRequests:
		return code != "enforced_spend_limit_reached"
	case status == http.StatusRequestTimeout, status == http.StatusConflict:
		return true
	default:
		return status >= 500
	}
}

// newStreamError builds the APIError for an "error" event. Only overloaded
// and internal API errors are transient; the connection closes after the
// event, so the turn is lost either way.
func newStreamError(data []byte, h http.Header) *APIError {
	e := &APIError{RequestID: h.Get("request-id")}
	if !e.decode(data) {
		e.Type, e.Message = "malformed_error_event", string(data)
	}
	e.Type = cmp.Or(e.Type, "api_error")
	switch e.Type {
	case "overloaded_error", "api_error":
		e.retryable = true
	}
	return e
}

// retryAfter reads the wait the server asked for: retry-after-ms first,
// then retry-after in seconds or as an HTTP date. It returns 0 for none, or
// for a value that is not a positive duration.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("retry-after"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s > 0 && s < 1e9 {
				return time.Duration(s * float64(time.Second))
			}
			return 0
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := t.Sub(now); d > 0 {
				return d
			}
		}
	}
	return 0
}
