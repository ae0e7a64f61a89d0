package llm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// decodeAll decodes a whole stream, as Client.Stream does. It returns the
// events up to MessageStop, or up to the first error and that error.
func decodeAll(r io.Reader) ([]Event, error) {
	d := newDecoder(r, nil, nil)
	var evs []Event
	for {
		ev, err := d.next()
		if err != nil {
			return evs, err
		}
		if evs = append(evs, ev); ev == (MessageStop{}) {
			return evs, nil
		}
	}
}

// readers returns the ways a test stream is fed to the decoder: whole, a
// byte at a time, and through a bufio.Reader smaller than its lines.
func readers(s string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":   func() io.Reader { return strings.NewReader(s) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"small":   func() io.Reader { return bufio.NewReaderSize(strings.NewReader(s), 16) },
		"smallonebyte": func() io.Reader {
			return bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(s)), 16)
		},
	}
}

const (
	sseStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"cache_read_input_tokens\":5}}}\n\n"
	sseStop  = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

var (
	evStart = MessageStart{ID: "msg_1", Model: "m", Usage: Usage{InputTokens: 10, OutputTokens: 1, CacheReadInputTokens: 5}}
	evDelta = MessageDelta{StopReason: EndTurn, Usage: Usage{InputTokens: 10, OutputTokens: 7, CacheReadInputTokens: 5}}
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{{
		name: "text with ping and comment",
		in: sseStart + ": a comment\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}     }\n\n" +
			"event: content_block_delta\ndata:{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo \\\"\\u00e9\\ud83d\\ude00\\n\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0 }\n\n" + sseStop,
		want: []Event{evStart, TextDelta{Index: 0}, TextDelta{Text: "Hel"}, TextDelta{Text: "lo \"é😀\n"}, BlockStop{}, evDelta, MessageStop{}},
	}, {
		name: "CRLF, multi-line data, missing final blank line",
		in: strings.ReplaceAll(sseStart, "\n", "\r\n") +
			"event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\r\ndata: \"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}\r\n\r\n" +
			"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\": \\\"x\\\\\"}}\r\n\r\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"partial_json\":\"ny\\\"}\",\"type\":\"input_json_delta\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}",
		want: []Event{evStart, ToolUseStart{Index: 3, ID: "t1", Name: "f", Input: json.RawMessage("{}")},
			ToolInputDelta{Index: 3, PartialJSON: `{"a": "x\`}, ToolInputDelta{Index: 3, PartialJSON: `ny"}`}, BlockStop{Index: 3}, MessageStop{}},
	}, {
		name: "data-only events dispatch on their type",
		in:   "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"cache_read_input_tokens\":5}}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
		want: []Event{evStart, MessageStop{}},
	}, {
		name: "thinking, redacted thinking, unknown event and delta",
		in: sseStart +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2ln\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"abc\"}   }\n\n" +
			"event: future_event\ndata: {\"type\":\"future_event\"}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"future_delta\",\"x\":1}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" + sseStop,
		want: []Event{evStart, ThinkingDelta{}, ThinkingDelta{Thinking: "hmm"}, signatureDelta{Signature: "c2ln"}, BlockStop{},
			rawStart{Index: 1, Block: RedactedThinking{Data: "abc"}},
			rawDelta{Index: 1, Raw: json.RawMessage(`{"type":"future_delta","x":1}`)},
			BlockStop{Index: 1}, evDelta, MessageStop{}},
	}, {
		name: "citation",
		in: sseStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"pre\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"type\":\"char_location\",\"cited_text\":\"x\"}}}\n\n",
		want:    []Event{evStart, TextDelta{Text: "pre"}, citationDelta{Citation: json.RawMessage(`{"type":"char_location","cited_text":"x"}`)}},
		wantErr: ErrIncompleteStream,
	}, {
		name: "content in message_start",
		in: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"model\":\"m\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"roll\",\"input\":{\"p\":2}}],\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		want: []Event{MessageStart{ID: "msg_2", Model: "m"}, ToolUseStart{ID: "t", Name: "roll", Input: json.RawMessage(`{"p":2}`)}, BlockStop{},
			MessageDelta{StopReason: ToolUseStop}, MessageStop{}},
	}, {
		name: "tool_use caller and toolset_name kept, streamed and in message_start",
		in: sseStart +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"roll\",\"input\":{\"p\":1},\"caller\":{\"type\":\"code_execution_20250825\",\"tool_id\":\"srvtoolu_1\"},\"toolset_name\":\"dice\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"model\":\"m\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"roll\",\"input\":{},\"caller\":{\"type\":\"direct\"}}],\"usage\":{}}}\n\n",
		want: []Event{evStart,
			ToolUseStart{ID: "t1", Name: "roll", Input: json.RawMessage(`{"p":1}`),
				Caller: json.RawMessage(`{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}`), ToolsetName: "dice"},
			BlockStop{},
			MessageStart{ID: "msg_2", Model: "m"},
			ToolUseStart{ID: "t2", Name: "roll", Input: json.RawMessage(`{}`), Caller: json.RawMessage(`{"type":"direct"}`)},
			BlockStop{}},
		wantErr: ErrIncompleteStream,
	}, {
		// Shapes of vercel_ptc_step1_… and vercel_ptc_step2_… in the
		// shared recordings: the container in message_delta, then in a
		// message_start that carries the whole turn.
		name: "container in message_delta and message_start",
		in: sseStart + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null,\"container\":{\"id\":\"container_011CWHPPTDTn1XufeRB9uHeH\",\"expires_at\":\"2025-12-20T05:33:35.789626Z\"}},\"usage\":{\"output_tokens\":725,\"server_tool_use\":{\"web_search_requests\":0}}}\n\n" +
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"model\":\"m\",\"content\":[],\"container\":{\"id\":\"container_2\",\"expires_at\":\"2025-12-20T05:33:37.969567Z\"},\"stop_reason\":\"tool_use\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"container\":null},\"usage\":{\"output_tokens\":3}}\n\n",
		want: []Event{evStart,
			MessageDelta{StopReason: ToolUseStop, Container: "container_011CWHPPTDTn1XufeRB9uHeH",
				Usage: Usage{InputTokens: 10, OutputTokens: 725, CacheReadInputTokens: 5}},
			MessageStart{ID: "msg_2", Model: "m", Container: "container_2"},
			MessageDelta{StopReason: ToolUseStop, Container: "container_2"},
			MessageDelta{StopReason: EndTurn, Usage: Usage{OutputTokens: 3}}},
		wantErr: ErrIncompleteStream,
	}, {
		name: "usage fields absent or null keep their values",
		in: sseStart + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}," +
			"\"usage\":{\"input_tokens\":null,\"output_tokens\":7,\"server_tool_use\":null}}\n\n",
		want:    []Event{evStart, evDelta},
		wantErr: ErrIncompleteStream,
	}, {
		name:    "malformed container",
		in:      sseStart + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"container\":{\"id\":7}}}\n\n",
		want:    []Event{evStart},
		wantErr: errMalformedEvent,
	}, {
		name:    "half a surrogate pair, invalid UTF-8 and a repeated name, as encoding/json reads them",
		in:      sseStart + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\\ud83d\xffb\"}}\n\n",
		want:    []Event{evStart, TextDelta{Index: 1, Text: "a\uFFFD\uFFFDb"}},
		wantErr: ErrIncompleteStream,
	}, {
		name:    "a lone CR is refused, not misread",
		in:      sseStart + "event: content_block_stop\rdata: {\"type\":\"content_block_stop\",\"index\":0}\r\r",
		want:    []Event{evStart},
		wantErr: errMalformedEvent,
	}, {
		name:    "ends without message_stop",
		in:      sseStart,
		want:    []Event{evStart},
		wantErr: ErrIncompleteStream,
	}, {
		name:    "error event",
		in:      sseStart + "event: error\ndata: {\"type\":\"error\",\"error\":{\"details\":null,\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"request_id\":\"req_1\"}\n\n",
		want:    []Event{evStart},
		wantErr: &APIError{Type: "overloaded_error", Message: "Overloaded", RequestID: "req_1", retryable: true},
	}, {
		name:    "malformed delta",
		in:      sseStart + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x}}\n\n",
		want:    []Event{evStart},
		wantErr: errMalformedEvent,
	}, {
		name:    "malformed usage",
		in:      sseStart + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":\"7\"}}\n\n",
		want:    []Event{evStart},
		wantErr: errMalformedEvent,
	}, {
		name:    "malformed stop reason",
		in:      sseStart + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":7}}\n\n",
		want:    []Event{evStart},
		wantErr: errMalformedEvent,
	}, {
		name:    "malformed message_start",
		in:      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":1}}\n\n",
		wantErr: errMalformedEvent,
	}, {
		name:    "malformed tool_use start",
		in:      sseStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{\"a\":}}}\n\n",
		want:    []Event{evStart},
		wantErr: errMalformedEvent,
	}}
	for _, tt := range tests {
		for rname, r := range readers(tt.in) {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, err := decodeAll(r())
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if want, ok := tt.wantErr.(*APIError); ok {
					if diff := cmp.Diff(want, err, cmp.AllowUnexported(APIError{})); diff != "" {
						t.Errorf("error (-want +got):\n%s", diff)
					}
				} else if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			})
		}
	}
}

