package anthropictest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
)

// The official SDK is an independent client, so it is the judge of whether
// the fake speaks the real format: it must consume every scripted stream
// without error and assemble exactly what the script said.

// block is the part of an SDK content block a script controls.
type block struct {
	Type, Text, Thinking, Signature, Data, ID, Name, Input string
	Citations                                              []string
}

// message is the part of an SDK message a script controls.
type message struct {
	ID, Model, StopReason, StopSequence string
	In, Out, CacheW, CacheR             int64
	Content                             []block
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("input %q is not JSON: %v", raw, err)
	}
	return b.String()
}

// viaSDK streams one reply from a fresh server through the SDK.
func viaSDK(t *testing.T, reply Reply) (message, error) {
	return viaSDKCall(t, reply, true)
}

// viaSDKNew gets one reply from a fresh server through the SDK's
// non-streaming call, Messages.New.
func viaSDKNew(t *testing.T, reply Reply) (message, error) {
	return viaSDKCall(t, reply, false)
}

func viaSDKCall(t *testing.T, reply Reply, streaming bool) (message, error) {
	t.Helper()
	srv := NewServer(reply)
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-5-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
	var acc anthropic.Message
	if streaming {
		stream := client.Messages.NewStreaming(context.Background(), params)
		defer stream.Close()
		for stream.Next() {
			if err := acc.Accumulate(stream.Current()); err != nil {
				t.Fatalf("Accumulate: %v", err)
			}
		}
		if err := stream.Err(); err != nil {
			return message{}, err
		}
	} else {
		m, err := client.Messages.New(context.Background(), params)
		if err != nil {
			return message{}, err
		}
		acc = *m
	}
	if err := CheckRequest(srv.Requests()[0].Body); err != nil {
		t.Errorf("the SDK's own request fails CheckRequest: %v", err)
	}
	m := message{
		ID: acc.ID, Model: string(acc.Model), StopReason: string(acc.StopReason), StopSequence: acc.StopSequence,
		In: acc.Usage.InputTokens, Out: acc.Usage.OutputTokens,
		CacheW: acc.Usage.CacheCreationInputTokens, CacheR: acc.Usage.CacheReadInputTokens,
	}
	for _, c := range acc.Content {
		b := block{Type: c.Type, Text: c.Text, Thinking: c.Thinking, Signature: c.Signature, Data: c.Data,
			ID: c.ID, Name: c.Name, Input: compact(t, c.Input)}
		if c.Type == "web_search_tool_result" {
			b.ID = c.ToolUseID
		}
		for _, ct := range c.Citations {
			b.Citations = append(b.Citations, ct.RawJSON())
		}
		m.Content = append(m.Content, b)
	}
	return m, nil
}

