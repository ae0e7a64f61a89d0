package llm

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// fakeClient is testClient for srv, closed when the test ends.
func fakeClient(t *testing.T, srv *anthropictest.Server, cfg Config) (*Client, *[]time.Duration) {
	t.Cleanup(srv.Close)
	return testClient(srv.URL, cfg)
}

// turn is what one Stream produced.
type turn struct {
	Blocks     []Block
	Incomplete []Block
	Stop       StopReason
	Err        string
	Retryable  bool
}

func runTurn(t *testing.T, c *Client, req Request) turn {
	t.Helper()
	var a Assembler
	var got turn
	for ev, err := range c.Stream(t.Context(), req) {
		if err != nil {
			got.Err, got.Retryable = err.Error(), IsRetryable(err)
			break
		}
		a.Add(ev)
	}
	at := a.Turn()
	got.Blocks, got.Incomplete, got.Stop = at.Message.Content, at.Incomplete, at.StopReason
	return got
}

// TestFakeServer runs Stream against every reply and fault of anthropictest
// but the stalls, which TestIdleTimeout plays on a fake clock.
func TestFakeServer(t *testing.T) {
	S := anthropictest.NewStream
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	hello := []Block{Text{Text: "Hello"}}
	tests := []struct {
		name    string
		cfg     Config
		replies []anthropictest.Reply
		want    turn
		waits   []time.Duration
	}{
		{name: "text with pings", replies: []anthropictest.Reply{S().Event("ping", `{"type": "ping"}`).Text("Hel", "lo").Event("ping", `{"type": "ping"}`).Stop("end_turn")},
			want: turn{Blocks: hello, Stop: EndTurn}},
		{name: "tool use split anywhere", replies: []anthropictest.Reply{
			S().Text("Let me add.").ToolUse("toolu_1", "add", anthropictest.Split(`{"a":1,"s":"x\"y\u00e9"}`, 3)...).Stop("tool_use")},
			want: turn{Blocks: []Block{Text{Text: "Let me add."}, ToolUse{ID: "toolu_1", Name: "add", Input: raw(`{"a":1,"s":"x\"y\u00e9"}`)}}, Stop: ToolUseStop}},
		{name: "tool without arguments", replies: []anthropictest.Reply{S().ToolUse("toolu_2", "now").Stop("tool_use")},
			want: turn{Blocks: []Block{ToolUse{ID: "toolu_2", Name: "now", Input: raw(`{}`)}}, Stop: ToolUseStop}},
		{name: "whole tool input", replies: []anthropictest.Reply{S().Block(anthropictest.Block{Type: "tool_use", ID: "toolu_3", Name: "roll", Input: []byte(`{"p":2}`)}).Stop("tool_use")},
			want: turn{Blocks: []Block{ToolUse{ID: "toolu_3", Name: "roll", Input: raw(`{"p":2}`)}}, Stop: ToolUseStop}},
		{name: "thinking, redacted, server tool, result, citation", replies: []anthropictest.Reply{
			S().Block(anthropictest.Block{Type: "thinking", Signature: "sig"}, "hm", "m").Block(anthropictest.Block{Type: "redacted_thinking", Data: "RD"}).Block(anthropictest.Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"query":`, `"go"}`).
				Block(anthropictest.Block{Raw: []byte(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`)}).
				Text("Go").Event("content_block_delta", `{"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"Go"}}}`).EndBlock().
				Event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":4}}`).
				Event("message_stop", `{"type":"message_stop"}`).EndWithoutStop()},
			want: turn{Blocks: []Block{
				Thinking{Thinking: "hmm", Signature: "sig"},
				RedactedThinking{Data: "RD"},
				RawBlock{Type: "server_tool_use", JSON: raw(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`)},
				RawBlock{Type: "web_search_tool_result", JSON: raw(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`)},
				Text{Text: "Go", Citations: []json.RawMessage{raw(`{"type":"char_location","cited_text":"Go"}`)}},
			}, Stop: StopSequence}},
		{name: "programmatic tool call keeps its caller", replies: []anthropictest.Reply{
			S().Text("Rolling.").
				Block(anthropictest.Block{Raw: []byte(`{"type":"server_tool_use","id":"srvtoolu_1","name":"code_execution","input":{"code":"roll()"},"caller":{"type":"direct"}}`)}).
				Block(anthropictest.Block{Raw: []byte(`{"type":"tool_use","id":"toolu_5","name":"rollDie","input":{"player":"p1"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}`)}).
				Stop("tool_use")},
			want: turn{Blocks: []Block{
				Text{Text: "Rolling."},
				RawBlock{Type: "server_tool_use", JSON: raw(`{"type":"server_tool_use","id":"srvtoolu_1","name":"code_execution","input":{"code":"roll()"},"caller":{"type":"direct"}}`)},
				ToolUse{ID: "toolu_5", Name: "rollDie", Input: raw(`{"player":"p1"}`), Caller: raw(`{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}`)},
			}, Stop: ToolUseStop}},
		{name: "unknown event, CRLF and data-only framing", replies: []anthropictest.Reply{
			anthropictest.Replay(append(S().Event("future_event", `{"type":"future_event"}`).EndWithoutStop().Bytes(),
				"event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n"+
					"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"+
					": comment\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"...)).Stop("end_turn")},
			want: turn{Blocks: hello, Stop: EndTurn}},
		{name: "max_tokens cuts a tool call", replies: []anthropictest.Reply{
			S().Text("Writing").ToolUse("toolu_4", "write", `{"path":"a`).Stop("max_tokens")},
			want: turn{Blocks: []Block{Text{Text: "Writing"}}, Stop: MaxTokens,
				Incomplete: []Block{ToolUse{ID: "toolu_4", Name: "write", Input: raw(`{"INVALID_JSON":"{\"path\":\"a"}`)}}}},
		{name: "error event before content is retried", replies: []anthropictest.Reply{
			S().ErrorEvent("overloaded_error", "Overloaded"), S().Text("Hello").Stop("end_turn")},
			want: turn{Blocks: hello, Stop: EndTurn}, waits: []time.Duration{500 * time.Millisecond}},
		{name: "error event after content", replies: []anthropictest.Reply{S().Text("Hel").ErrorEvent("overloaded_error", "Overloaded")},
			want: turn{Incomplete: []Block{Text{Text: "Hel"}}, Err: "llm: overloaded_error: Overloaded (request req_anthropictest0000000001)", Retryable: true}},
		{name: "invalid_request_error event is final", replies: []anthropictest.Reply{S().ErrorEvent("invalid_request_error", "no")},
			want: turn{Err: "llm: invalid_request_error: no (request req_anthropictest0000000001)"}},
		{name: "reset before content is retried", replies: []anthropictest.Reply{S().Reset(), S().Text("Hello").Stop("end_turn")},
			want: turn{Blocks: hello, Stop: EndTurn}, waits: []time.Duration{500 * time.Millisecond}},
		{name: "reset after content", replies: []anthropictest.Reply{S().Text("Hel").Reset()},
			want: turn{Incomplete: []Block{Text{Text: "Hel"}}, Err: "llm: stream ended before message_stop", Retryable: true}},
		{name: "end without stop", replies: []anthropictest.Reply{S().Text("Hel").EndWithoutStop()},
			want: turn{Incomplete: []Block{Text{Text: "Hel"}}, Err: "llm: stream ended before message_stop", Retryable: true}},
		{name: "paced stream within the idle timeout",
			replies: []anthropictest.Reply{S().Pace(time.Millisecond).Text("Hel", "lo").Stop("end_turn")},
			want:    turn{Blocks: hello, Stop: EndTurn}},
		{name: "retry-after-ms", replies: []anthropictest.Reply{
			anthropictest.HTTPError{Status: 429, Type: "rate_limit_error", Message: "slow", RetryAfter: 250 * time.Millisecond}, S().Text("Hello").Stop("end_turn")},
			want: turn{Blocks: hello, Stop: EndTurn}, waits: []time.Duration{250 * time.Millisecond}},
		{name: "retry-after", replies: []anthropictest.Reply{
			anthropictest.HTTPError{Status: 529, Type: "overloaded_error", Message: "busy", RetryAfter: 2 * time.Second}, S().Text("Hello").Stop("end_turn")},
			want: turn{Blocks: hello, Stop: EndTurn}, waits: []time.Duration{2 * time.Second}},
		{name: "should-retry false", replies: []anthropictest.Reply{anthropictest.HTTPError{Status: 529, Type: "overloaded_error", Message: "busy", ShouldRetry: "false", RequestID: "req_x"}},
			want: turn{Err: "llm: 529 overloaded_error: busy (request req_x)"}},
		{name: "cloudflare 413", replies: []anthropictest.Reply{
			anthropictest.HTTPError{Status: 413, Body: []byte(`{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`)}},
			want: turn{Err: "llm: 413 request_too_large: Request exceeds the maximum size"}},
		{name: "reply func", replies: []anthropictest.Reply{anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
			return S().Text(r.Messages()[0].Text).Stop("end_turn")
		})}, want: turn{Blocks: []Block{Text{Text: "hi"}}, Stop: EndTurn}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(tt.replies...)
			c, waits := fakeClient(t, srv, tt.cfg)
			got := runTurn(t, c, testReq)
			if tt.want.Err != "" && strings.HasPrefix(got.Err, tt.want.Err) {
				got.Err = tt.want.Err // the rest names the request or the socket
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("turn (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.waits, *waits, lessJitter); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if n := len(srv.Requests()); n != len(tt.replies) {
				t.Errorf("%d requests for %d replies", n, len(tt.replies))
			}
			for _, r := range srv.Requests() {
				if err := anthropictest.CheckRequest(r.Body); err != nil {
					t.Errorf("request %d: %v", r.N, err)
				}
			}
		})
	}
}

