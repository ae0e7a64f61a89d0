package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/internal/apirules"
)

// ErrIncompleteStream means the response ended, or the connection broke,
// before message_stop: the turn is not complete. It is retryable.
var ErrIncompleteStream = errors.New("llm: stream ended before message_stop")

// ErrPromptTooLong is matched, with errors.Is, by an [*APIError] saying the
// request does not fit the context window (a 413 request_too_large, or a
// 400 "prompt is too long"): shrink the history and send again. A [Model]
// of another kind wraps it to say the same.
var ErrPromptTooLong = errors.New("llm: prompt is too long for the context window")

// The other errors a stream can end with, classified by IsRetryable. A
// malformed event is not retryable: the server would send it again.
var (
	errIdleTimeout    = errors.New("llm: stream idle timeout") // not even a ping came
	errConnection     = errors.New("llm: connection failed")   // a refused or reset connection, DNS, TLS
	errMalformedEvent = errors.New("llm: malformed stream event")
)

// An APIError is an error the Messages API reported, by an HTTP error
// status or an "error" event inside a 200 stream.
type APIError struct {
	// StatusCode is the HTTP error status; zero for an error event inside a
	// stream, which is what its Type says, not an HTTP failure.
	StatusCode int
	// Type is the API's error type, such as "overloaded_error", or the
	// status's for a body with none (a proxy's error page).
	Type       string
	Message    string        // the API's human-readable message
	RequestID  string        // the request-id header or the body's request_id
	RetryAfter time.Duration // the wait the server asked for, if any

	code      string // error.details.error_code, such as "enforced_spend_limit_reached"
	retryable bool   // sending the same request again may succeed; see IsRetryable
}

// Error returns the status if any, the type, the message, the error code if
// any and the request id: "llm: 529 overloaded_error: Overloaded (request
// req_…)".
func (e *APIError) Error() string {
	s := "llm: " + e.Type
	if e.StatusCode != 0 {
		s = fmt.Sprintf("llm: %d %s", e.StatusCode, e.Type)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.code != "" {
		s += " [" + e.code + "]"
	}
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// Is reports whether target is [ErrPromptTooLong] and e says so. The API
// has no code for it: this and PromptTokens are the one place that reads
// its message.
func (e *APIError) Is(target error) bool {
	return target == ErrPromptTooLong && (e.StatusCode == http.StatusRequestEntityTooLarge ||
		e.Type == "request_too_large" || tooLong.MatchString(e.Message))
}

// PromptTokens returns the size of a prompt too long as the API gave it
// ("prompt is too long: 215439 tokens > 200000 maximum"), or 0.
func (e *APIError) PromptTokens() int {
	n := 0 // also for a message without the size, whose m[1] is ""
	if m := tooLong.FindStringSubmatch(e.Message); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	return n
}

// tooLong reads the API's message for a prompt too long, and its size.
var tooLong = regexp.MustCompile(`(?i)prompt is too long(?:: (\d+) tokens > \d+)?`)

// IsRetryable reports whether err is a transient failure worth sending the
// same request again for: a retryable [*APIError] (overloaded, rate
// limited, a server error), [ErrIncompleteStream], a stalled stream or a
// failed connection. [Client.Stream] retries them until it has yielded an
// event; after that the caller decides.
func IsRetryable(err error) bool {
	_, transient := classify(err)
	return transient
}

// ErrorType names the class of err, low in cardinality, for OpenTelemetry's
// error.type: an [*APIError]'s type (such as "overloaded_error"), "timeout"
// for an idle stream or a passed deadline, "cancelled", "connection_error",
// "incomplete_stream", "malformed_event", or "_OTHER".
func ErrorType(err error) string {
	typ, _ := classify(err)
	return typ
}

// classes are the errors other than an [*APIError], which classify tries
// first, in the order it tries them: each one's type, and whether it is
// transient.
var classes = []struct {
	err       error
	typ       string
	transient bool
}{
	{errIdleTimeout, "timeout", true}, {context.DeadlineExceeded, "timeout", false},
	{context.Canceled, "cancelled", false}, {errConnection, "connection_error", true},
	{ErrIncompleteStream, "incomplete_stream", true}, {errMalformedEvent, "malformed_event", false},
}

// classify is what ErrorType and IsRetryable say of err: one table for both.
func classify(err error) (typ string, transient bool) {
	if ae, ok := errors.AsType[*APIError](err); ok && ae.Type != "" {
		return ae.Type, ae.retryable
	}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.typ, c.transient
		}
	}
	return "_OTHER", false
}

// newAPIError builds the APIError of an HTTP error response, or, with
// status 0, of an "error" event inside a 200 stream. Every field of the
// body is optional: proxies and older API versions leave some out.
func newAPIError(status int, h http.Header, body []byte) *APIError {
	// Bedrock's request id is x-amzn-RequestId.
	e := &APIError{StatusCode: status, RequestID: cmp.Or(h.Get("request-id"), h.Get("x-amzn-requestid")),
		RetryAfter: parseRetryAfter(h)}
	var w struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Details struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	switch {
	case json.Unmarshal(body, &w) == nil && (w.Error.Type != "" || w.Error.Message != ""):
		e.Type, e.Message, e.code = w.Error.Type, w.Error.Message, w.Error.Details.ErrorCode
		e.RequestID = cmp.Or(w.RequestID, e.RequestID)
	case status == 0:
		e.Type, e.Message = "malformed_error_event", string(body)
	default: // a proxy answered: the start of its body usually tells
		if e.Message = strings.TrimSpace(string(body)); len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
	}
	if status == 0 {
		// Only overloaded and internal errors are transient; either way the
		// turn is lost.
		e.Type = cmp.Or(e.Type, "api_error")
		e.retryable = transientStream[e.Type]
		return e
	}
	e.Type = cmp.Or(e.Type, apirules.ErrorTypes[status], "http_error")
	// 408, 409, 429 (but for an exhausted spend limit) and 5xx are
	// transient; any other 4xx is the request's fault. x-should-retry is
	// the server's own verdict, so it overrides ours.
	e.retryable = status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests && e.code != "enforced_spend_limit_reached"
	if v := h.Get("x-should-retry"); v == "true" || v == "false" {
		e.retryable = v == "true"
	}
	return e
}

// transientStream are the error events' transient types: the API's, and
// the exceptions of Bedrock's event stream, which the SDK's bedrock
// package hands on as the type of an error event.
var transientStream = map[string]bool{"overloaded_error": true, "api_error": true, "internalServerException": true,
	"serviceUnavailableException": true, "throttlingException": true, "modelStreamErrorException": true}

// parseRetryAfter reads retry-after-ms, else retry-after in seconds or as
// an HTTP date: 0 for none, or for what is not a positive duration.
func parseRetryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 && ms < 1e12 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("retry-after")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second))
	} else if t, terr := http.ParseTime(v); err != nil && terr == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
