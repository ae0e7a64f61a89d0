package anthropictest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// postWhole sends a request that asks for no stream.
func postWhole(t *testing.T, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	body := `{"model":"claude-opus-4-8","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t).Do(req)
}

// TestMessageNotStreamed checks the raw reply to a request without
// "stream": true: the whole Message as application/json, in the API's
// field order, from the script a stream would send.
func TestMessageNotStreamed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tests := []struct {
		name   string
		stream *Stream
		want   string
	}{{
		name:   "text and a tool call",
		stream: NewStream().Usage(12, 1, 0, 3).Text("Let me ", "add.").ToolUse("toolu_1", "add", `{"a":`, `1}`).Stop("tool_use", 9),
		want: `{"id":"msg_01AnthropicTest000000001","type":"message","role":"assistant","model":"claude-opus-4-8",` +
			`"content":[{"type":"text","text":"Let me add."},{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":1}}],` +
			`"stop_reason":"tool_use","stop_sequence":null,` +
			`"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":9,"service_tier":"standard"}}`,
	}, {
		name: "thinking, a compaction, and Message's id and model",
		stream: NewStream().Message("msg_fixed", "claude-fable-5-1").Compaction("Sum.").
			Block(Block{Type: "thinking", Signature: "c2ln"}, "Hm", ".").Text("Hi"),
		want: `{"id":"msg_fixed","type":"message","role":"assistant","model":"claude-fable-5-1",` +
			`"content":[{"type":"compaction","content":"Sum."},{"type":"thinking","thinking":"Hm.","signature":"c2ln"},{"type":"text","text":"Hi"}],` +
			`"stop_reason":"end_turn","stop_sequence":null,` +
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":6,"service_tier":"standard"}}`,
	}, {
		name:   "a recorded stream, with its padding, pings and CRLF line ends",
		stream: Replay([]byte("event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_rec\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}   }\r\n\r\n: a comment\nevent: ping\ndata: {\"type\": \"ping\"}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null,\"stop_details\":null},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")),
		want: `{"id":"msg_rec","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],` +
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2},"stop_details":null}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(tt.stream)
			defer srv.Close()
			resp, err := postWhole(t, context.Background(), srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" ||
				resp.Header.Get("Request-Id") != "req_anthropictest0000000001" {
				t.Errorf("status %d, content-type %q, request-id %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Request-Id"))
			}
			if diff := cmp.Diff(tt.want, string(body)); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMessageNotStreamedFaults checks each scripted fault's form when the
// reply is not streamed, through the official SDK's Messages.New.
func TestMessageNotStreamedFaults(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tests := []struct {
		name   string
		stream *Stream
		check  func(t *testing.T, err error)
	}{{
		name:   "an error event is the HTTP error of its type",
		stream: NewStream().Text("partial").ErrorEvent("overloaded_error", "Overloaded"),
		check: func(t *testing.T, err error) {
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.RequestID != "req_anthropictest0000000001" ||
				!strings.Contains(apiErr.Error(), "Overloaded") {
				t.Errorf("err = %v, want the API's 529 overloaded_error", err)
			}
		},
	}, {
		name:   "a stream that ends without message_stop is a body cut short",
		stream: NewStream().Text("partial").EndWithoutStop(),
		check: func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "EOF") {
				t.Errorf("err = %v, want an unexpected EOF", err)
			}
		},
	}, {
		name:   "a reset connection",
		stream: NewStream().Text("partial").Reset(),
		check: func(t *testing.T, err error) {
			if err == nil {
				t.Error("err = nil after a connection reset")
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := viaSDKNew(t, tt.stream)
			tt.check(t, err)
		})
	}
}

// TestMessageNotStreamedPaced checks that pacing delays a whole reply by
// the sum of its events' delays.
func TestMessageNotStreamedPaced(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	waits := make(chan time.Duration, 1)
	release := make(chan time.Time, 1)
	release <- time.Time{}
	// Four paced events: the text's start, the ping, two deltas.
	srv := newServer(hooks{after: func(d time.Duration) <-chan time.Time { waits <- d; return release }},
		NewStream().Pace(10*time.Millisecond).Text("a", "b").Pace(0).Text("c"))
	defer srv.Close()
	resp, err := postWhole(t, context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if d := waitFor(t, waits, "the pacing wait"); d != 40*time.Millisecond {
		t.Errorf("waited %v, want 40ms: four events of 10ms", d)
	}
	if !strings.Contains(string(body), `"content":[{"type":"text","text":"ab"},{"type":"text","text":"c"}]`) {
		t.Errorf("body %s", body)
	}
}
