package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// textStream is a complete stream answering "Hello".
const textStream = sseStart +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + sseStop

// step is one response of a scripted server.
type step func(w http.ResponseWriter, r *http.Request)

func sse(body string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}
}

func httpErr(status int, body string, headers ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// reset writes body, then breaks the connection.
func reset(body string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
				tc.SetLinger(0) // RST rather than FIN
			}
			conn.Close()
		}
	}
}

// scripted serves steps in order, one per request, and fails the test on
// an extra request.
func scripted(t *testing.T, steps ...step) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(steps) {
			t.Errorf("unexpected request %d", i+1)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		steps[i](w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// testClient returns a client for baseURL whose retry waits are recorded,
// not slept.
func testClient(baseURL string, cfg Config) (*Client, *[]time.Duration) {
	cfg.BaseURL = baseURL
	c := New(cfg)
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, &waits
}

// lessJitter compares retry waits as equal when the shorter is more than
// three quarters of the longer: a backoff less its jitter, or a server's
// retry-after (TestRetryDelay holds that to the exact wait).
var lessJitter = cmp.Comparer(func(x, y time.Duration) bool { return x == y || min(x, y) > max(x, y)*3/4 })

// TestRetryDelay checks the one schedule: 0.5 s doubling to 8 s, less up
// to a quarter of jitter; the server's retry-after exactly, unless it is
// over a minute.
func TestRetryDelay(t *testing.T) {
	for attempt, base := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second,
		4: 4 * time.Second, 5: 8 * time.Second, 64: 8 * time.Second} {
		if d, ok := RetryDelay(attempt, errConnection); !ok || d > base || d <= base*3/4 {
			t.Errorf("RetryDelay(%d) = %v, %v; want (%v, %v]", attempt, d, ok, base*3/4, base)
		}
	}
	if d, ok := RetryDelay(2, &APIError{RetryAfter: 1500 * time.Millisecond}); !ok || d != 1500*time.Millisecond {
		t.Errorf("RetryDelay of a 1.5 s retry-after = %v, %v", d, ok)
	}
	if d, ok := RetryDelay(1, &APIError{RetryAfter: 61 * time.Second}); ok {
		t.Errorf("RetryDelay of a 61 s retry-after = %v, true; want false", d)
	}
}

var testReq = Request{Model: "m", Messages: []Message{{Role: User, Content: []Block{Text{Text: "hi"}}}}}

// collect ranges over a stream, returning its text, event count and final
// error.
func collect(c *Client, ctx context.Context) (string, int, error) {
	var a Assembler
	n := 0
	for ev, err := range c.Stream(ctx, testReq) {
		if err != nil {
			return TextOf(a.Turn().Message.Content), n, err
		}
		n++
		a.Add(ev)
	}
	return TextOf(a.Turn().Message.Content), n, nil
}

func TestStreamRetry(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`
	midError := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	in7s := func(w http.ResponseWriter, r *http.Request) { // a date 7 s after the request
		httpErr(429, `{}`, "retry-after", time.Now().Add(7*time.Second).UTC().Format(http.TimeFormat))(w, r)
	}
	textBegun := sseStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	tests := []struct {
		name      string
		cfg       Config
		steps     []step
		wantText  string
		wantErr   string // substring; "" means success
		retryable bool
		waits     []time.Duration
	}{
		{name: "success", steps: []step{sse(textStream)}, wantText: "Hello"},
		{name: "529 then success, backoff", steps: []step{httpErr(529, overloaded), httpErr(500, "<html>oops</html>"), sse(textStream)},
			wantText: "Hello", waits: []time.Duration{500 * time.Millisecond, time.Second}},
		{name: "attempts run out", steps: []step{httpErr(529, overloaded), httpErr(529, overloaded), httpErr(529, overloaded)},
			wantErr: "529 overloaded_error: Overloaded (request req_1)", retryable: true, waits: []time.Duration{500 * time.Millisecond, time.Second}},
		{name: "MaxAttempts 1", cfg: Config{MaxAttempts: 1}, steps: []step{httpErr(529, overloaded)}, wantErr: "529", retryable: true},
		{name: "400 not retried", steps: []step{httpErr(400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`)},
			wantErr: "400 invalid_request_error: bad"},
		{name: "x-should-retry false", steps: []step{httpErr(529, overloaded, "x-should-retry", "false")}, wantErr: "529"},
		{name: "x-should-retry true on 400", steps: []step{httpErr(400, `{}`, "x-should-retry", "true"), sse(textStream)},
			wantText: "Hello", waits: []time.Duration{500 * time.Millisecond}},
		{name: "retry-after-ms wins", steps: []step{httpErr(429, `{}`, "retry-after-ms", "1500", "retry-after", "9"), sse(textStream)},
			wantText: "Hello", waits: []time.Duration{1500 * time.Millisecond}},
		{name: "retry-after date", steps: []step{in7s, sse(textStream)},
			wantText: "Hello", waits: []time.Duration{7 * time.Second}}, // less the part of a second the date lacks
		{name: "retry-after above cap", steps: []step{httpErr(429, `{}`, "retry-after", "61")}, wantErr: "429 rate_limit_error", retryable: true},
		{name: "spend limit", steps: []step{httpErr(429, `{"type":"error","error":{"type":"rate_limit_error","message":"limit","details":{"error_code":"enforced_spend_limit_reached"}}}`)},
			wantErr: "enforced_spend_limit_reached"},
		{name: "error right after message_start retried silently", steps: []step{sse(sseStart + midError), sse(textStream)},
			wantText: "Hello", waits: []time.Duration{500 * time.Millisecond}},
		{name: "error after content returned", steps: []step{sse(textBegun + midError)},
			wantErr: "overloaded_error", retryable: true},
		{name: "no message_stop before content retried", steps: []step{sse(sseStart), sse(textStream)},
			wantText: "Hello", waits: []time.Duration{500 * time.Millisecond}},
		{name: "no message_stop after content", steps: []step{sse(textBegun)}, wantErr: "message_stop", retryable: true},
		{name: "connection reset", steps: []step{reset(textBegun)}, wantErr: "message_stop", retryable: true},
		{name: "reset before content retried", steps: []step{reset(""), sse(textStream)},
			wantText: "Hello", waits: []time.Duration{500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := scripted(t, tt.steps...)
			c, waits := testClient(srv.URL, tt.cfg)
			text, _, err := collect(c, t.Context())
			if text != tt.wantText && tt.wantErr == "" {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if err != nil && IsRetryable(err) != tt.retryable {
				t.Errorf("IsRetryable(%v) = %v, want %v", err, !tt.retryable, tt.retryable)
			}
			if diff := cmp.Diff(tt.waits, *waits, lessJitter); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamCancelDuringWait(t *testing.T) {
	srv, n := scripted(t, httpErr(529, `{}`), sse(textStream))
	c := New(Config{BaseURL: srv.URL})
	ctx, cancel := context.WithCancel(t.Context())
	c.sleep = func(sctx context.Context, d time.Duration) error {
		cancel()
		return sleepCtx(sctx, time.Hour) // returns at once: ctx is done
	}
	_, _, err := collect(c, ctx)
	if !errors.Is(err, context.Canceled) || IsRetryable(err) {
		t.Fatalf("err = %v, want context.Canceled, not retryable", err)
	}
	if n.Load() != 1 {
		t.Errorf("%d requests, want 1", n.Load())
	}
}

func TestStreamStopEarly(t *testing.T) {
	srv, _ := scripted(t, sse(textStream))
	c, _ := testClient(srv.URL, Config{})
	s := c.Stream(t.Context(), testReq)
	for ev, err := range s {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(MessageStart); !ok {
			t.Fatalf("first event %T, want MessageStart", ev)
		}
		break
	}
	for _, err := range s {
		if err == nil {
			t.Fatal("second range over a Stream did not fail")
		}
	}
}

func TestCountTokens(t *testing.T) {
	var body string
	srv, _ := scripted(t, httpErr(529, `{}`), func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		if r.URL.Path != "/v1/messages/count_tokens" {
			t.Errorf("path %s", r.URL.Path)
		}
		fmt.Fprint(w, `{"input_tokens": 42}`)
	})
	c, _ := testClient(srv.URL, Config{})
	req := testReq
	req.MaxTokens, req.System, req.Extra = 100, "sys", map[string]any{"x": 1}
	n, err := c.CountTokens(t.Context(), req)
	if err != nil || n != 42 {
		t.Fatalf("CountTokens = %d, %v", n, err)
	}
	want := `{"model":"m","system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	if body != want {
		t.Errorf("body:\n%s\nwant:\n%s", body, want)
	}
}
