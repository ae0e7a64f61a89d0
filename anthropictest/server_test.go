package anthropictest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
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
	body := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
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
	srv := NewServer(NewStream().Text("Hel", "lo").Ping().ToolUse("toolu_1", "add", `{"a":`, `1}`).Stop("tool_use"))
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
	want := "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_01AnthropicTestMessage0001","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
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

var _ = errors.Is
var _ = syscall.ECONNRESET
var _ = time.Second
var _ = goleak.VerifyNone
