package anthropictest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// sse is one parsed server-sent event.
type sse struct{ name, data string }

// readEvents parses SSE from r until EOF or error, by the WHATWG rules the
// official SDKs follow closely enough for our own output.
func readEvents(r io.Reader) ([]sse, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<25)
	var evs []sse
	var cur sse
	var have bool
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if have {
				evs = append(evs, cur)
			}
			cur, have = sse{}, false
		case strings.HasPrefix(line, "event: "):
			cur.name, have = line[len("event: "):], true
		case strings.HasPrefix(line, "data: "):
			if cur.data != "" {
				cur.data += "\n"
			}
			cur.data += line[len("data: "):]
			have = true
		}
	}
	return evs, sc.Err()
}

// post sends a minimal valid request body to srv and returns the response.
func post(t *testing.T, ctx context.Context, client *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := tryPost(ctx, client, url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// tryPost is post for goroutines other than the test's, which must not
// call t.Fatal.
func tryPost(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	body := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return client.Do(req)
}

func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func eventNames(evs []sse) []string {
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	return names
}

func TestStreamWireFormat(t *testing.T) {
	srv := NewServer(NewStream().Text("Hel", "lo").Event("ping", `{"type": "ping"}`).ToolUse("toolu_1", "add", `{"a":`, `1}`).Stop("tool_use"))
	defer srv.Close()
	resp := post(t, context.Background(), newClient(t), srv.URL)
	defer resp.Body.Close()
	if got, want := resp.Header.Get("Content-Type"), "text/event-stream; charset=utf-8"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	if got := resp.Header.Get("Request-Id"); !strings.HasPrefix(got, "req_") {
		t.Errorf("request-id = %q, want req_…", got)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	// The message has an id of its own and the model the request named.
	want := "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_01AnthropicTest000000001","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: ping\n" + `data: {"type": "ping"}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}` + "\n\n" +
		"event: ping\n" + `data: {"type": "ping"}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"add","input":{}}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":1}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}
	// Every event's name equals its data's type, and every data is JSON.
	evs, err := readEvents(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		var v struct{ Type string }
		if err := json.Unmarshal([]byte(e.data), &v); err != nil || v.Type != e.name {
			t.Errorf("event %q: data %s: type %q, err %v", e.name, e.data, v.Type, err)
		}
	}
}

// waitFor fails the test if ch does not deliver soon. The timeout only
// turns a hang into a clear failure; nothing waits on it to synchronise.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestHTTPError(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(
		HTTPError{Status: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit",
			RetryAfter: 7 * time.Second, ShouldRetry: "true", Header: http.Header{"Retry-After-Ms": {"6500"}, "Anthropic-Ratelimit-Requests-Remaining": {"0"}}},
		HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RequestID: "req_011CUdgeEaEXcfa9PDdxrNMk"},
		HTTPError{Status: 413, Type: "request_too_large", Message: "ignored", Body: []byte(`{"error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`)},
		HTTPError{Status: 429, RetryAfter: 1500 * time.Millisecond},
		HTTPError{},
	)
	defer srv.Close()
	client := newClient(t)

	type result struct {
		Status                                     int
		RequestID, RetryAfter, RetryAfterMs, Retry string
		Ratelimit, ContentType                     string
		Body                                       string
	}
	var got []result
	for range 5 {
		resp := post(t, context.Background(), client, srv.URL)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		h := resp.Header
		got = append(got, result{resp.StatusCode, h.Get("Request-Id"), h.Get("Retry-After"), h.Get("Retry-After-Ms"),
			h.Get("X-Should-Retry"), h.Get("Anthropic-Ratelimit-Requests-Remaining"), h.Get("Content-Type"), string(body)})
	}
	want := []result{{
		Status: 429, RequestID: "req_anthropictest0000000001", RetryAfter: "7", RetryAfterMs: "6500", Retry: "true", Ratelimit: "0",
		ContentType: "application/json",
		Body:        `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_anthropictest0000000001"}`,
	}, {
		Status: 529, RequestID: "req_011CUdgeEaEXcfa9PDdxrNMk", Retry: "true", ContentType: "application/json", // x-should-retry as the API sends on 529
		Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CUdgeEaEXcfa9PDdxrNMk"}`,
	}, {
		Status: 413, RequestID: "req_anthropictest0000000003", ContentType: "application/json",
		Body: `{"error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`,
	}, {
		Status: 429, RequestID: "req_anthropictest0000000004", RetryAfterMs: "1500", ContentType: "application/json",
		Body: `{"type":"error","error":{"type":"rate_limit_error","message":""},"request_id":"req_anthropictest0000000004"}`,
	}, {
		Status: 500, RequestID: "req_anthropictest0000000005", ContentType: "application/json",
		Body: `{"type":"error","error":{"type":"api_error","message":""},"request_id":"req_anthropictest0000000005"}`,
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses mismatch (-want +got):\n%s", diff)
	}
}

func TestQueueOrderAndEmptyQueue(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(NewStream().Text("one"), NewStream().Text("two"))
	defer srv.Close()
	client := newClient(t)
	var texts []string
	for range 2 {
		resp := post(t, context.Background(), client, srv.URL)
		evs, err := readEvents(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var d struct{ Delta struct{ Text string } }
		json.Unmarshal([]byte(evs[3].data), &d)
		texts = append(texts, d.Delta.Text)
	}
	if diff := cmp.Diff([]string{"one", "two"}, texts); diff != "" {
		t.Errorf("replies out of order (-want +got):\n%s", diff)
	}
	if n := srv.pending(); n != 0 {
		t.Errorf("pending() = %d, want 0", n)
	}

	resp := post(t, context.Background(), client, srv.URL)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 500 || e.Type != "error" || e.Error.Type != "api_error" ||
		!strings.Contains(e.Error.Message, "no reply was scripted for request 3") || resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("empty queue: status %d, x-should-retry %q, body %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
	}
	if got := len(srv.Requests()); got != 3 {
		t.Errorf("recorded %d requests, want 3", got)
	}
}

func TestNotFound(t *testing.T) {
	srv := NewServer(NewStream())
	defer srv.Close()
	resp, err := newClient(t).Get(srv.URL + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || len(srv.Requests()) != 0 || srv.pending() != 1 {
		t.Errorf("GET: status %d, %d recorded, %d pending; want 404, 0, 1", resp.StatusCode, len(srv.Requests()), srv.pending())
	}
}

func TestRecording(t *testing.T) {
	srv := NewServer(NewStream())
	defer srv.Close()
	body := `{"model":"m","max_tokens":5,"stream":true,"system":"be brief","messages":[` +
		`{"role":"user","content":"What is 1+1?"},` +
		`{"role":"assistant","content":[{"type":"text","text":"Adding."},{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":1,"b":1}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"2"},{"type":"text","text":"go on"}]}]}`
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("X-Api-Key", "test")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := newClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.N != 1 || r.Method != "POST" || r.Path != "/v1/messages" || r.Query != "beta=true" ||
		r.Header.Get("X-Api-Key") != "test" || string(r.Body) != body {
		t.Errorf("recorded %+v", r)
	}
	p, err := r.Params()
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != "m" || p.MaxTokens != 5 || !p.Stream || string(p.System) != `"be brief"` {
		t.Errorf("Params = %+v", p)
	}
	msgs := r.Messages()
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		sf, ok := p.Last().(cmp.StructField)
		return ok && (sf.Name() == "Raw" || sf.Name() == "has")
	}, cmp.Ignore())
	want := []Message{
		{Role: "user", StringContent: true, Content: []Block{{Type: "text", Text: "What is 1+1?"}}, Text: "What is 1+1?"},
		{Role: "assistant", Content: []Block{{Type: "text", Text: "Adding."}, {Type: "tool_use", ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a":1,"b":1}`)}}, Text: "Adding."},
		{Role: "user", Content: []Block{
			{Type: "tool_result", ToolUseID: "toolu_1", StringContent: true, Content: []Block{{Type: "text", Text: "2"}}},
			{Type: "text", Text: "go on"}}, Text: "go on"},
	}
	if diff := cmp.Diff(want, msgs, ignore); diff != "" {
		t.Errorf("Messages mismatch (-want +got):\n%s", diff)
	}
	if got := msgs[1].Text; got != "Adding." {
		t.Errorf("Text = %q", got)
	}
	if got := r.ToolResults(); len(got) != 1 || got[0].ToolUseID != "toolu_1" {
		t.Errorf("ToolResults() = %+v", got)
	}
	if string(msgs[1].Content[1].Raw) != `{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":1,"b":1}}` {
		t.Errorf("Raw = %s", msgs[1].Content[1].Raw)
	}
	if err := CheckRequest(r.Body); err != nil {
		t.Errorf("Check: %v", err)
	}
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil || v["system"] != "be brief" {
		t.Errorf("Decode: %v, %v", v, err)
	}
}

func TestReplyFuncAndRepeat(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// A dynamic reply: answer with the number of messages the client sent,
	// concurrently for overlapping requests.
	srv := NewServer(Repeat(ReplyFunc(func(r *Request) Reply {
		return NewStream().Text(strconv.Itoa(len(r.Messages())))
	})))
	defer srv.Close()
	client := newClient(t)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			resp, err := tryPost(context.Background(), client, srv.URL)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			evs, err := readEvents(resp.Body)
			if err == nil && !strings.Contains(evs[3].data, `"text":"1"`) {
				err = errors.New("unexpected delta " + evs[3].data)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := waitFor(t, errs, "a reply"); err != nil {
			t.Error(err)
		}
	}
	if n := len(srv.Requests()); n != 8 || srv.pending() != 1 {
		t.Errorf("%d requests, %d pending; want 8, 1 (Repeat stays queued)", n, srv.pending())
	}

	srv2 := NewServer(ReplyFunc(func(*Request) Reply { return nil }))
	defer srv2.Close()
	resp := post(t, context.Background(), client, srv2.URL)
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("nil ReplyFunc result: status %d, want 500", resp.StatusCode)
	}
}

// TestRateLimitHeaders checks that a reply, streamed or not, carries the
// anthropic-ratelimit-* headers the API sends, with RFC 3339 resets and
// one request fewer remaining for each request.
func TestRateLimitHeaders(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(Repeat(NewStream().Text("hi")))
	defer srv.Close()
	client := newClient(t)
	for n, stream := range []bool{true, false, true} {
		var resp *http.Response
		var err error
		if stream {
			resp, err = tryPost(context.Background(), client, srv.URL)
		} else {
			resp, err = postWhole(t, context.Background(), srv.URL)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := map[string]string{}
		for k, v := range resp.Header {
			if strings.HasPrefix(k, "Anthropic-Ratelimit-") {
				if strings.HasSuffix(k, "-Reset") {
					if _, err := time.Parse(time.RFC3339, v[0]); err != nil {
						t.Errorf("%s = %q: %v", k, v[0], err)
					}
					v = []string{"<RFC 3339>"}
				}
				got[k] = v[0]
			}
		}
		want := map[string]string{
			"Anthropic-Ratelimit-Requests-Limit": "4000", "Anthropic-Ratelimit-Requests-Remaining": strconv.Itoa(4000 - n - 1),
			"Anthropic-Ratelimit-Input-Tokens-Limit": "2000000", "Anthropic-Ratelimit-Input-Tokens-Remaining": "2000000",
			"Anthropic-Ratelimit-Output-Tokens-Limit": "400000", "Anthropic-Ratelimit-Output-Tokens-Remaining": "400000",
			"Anthropic-Ratelimit-Tokens-Limit": "2400000", "Anthropic-Ratelimit-Tokens-Remaining": "2400000",
		}
		for _, name := range []string{"Requests", "Input-Tokens", "Output-Tokens", "Tokens"} {
			want["Anthropic-Ratelimit-"+name+"-Reset"] = "<RFC 3339>"
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d (stream %v): headers (-want +got):\n%s", n+1, stream, diff)
		}
	}
}
