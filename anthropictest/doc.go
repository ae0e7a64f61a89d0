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
//		if err := anthropictest.CheckRequest(r.Body); err != nil {
//			t.Error(err) // the real API would have answered 400
//		}
//	}
//
// A Reply is one of three things:
//   - a *Stream, built with NewStream and its chainable methods, which write
//     the events exactly as the API does (`event: X\ndata: {json}\n\n`, one
//     flush per event) and number content blocks automatically. Text and
//     ToolUse send the common blocks, Compaction a compaction; Block sends
//     any other, given as a Block value, and Event any other event, such as
//     a citations_delta. The same builder scripts faults: an error event
//     mid-stream (ErrorEvent), a reset connection (Reset), a stream that
//     ends without message_stop (EndWithoutStop), a stall (Stall) and slow
//     pacing (Pace). Replay makes a Stream of recorded bytes, sent
//     verbatim, for framing the builders do not write.
//   - an HTTPError, a struct literal: the API's error body and headers.
//   - a ReplyFunc, which computes the reply from the request, or a Repeat,
//     which answers every request from then on.
//
// A Stream answers as the API does: each reply has a message id of its own
// and names the model requested (Stream.Message fixes them), and a ping
// follows the first block's start. A request without "stream": true gets
// the whole Message, as application/json, built from the same script
// (message.go says how each fault looks then), so that the official SDKs'
// non-streaming calls work too.
//
// The server holds the conversations of the message-threads beta
// (thread.go): a request that continues a thread sends only its new turn,
// and the server answers it from what it holds, or with the API's errors
// (thread_not_found…), as the official SDKs' thread clients expect.
//
// The server also answers POST /v1/messages/count_tokens, with a count from
// Server.CountTokens, without using the script. Server.Buffered makes it
// write each stream in large writes, for benchmarks.
//
// It serves the cloud platforms' routes too (platform.go): Amazon
// Bedrock's /model/MODEL/invoke-with-response-stream, answered in AWS's
// event-stream framing, and Vertex AI's …/models/MODEL:streamRawPredict,
// each holding a request to that platform's body rules, so that the
// official SDKs' Bedrock and Vertex adaptations run against it offline.
// Server.Local makes it answer as a local model server does (Ollama,
// llama-server, vLLM): no count_tokens, a 400 for Anthropic-only fields.
//
// CheckRequest reports every way a request body breaks the Messages API's
// structural rules, such as a tool_use left without its tool_result, and
// the current models' rules of strict mode (below), but for the thinking
// block checks, which need what the server streamed.
//
// The server is strict by default: a request that breaks a current model's
// rules (thinking disabled or given a budget on Claude Opus 5.5 or Fable
// 5.1, a forced tool_choice, an effort the model does not take, a thinking
// block sent back after its prefix changed or to a model that cannot read
// it, a prefill: messages ending with an assistant turn that is not the
// API's own paused turn) gets the API's 400, and so does a temperature,
// top_p or top_k on any model at API version 2026-10-21; the script is
// not touched. Each signed thinking block it streams is recorded, so that
// it can tell a replayed block from its original. Set Server.Lenient for a
// test that breaks those rules on purpose.
//
// This package imports no layer of agentloop (only the internal package that
// states the API's rules, which memory shares), so that any project can use it.
package anthropictest