func TestSDKAssemblesScript(t *testing.T) {
	const cite = `{"type":"char_location","cited_text":"sky","document_index":0,"document_title":"doc","start_char_index":0,"end_char_index":3}`
	const search = `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"T","url":"https://example.com","encrypted_content":"abc","page_age":null}]}`
	base := message{ID: msgID(1), Model: defaultModel, In: 10}
	with := func(m message, f func(*message)) message { f(&m); return m }

	tests := []struct {
		name   string
		stream *Stream
		want   message
	}{{
		name:   "text deltas, pings and an unknown event",
		stream: NewStream().Event("ping", `{"type": "ping"}`).Text("Hel", "", "lo, ", "wörld\n\t\"<&>\"\u2028").Event("ping", `{"type": "ping"}`).Event("brand_new_event", `{"type":"brand_new_event","x":1}`).Stop("end_turn"),
		want: with(base, func(m *message) {
			m.StopReason, m.Out = "end_turn", 4
			m.Content = []block{{Type: "text", Text: "Hello, wörld\n\t\"<&>\"\u2028"}}
		}),
	}, {
		name: "tool input split inside a key, a value and an escape",
		stream: NewStream().Text("Let me add.").
			ToolUse("toolu_01", "calc", `{"ex`, `pr": "1 \`, `"+\`, `" 2 \u00`, `e9", "n"`, `: 4`, `2}`).
			Stop("tool_use"),
		want: with(base, func(m *message) {
			m.StopReason, m.Out = "tool_use", 9
			m.Content = []block{
				{Type: "text", Text: "Let me add."},
				{Type: "tool_use", ID: "toolu_01", Name: "calc", Input: `{"expr":"1 \"+\" 2 \u00e9","n":42}`},
			}
		}),
	}, {
		name:   "tool with no arguments, parallel tools, Split fragments",
		stream: NewStream().ToolUse("toolu_a", "now").ToolUse("toolu_b", "echo", Split(`{"s":"a\\b\"c→d"}`, 3)...),
		want: with(base, func(m *message) {
			m.StopReason, m.Out = "tool_use", 8
			m.Content = []block{
				{Type: "tool_use", ID: "toolu_a", Name: "now", Input: `{}`},
				{Type: "tool_use", ID: "toolu_b", Name: "echo", Input: `{"s":"a\\b\"c→d"}`},
			}
		}),
	}, {
		name:   "tool input whole in the start",
		stream: NewStream().Block(Block{Type: "tool_use", ID: "toolu_w", Name: "player", Input: []byte(`{"player":"player1"}`)}),
		want: with(base, func(m *message) {
			m.StopReason, m.Out = "tool_use", 1
			m.Content = []block{{Type: "tool_use", ID: "toolu_w", Name: "player", Input: `{"player":"player1"}`}}
		}),
	}, {
		name: "thinking, redacted thinking, then text; usage set",
		stream: NewStream().Usage(321, 3, 7, 55096).
			Block(Block{Type: "thinking", Signature: "sig=="}, "Let me ", "think.").Block(Block{Type: "redacted_thinking", Data: "EmwKAhgBEgy"}).Text("Done.").Stop("end_turn", 99),
		want: message{ID: msgID(1), Model: defaultModel, StopReason: "end_turn", In: 321, Out: 99, CacheW: 7, CacheR: 55096,
			Content: []block{
				{Type: "thinking", Thinking: "Let me think.", Signature: "sig=="},
				{Type: "redacted_thinking", Data: "EmwKAhgBEgy"},
				{Type: "text", Text: "Done."},
			}},
	}, {
		name: "server tool, its result block, text with citations",
		stream: NewStream().Block(Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"query": "t`, `ech news"}`).Block(Block{Raw: []byte(search)}).
			Text("The ", "sky").Event("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":`+cite+`}}`).
			Event("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":`+cite+`}}`).Stop("pause_turn"),
		want: with(base, func(m *message) {
			m.StopReason, m.Out = "pause_turn", 5 // the deltas Event sends are not counted
			m.Content = []block{
				{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search", Input: `{"query":"tech news"}`},
				{Type: "web_search_tool_result", ID: "srvtoolu_1"},
				{Type: "text", Text: "The sky", Citations: []string{cite, cite}},
			}
		}),
	}, {
		name: "stop sequence",
		stream: NewStream().Text("1, 2, 3").EndBlock().
			Event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"STOP"},"usage":{"output_tokens":1}}`).
			Event("message_stop", `{"type":"message_stop"}`).EndWithoutStop(),
		want: with(base, func(m *message) {
			m.StopReason, m.StopSequence, m.Out = "stop_sequence", "STOP", 1
			m.Content = []block{{Type: "text", Text: "1, 2, 3"}}
		}),
	}, {
		name:   "refusal with no blocks",
		stream: NewStream().Event("ping", `{"type": "ping"}`).Stop("refusal"),
		want:   with(base, func(m *message) { m.StopReason, m.Out = "refusal", 1 }),
	}, {
		name:   "a stop_reason no client knows yet",
		stream: NewStream().Text("x").Stop("model_context_window_exceeded_v2"),
		want: with(base, func(m *message) {
			m.StopReason, m.Out = "model_context_window_exceeded_v2", 1
			m.Content = []block{{Type: "text", Text: "x"}}
		}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := viaSDK(t, tt.stream)
			if err != nil {
				t.Fatalf("SDK stream error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("assembled message mismatch (-want +got):\n%s", diff)
			}
			// The same bytes through Replay must assemble the same message.
			again, err := viaSDK(t, Replay(tt.stream.Bytes()))
			if err != nil {
				t.Fatalf("SDK stream error on Replay(Bytes()): %v", err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("Replay(Bytes()) differs (-served +replayed):\n%s", diff)
			}
			// A request without "stream": true gets the same message whole.
			whole, err := viaSDKNew(t, tt.stream)
			if err != nil {
				t.Fatalf("SDK Messages.New error: %v", err)
			}
			if diff := cmp.Diff(got, whole); diff != "" {
				t.Errorf("Messages.New differs (-streamed +whole):\n%s", diff)
			}
			whole, err = viaSDKNew(t, Replay(tt.stream.Bytes()))
			if err != nil {
				t.Fatalf("SDK Messages.New error on Replay(Bytes()): %v", err)
			}
			if diff := cmp.Diff(got, whole); diff != "" {
				t.Errorf("Messages.New of Replay(Bytes()) differs (-streamed +whole):\n%s", diff)
			}
		})
	}
}

