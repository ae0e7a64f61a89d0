// Package anthropictest provides a fake Anthropic Messages API on loopback,
// speaking the real server-sent-events wire format, for offline tests: what
// net/http/httptest is for HTTP code, this is for code that calls Claude.
//
// A test scripts one Reply per request and points its client at Server.URL:
//
//	srv := anthropictest.NewServer(
//		anthropictest.NewStream().ToolUse("toolu_1", "add", `{"a":1,`, `"b":2}`).Stop("tool_use"),
//		anthropictest.NewStream().Text("3").Stop("end_turn"),
//	)
//	defer srv.Close()
//	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"))
//	// ... run the agent loop, then:
//	for _, r := range srv.Requests() {
//		if err := r.Check(); err != nil {
//			t.Error(err) // the real API would have answered 400
//		}
//	}
//
// Streams are built with NewStream and its chainable methods, which write
// the events exactly as the API does (`event: X\ndata: {json}\n\n`, one
// flush per event) and number content blocks automatically. The same
// builder scripts faults: an error event mid-stream (Stream.ErrorEvent), a
// reset connection (Stream.Reset), a stream that ends without message_stop
// (Stream.EndWithoutStop), a stall (Stream.Stall, Hang) and slow pacing
// (Stream.Pace). HTTPError answers with the API's error body and retry
// headers, Replay sends recorded bytes verbatim, and ReplyFunc computes a
// reply from the request.
//
// The server also answers POST /v1/messages/count_tokens, with a count set by
// Server.SetCountTokens, recording those requests in Server.CountRequests
// without using the script.
//
// CheckRequest reports every way a request body breaks the Messages API's
// structural rules, such as a tool_use left without its tool_result.
//
// This package imports nothing else from agentloop, so that any project can
// use it.
package anthropictest