// TestDecodeLongLine checks that a data line far beyond bufio's and
// bufio.Scanner's default sizes decodes.
func TestDecodeLongLine(t *testing.T) {
	long := strings.Repeat("abc\\n", 100_000) // 500 KB of JSON
	in := sseStart + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + long + "\"}}\n\n" + sseStop
	got, err := decodeAll(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{evStart, TextDelta{Text: strings.Repeat("abc\n", 100_000)}, evDelta, MessageStop{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestDecodeTooLarge checks that an endless line is refused, not buffered.
func TestDecodeTooLarge(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: "), zeros{})
	_, err := decodeAll(io.LimitReader(r, maxEventSize+1<<20))
	if !errors.Is(err, errMalformedEvent) {
		t.Fatalf("err = %v, want errMalformedEvent", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// dataThenErr returns all of data with err in the same Read, as a body cut
// short by a reset after its last bytes does.
type dataThenErr struct {
	data string
	err  error
}

func (r *dataThenErr) Read(p []byte) (int, error) {
	n := copy(p, r.data)
	r.data = r.data[n:]
	if r.data == "" {
		return n, r.err
	}
	return n, nil
}

// TestDecodeDataBeforeError checks that events read before a connection
// error are decoded before it: a turn whose message_stop arrived is whole.
func TestDecodeDataBeforeError(t *testing.T) {
	s := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{}}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	evs, err := decodeAll(&dataThenErr{s, io.ErrUnexpectedEOF})
	if err != nil || len(evs) != 2 {
		t.Errorf("events %v, error %v; want message_start and message_stop, no error", evs, err)
	}
	evs, err = decodeAll(&dataThenErr{s[:len(s)-20], io.ErrUnexpectedEOF})
	if !errors.Is(err, ErrIncompleteStream) || len(evs) != 1 {
		t.Errorf("cut stream: events %v, error %v; want message_start, then ErrIncompleteStream", evs, err)
	}
}

// TestDecodeJoin checks the deltas a reader behind the stream joins: a
// stream read whole (all of it already there) gives the same events as
// read a byte at a time (never behind), but for how its text and thinking
// deltas are cut; a short stream's are never joined; and what follows a
// join, an error included, still comes, in order.
func TestDecodeJoin(t *testing.T) {
	words := func(n int, w string) []string { return strings.Split(strings.Repeat(w, n-1), "|") }
	for _, tt := range []struct {
		name   string
		stream []byte
		joins  bool
	}{
		{"a short answer", anthropictest.NewStream().Text(words(20, "word |")...).Stop("end_turn").Bytes(), false},
		{"a long answer", anthropictest.NewStream().Text(words(20000, "word |")...).Stop("end_turn").Bytes(), true},
		{"thinking, a call, text", anthropictest.NewStream().
			Block(anthropictest.Block{Type: "thinking", Signature: "sig"}, words(5000, "hm |")...).
			ToolUse("toolu_1", "calc", anthropictest.Split(`{"a":1,"s":"x\"y\u00e9"}`, 3)...).
			Text(words(5000, "é😀 |")...).Stop("tool_use").Bytes(), true},
		{"an error after", anthropictest.NewStream().Text(words(5000, "word |")...).ErrorEvent("overloaded_error", "Overloaded").Bytes(), true},
		{"a malformed delta amid", anthropictest.NewStream().Text(words(5000, "word |")...).
			Event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":1}}`).
			Text(words(5000, "word |")...).Stop("end_turn").Bytes(), true},
		{"a lone CR amid", anthropictest.NewStream().Text(words(5000, "word |")...).Event("ping", "{\r}").
			Text(words(5000, "word |")...).Stop("end_turn").Bytes(), true},
		{"a ping amid", anthropictest.NewStream().Text(words(5000, "word |")...).Event("ping", `{"type":"ping"}`).
			Text(words(5000, "word |")...).Stop("end_turn").Bytes(), true},
		{"cut short", func() []byte {
			b := anthropictest.NewStream().Text(words(5000, "word |")...).Stop("end_turn").Bytes()
			return b[:len(b)*3/4]
		}(), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			whole, werr := decodeAll(strings.NewReader(string(tt.stream)))
			sent, serr := decodeAll(iotest.OneByteReader(strings.NewReader(string(tt.stream))))
			if !errors.Is(werr, serr) && fmt.Sprint(werr) != fmt.Sprint(serr) {
				t.Fatalf("read whole: %v; a byte at a time: %v", werr, serr)
			}
			if joined := len(whole) < len(sent); joined != tt.joins {
				t.Errorf("%d events read whole, %d a byte at a time: joined %v, want %v", len(whole), len(sent), joined, tt.joins)
			}
			if diff := cmp.Diff(joinDeltas(sent), joinDeltas(whole)); diff != "" {
				t.Errorf("read whole, the events differ but for how deltas are cut (-sent +read whole):\n%s", diff)
			}
		})
	}
}

// joinDeltas returns evs with each run of text or thinking deltas of one
// block joined into one.
func joinDeltas(evs []Event) []Event {
	var out []Event
	for _, ev := range evs {
		if n := len(out); n > 0 {
			switch d := ev.(type) {
			case TextDelta:
				if p, ok := out[n-1].(TextDelta); ok && p.Index == d.Index {
					out[n-1] = TextDelta{Index: d.Index, Text: p.Text + d.Text}
					continue
				}
			case ThinkingDelta:
				if p, ok := out[n-1].(ThinkingDelta); ok && p.Index == d.Index {
					out[n-1] = ThinkingDelta{Index: d.Index, Thinking: p.Thinking + d.Thinking}
					continue
				}
			}
		}
		out = append(out, ev)
	}
	return out
}