func TestSDKSeesFaults(t *testing.T) {
	t.Run("error event", func(t *testing.T) {
		_, err := viaSDK(t, NewStream().Text("partial").ErrorEvent("overloaded_error", "Overloaded"))
		if err == nil {
			t.Fatal("SDK stream err = nil, want the overloaded error")
		}
	})
	t.Run("HTTP error", func(t *testing.T) {
		_, err := viaSDK(t, HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RequestID: "req_011CUdge", ShouldRetry: "false"})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("err = %v, want *anthropic.Error", err)
		}
		if apiErr.StatusCode != 529 || apiErr.RequestID != "req_011CUdge" {
			t.Errorf("status %d, request id %q; want 529, req_011CUdge", apiErr.StatusCode, apiErr.RequestID)
		}
	})
	t.Run("reset", func(t *testing.T) {
		if _, err := viaSDK(t, NewStream().Text("partial").Reset()); err == nil {
			t.Fatal("SDK stream err = nil after a connection reset")
		}
	})
}

// TestSDKReplyIdentity checks that each reply has a message id of its own
// and names the model requested, streamed or not, unless Message fixes them.
func TestSDKReplyIdentity(t *testing.T) {
	reply := NewStream().Text("hi")
	srv := NewServer(Repeat(ReplyFunc(func(r *Request) Reply {
		if r.N == 4 {
			return NewStream().Message("msg_fixed", "claude-opus-5").Text("hi")
		}
		return reply
	})))
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	type identity struct{ ID, Model string }
	var got []identity
	for i, model := range []string{"claude-opus-4-8", "claude-haiku-5-5", "claude-opus-4-8", "claude-opus-4-8"} {
		params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
		var m anthropic.Message
		if i%2 == 0 {
			stream := client.Messages.NewStreaming(context.Background(), params)
			for stream.Next() {
				m.Accumulate(stream.Current())
			}
			if err := stream.Close(); err != nil || stream.Err() != nil {
				t.Fatal(err, stream.Err())
			}
		} else {
			whole, err := client.Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			m = *whole
		}
		got = append(got, identity{m.ID, string(m.Model)})
	}
	want := []identity{
		{"msg_01AnthropicTest000000001", "claude-opus-4-8"},
		{"msg_01AnthropicTest000000002", "claude-haiku-5-5"},
		{"msg_01AnthropicTest000000003", "claude-opus-4-8"},
		{"msg_fixed", "claude-opus-5"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
}
