package llm

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/internal/testenv"
)

// headerTransport answers every request with body as a 200 event stream
// carrying a request-id header, as the API does.
type headerTransport struct{ body []byte }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: 200, Request: r, ContentLength: -1,
		Header: http.Header{"Content-Type": {"text/event-stream"}, "Request-Id": {"req_header"}},
		Body:   io.NopCloser(bytes.NewReader(h.body)),
	}, nil
}

// TestAPIErrorString checks what an *APIError says: what the error was,
// its status only when that was an HTTP error status, and the request id.
// An error event mid-stream arrives in a 200 response; it has no status,
// so that nothing reports it as "API error 200".
func TestAPIErrorString(t *testing.T) {
	tests := []struct {
		name    string
		err     *APIError
		fixture string // instead of err: a recorded stream, through Client.Stream
		want    string
	}{
		{name: "HTTP status", err: &APIError{StatusCode: 529, Type: "overloaded_error", Message: "busy", RequestID: "req_x"},
			want: "llm: 529 overloaded_error: busy (request req_x)"},
		{name: "error event inside a 200 stream", err: &APIError{Type: "overloaded_error", Message: "Overloaded", RequestID: "req_1"},
			want: "llm: overloaded_error: Overloaded (request req_1)"},
		{name: "error code", err: &APIError{StatusCode: 429, Type: "rate_limit_error", Message: "spent", code: "enforced_spend_limit_reached"},
			want: "llm: 429 rate_limit_error: spent [enforced_spend_limit_reached]"},
		{name: "no message", err: &APIError{StatusCode: 502, Type: "http_error"}, want: "llm: 502 http_error"},
		{name: "recorded error event, request id from the header", fixture: "doc_error_event_overloaded.sse",
			want: "llm: overloaded_error: Overloaded (request req_header)"},
		{name: "recorded error event, request id from the event", fixture: "observed_error_event_overloaded_with_request_id.sse",
			want: "llm: overloaded_error: Overloaded (request req_011CYeT1GYt7Kg27RdtV9zeo)"},
		{name: "recorded error event without event lines", fixture: "vercel_SYNTHETIC_midstream_overloaded_error_no_event_lines.sse",
			want: "llm: overloaded_error: Overloaded (request req_header)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := error(tt.err)
			if tt.fixture != "" {
				body, rerr := os.ReadFile(filepath.Join(testenv.Fixtures(t), tt.fixture))
				if rerr != nil {
					t.Fatal(rerr)
				}
				c := New(Config{HTTPClient: &http.Client{Transport: headerTransport{body}}, MaxAttempts: 1})
				err = nil
				for _, e := range c.Stream(t.Context(), testReq) {
					if e != nil {
						err = e
					}
				}
				if _, ok := err.(*APIError); !ok {
					t.Fatalf("err = %#v, want an *APIError", err)
				}
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if ae := err.(*APIError); tt.fixture != "" && ae.StatusCode != 0 {
				t.Errorf("StatusCode = %d for an error event inside a 200 stream, want 0", ae.StatusCode)
			}
		})
	}
}
