package anthropictest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// A test scripts the replies, points the official SDK at the fake server,
// and checks both what came back and what was sent.
func Example() {
	srv := anthropictest.NewServer(
		anthropictest.NewStream().Text("Hello", ", world").Stop("end_turn"),
	)
	defer srv.Close()

	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"))
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-sonnet-5-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
	})
	var msg anthropic.Message
	for stream.Next() {
		msg.Accumulate(stream.Current())
	}
	if err := stream.Err(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(msg.Content[0].Text, msg.StopReason)

	req := srv.Requests()[0]
	fmt.Println(req.Messages()[0].Text, anthropictest.CheckRequest(req.Body))
	// Output:
	// Hello, world end_turn
	// Say hello <nil>
}

// Stream.Bytes shows the exact wire format the server sends.
func ExampleStream_Bytes() {
	s := anthropictest.NewStream().Usage(5, 1, 0, 0).
		ToolUse("toolu_1", "get_time", `{"tz":"U`, `TC"}`).Stop("tool_use")
	fmt.Print(string(s.Bytes()))
	// Output:
	// event: message_start
	// data: {"type":"message_start","message":{"id":"msg_01AnthropicTest000000001","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}
	//
	// event: content_block_start
	// data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_time","input":{}}}
	//
	// event: ping
	// data: {"type": "ping"}
	//
	// event: content_block_delta
	// data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}
	//
	// event: content_block_delta
	// data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"tz\":\"U"}}
	//
	// event: content_block_delta
	// data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"TC\"}"}}
	//
	// event: content_block_stop
	// data: {"type":"content_block_stop","index":0}
	//
	// event: message_delta
	// data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}
	//
	// event: message_stop
	// data: {"type":"message_stop"}
}

// Stream.Block sends any block kind as a Block value, and Event any other
// event, such as a delta into the open block: here a thinking block, a
// redacted one, and a text block (index 2) with a citation.
func ExampleStream_Block() {
	s := anthropictest.NewStream().
		Block(anthropictest.Block{Type: "thinking", Signature: "sig"}, "Hm.").
		Block(anthropictest.Block{Type: "redacted_thinking", Data: "RD=="}).
		Text("Go.").Event("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"Go"}}}`).
		Stop("end_turn")
	for _, line := range strings.Split(string(s.Bytes()), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && !strings.Contains(data, "message") {
			fmt.Println(data)
		}
	}
	// Output:
	// {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}
	// {"type": "ping"}
	// {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm."}}
	// {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}
	// {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}
	// {"type":"content_block_stop","index":0}
	// {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"RD=="}}
	// {"type":"content_block_stop","index":1}
	// {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}
	// {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Go."}}
	// {"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"Go"}}}
	// {"type":"content_block_stop","index":2}
}

// A request that does not ask for a stream gets the whole Message the
// script streams, with an id of its own and the model it asked for.
func ExampleStream_Message() {
	srv := anthropictest.NewServer(anthropictest.NewStream().Text("Hello, ", "world").ToolUse("toolu_1", "now"))
	defer srv.Close()
	resp, _ := http.Post(srv.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"claude-opus-4-8","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"))
	fmt.Println(string(body))
	// Output:
	// application/json
	// {"id":"msg_01AnthropicTest000000001","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"text","text":"Hello, world"},{"type":"tool_use","id":"toolu_1","name":"now","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3,"service_tier":"standard"}}
}

// A ReplyFunc computes the reply from the request, here to drive a tool
// loop for as long as the client keeps answering tool calls.
func ExampleReplyFunc() {
	srv := anthropictest.NewServer(anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
		if n := len(r.Messages()); n < 5 {
			return anthropictest.NewStream().ToolUse(fmt.Sprintf("toolu_%d", n), "step", `{}`)
		}
		return anthropictest.NewStream().Text("done")
	})))
	defer srv.Close()

	messages := `{"role":"user","content":"go"}`
	for {
		resp, _ := http.Post(srv.URL+"/v1/messages", "application/json",
			strings.NewReader(`{"model":"m","max_tokens":9,"stream":true,"messages":[`+messages+`]}`))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"tool_use"`) {
			break
		}
		id := fmt.Sprintf("toolu_%d", len(srv.Requests()))
		messages += `,{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"step","input":{}}]}` +
			`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}`
	}
	last := srv.Requests()[len(srv.Requests())-1]
	fmt.Println(len(srv.Requests()), "requests; last is valid:", anthropictest.CheckRequest(last.Body) == nil)
	// Output: 3 requests; last is valid: true
}

// HTTPError answers with the API's error body and retry headers; the error
// type follows from the status.
func ExampleHTTPError() {
	srv := anthropictest.NewServer(
		anthropictest.HTTPError{Status: 529, Message: "Overloaded", RetryAfter: 2 * time.Second, ShouldRetry: "true"},
	)
	defer srv.Close()
	resp, _ := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry"))
	fmt.Println(string(body))
	// Output:
	// 529 2 true
	// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_anthropictest0000000001"}
}

// CheckRequest lists every structural mistake in a request body.
func ExampleCheckRequest() {
	err := anthropictest.CheckRequest([]byte(`{"model":"m","max_tokens":9,"messages":[
		{"role":"user","content":"What time is it?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"now","input":"{}"}]},
		{"role":"user","content":[{"type":"text","text":""}]}]}`))
	fmt.Println(err)
	// Output:
	// anthropictest: request breaks the Messages API's rules (3):
	//	messages.1.content.0.input: tool_use input must be a JSON object, got "{}" [tool-input]
	//	messages.2.content.0: text content blocks must contain non-whitespace text [empty-text]
	//	messages.1.content.0: tool_use "toolu_1" has no tool_result in the next user message [tool-unanswered]
}
