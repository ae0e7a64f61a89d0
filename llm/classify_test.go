package llm

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// ErrPromptTooLong is matched by the API's errors that say so, through any
// wrapping, and by nothing else, whatever its text.
func TestErrPromptTooLong(t *testing.T) {
	tests := []struct {
		err    error
		want   bool
		tokens int // what PromptTokens reads, of an *APIError
	}{
		{fmt.Errorf("turn 3: %w", &APIError{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 201000 tokens > 200000 maximum"}), true, 201000},
		{&APIError{StatusCode: 400, Type: "invalid_request_error", Message: "Prompt is too long"}, true, 0},
		{&APIError{StatusCode: 413, Type: "request_too_large", Message: "Request exceeds the maximum allowed number of bytes."}, true, 0},
		{&APIError{StatusCode: 400, Type: "invalid_request_error", Message: "messages.1: tool_use ids must be unique"}, false, 0},
		{&APIError{StatusCode: 400, Type: "invalid_request_error", Message: "max_tokens: 300000 tokens > 128000 maximum"}, false, 0},
		{&APIError{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}, false, 0},
		{errors.New("llm: 400 invalid_request_error: prompt is too long: 215439 tokens > 200000 maximum"), false, 0},
		{nil, false, 0},
	}
	for _, tt := range tests {
		if got := errors.Is(tt.err, ErrPromptTooLong); got != tt.want {
			t.Errorf("errors.Is(%v, ErrPromptTooLong) = %v, want %v", tt.err, got, tt.want)
		}
		if ae, ok := errors.AsType[*APIError](tt.err); ok && ae.PromptTokens() != tt.tokens {
			t.Errorf("(%v).PromptTokens() = %d, want %d", tt.err, ae.PromptTokens(), tt.tokens)
		}
	}
}

func TestErrorType(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&APIError{StatusCode: 429, Type: "rate_limit_error"}, "rate_limit_error"},
		{errors.Join(errors.New("x"), &APIError{Type: "overloaded_error"}), "overloaded_error"},
		{errIdleTimeout, "timeout"},
		{context.DeadlineExceeded, "timeout"},
		{context.Canceled, "cancelled"},
		{errConnection, "connection_error"},
		{ErrIncompleteStream, "incomplete_stream"},
		{errMalformedEvent, "malformed_event"},
		{errors.New("something else"), "_OTHER"},
	}
	for _, tt := range tests {
		if got := ErrorType(tt.err); got != tt.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