// TestFakeServerRequest checks what goes over the wire: stream on, the
// SDK's version and auth headers, the body a real API accepts.
func TestFakeServerRequest(t *testing.T) {
	srv := anthropictest.NewServer(anthropictest.NewStream().Text("ok").Stop("end_turn"))
	c, _ := fakeClient(t, srv, Config{APIKey: "sk-test"})
	req := Request{
		Model: "claude-x", System: "be brief", Cache: true,
		Tools: []ToolSpec{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Messages: []Message{
			{Role: User, Content: []Block{Text{Text: "add"}}},
			{Role: Assistant, Content: []Block{Thinking{Thinking: "t", Signature: "s"}, ToolUse{ID: "toolu_1", Name: "add"}}},
			{Role: User, Content: []Block{ToolResult{ToolUseID: "toolu_1", Content: []Block{Text{Text: "3"}}}}},
		},
	}
	if got := runTurn(t, c, req); got.Err != "" {
		t.Fatal(got.Err)
	}
	r := srv.Requests()[0]
	if err := anthropictest.CheckRequest(r.Body); err != nil {
		t.Error(err)
	}
	p, err := r.Params()
	if err != nil || !p.Stream || p.MaxTokens != DefaultMaxTokens || p.Model != "claude-x" {
		t.Errorf("params %+v, %v", p, err)
	}
	if got := r.Header.Get("Anthropic-Version"); got != "2026-10-21" {
		t.Errorf("anthropic-version = %q, want 2026-10-21", got)
	}
	if r.Header.Get("X-Api-Key") != "sk-test" || r.Header.Get("Authorization") != "" {
		t.Errorf("the key was not sent as x-api-key alone: %v", r.Header)
	}
	if n := strings.Count(string(r.Body), `"cache_control"`); n != 3 {
		t.Errorf("%d cache breakpoints, want 3 (tool, system, last message)", n)
	}
	if strings.Contains(string(r.Body), "temperature") {
		t.Error("temperature sent though unset")
	}
}

func TestHTTPErrorFixtures(t *testing.T) {
	dir := testenv.Fixtures(t)
	tests := []struct {
		file      string
		status    int
		want      APIError
		retryable bool
	}{
		{"400_invalid_request_error_prompt_too_long.json", 400, APIError{Type: "invalid_request_error", RequestID: "req_011CWdepJvA2D819tdYYq4h7"}, false},
		{"401_authentication_error_2024_no_request_id.json", 401, APIError{Type: "authentication_error"}, false},
		{"413_request_too_large_cloudflare.json", 413, APIError{Type: "request_too_large"}, false},
		{"429_rate_limit_error.json", 429, APIError{Type: "rate_limit_error", RequestID: "req_011CcR9mkMvXdaiWP4739PSN"}, true},
		{"500_api_error_overloaded_request_id_null.json", 500, APIError{Type: "api_error"}, true},
		{"529_overloaded_error_multiline_message.json", 529, APIError{Type: "overloaded_error", RequestID: "req_011CZTEFvft13DajMTp9pp64"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := readFixture(t, dir, "http_errors/"+tt.file)
			got := newAPIError(tt.status, nil, body)
			if got.Type != tt.want.Type || got.RequestID != tt.want.RequestID || got.retryable != tt.retryable || got.Message == "" {
				t.Errorf("got %+v", got)
			}
			var err error = got
			if !strings.Contains(err.Error(), got.Message) || IsRetryable(err) != tt.retryable {
				t.Errorf("Error() = %q", err)
			}
		})
	}
	var ae *APIError
	if errors.As(error(newAPIError(502, nil, []byte("<html>bad gateway</html>"))), &ae); ae.Type != "http_error" || !ae.retryable {
		t.Errorf("502 HTML: %+v", ae)
	}
}

// TestCountTokensFake checks CountTokens against the fake server: the body
// carries what takes up context and nothing of generation, and the answer
// is the server's count.
func TestCountTokensFake(t *testing.T) {
	srv := anthropictest.NewServer()
	var counts []*anthropictest.Request // one request at a time: no lock
	srv.CountTokens = func(r *anthropictest.Request) int {
		counts = append(counts, r)
		return 1000 + len(r.Messages())
	}
	c, _ := fakeClient(t, srv, Config{APIKey: "sk-test"})
	req := Request{
		Model: "claude-x", System: "be brief", MaxTokens: 100, Extra: map[string]any{"container": "container_1"},
		Tools:    []ToolSpec{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Messages: []Message{{Role: User, Content: []Block{Text{Text: "add"}}}},
	}
	n, err := c.CountTokens(t.Context(), req)
	if err != nil || n != 1001 {
		t.Fatalf("CountTokens = %d, %v; want 1001", n, err)
	}
	if got := len(srv.Requests()); got != 0 {
		t.Errorf("%d messages requests, want 0", got)
	}
	if len(counts) != 1 {
		t.Fatalf("%d count_tokens requests, want 1", len(counts))
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(counts[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range body {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"messages", "model", "system", "tools"}, keys); diff != "" {
		t.Errorf("body keys (-want +got):\n%s\nbody: %s", diff, counts[0].Body)
	}
	if r := counts[0]; r.Header.Get("X-Api-Key") != "sk-test" || r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("headers %v", r.Header)
	}
}

// Whatever the model table lets a request carry, the strict fake, which
// states the API's rules on its own, accepts: the table is never more
// permissive than the API. Every setting is tried on its own.
func TestModelTableAgreesWithStrictFake(t *testing.T) {
	srv := anthropictest.NewServer(anthropictest.Repeat(anthropictest.NewStream().Text("ok")))
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL, APIKey: "test", MaxAttempts: 1})
	msgs := []Message{{Role: User, Content: []Block{Text{Text: "hi"}}}}
	tools := []ToolSpec{{Name: "f"}}
	for _, model := range []string{"claude-opus-5-5", "claude-fable-5-1", "claude-mythos-5-1", "claude-sonnet-5-5",
		"claude-haiku-5-5", "claude-opus-5", "claude-sonnet-5", "claude-opus-4-8", "claude-next"} {
		info, _ := LookupModel(model)
		reqs := map[string]Request{"adaptive, shown": {Thinking: &ThinkingConfig{Adaptive: true, Display: "summarized"}},
			"no tool choice": {Tools: tools}, "tool_choice none": {Tools: tools, ToolChoice: &ToolChoice{Type: "none"}}}
		for _, e := range info.Efforts {
			reqs["effort "+e] = Request{Effort: e}
		}
		if slices.Contains(info.Thinking, "disabled") {
			reqs["forced"] = Request{Tools: tools, ToolChoice: &ToolChoice{Type: "tool", Name: "f"}}
		}
		if slices.Contains(info.Thinking, "enabled") {
			reqs["budget"] = Request{MaxTokens: 4096, Thinking: &ThinkingConfig{BudgetTokens: 2048}}
		}
		if slices.Contains(info.Thinking, "disabled") {
			reqs["disabled"] = Request{Extra: map[string]any{"thinking": map[string]string{"type": "disabled"}}}
		}
		for name, req := range reqs {
			req.Model, req.Messages = model, msgs
			for _, err := range c.Stream(t.Context(), req) {
				if err != nil {
					t.Errorf("%s, %s: %v", model, name, err)
					break
				}
			}
		}
	}
}
