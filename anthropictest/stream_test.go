package anthropictest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// stdJSON is encoding/json's rendering of s, without HTML escaping, which
// is what the API sends.
func stdJSON(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote\back`, "nl\n cr\r tab\t nul\x00 esc\x1b del\x7f",
		"<&>", "wörld → 🚀", "\u2028\u2029", "bad\xffutf8\xc3", "\\", `{"a":"\u00e9"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendJSONString(nil, s)), stdJSON(s); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestSplit(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 3, nil},
		{`{"a":1}`, 3, []string{`{"a`, `":1`, `}`}},
		{`{"a":1}`, 100, []string{`{"a":1}`}},
		{`"x\"y"`, 3, []string{`"x\`, `"y"`}}, // the cut falls inside the escape
		{"é→🚀", 1, []string{"é", "→", "🚀"}},   // never inside a UTF-8 sequence
		{"aé", 2, []string{"aé"}},
	}
	for _, tt := range tests {
		got := Split(tt.s, tt.n)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Split(%q, %d) (-want +got):\n%s", tt.s, tt.n, diff)
		}
		for _, p := range got {
			if !utf8.ValidString(p) {
				t.Errorf("Split(%q, %d): piece %q is not valid UTF-8", tt.s, tt.n, p)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Split(s, 0) did not panic")
		}
	}()
	Split("x", 0)
}

// events renders a script and returns each event as "name data".
func events(t *testing.T, s *Stream) []string {
	t.Helper()
	evs, err := readEvents(bytes.NewReader(s.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.name+" "+e.data)
	}
	return out
}

func TestStreamShapes(t *testing.T) {
	const start = `message_start {"type":"message_start","message":{"id":"msg_01AnthropicTest000000001","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}`
	delta := func(reason string, out string) string {
		return `message_delta {"type":"message_delta","delta":{"stop_reason":"` + reason + `","stop_sequence":null},"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":` + out + `}}`
	}
	const stop = `message_stop {"type":"message_stop"}`
	const ping = `ping {"type": "ping"}` // after the first block's start, as the API sends one
	tests := []struct {
		name   string
		stream *Stream
		want   []string
	}{{
		name:   "empty script ends the turn",
		stream: NewStream(),
		want:   []string{start, delta("end_turn", "1"), stop},
	}, {
		name:   "default stop after a tool is tool_use and closes the block",
		stream: NewStream().ToolUse("toolu_1", "now"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}`,
			ping,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			delta("tool_use", "1"), stop},
	}, {
		name:   "thinking: deltas, empty delta, signature",
		stream: NewStream().Block(Block{Type: "thinking", Signature: "c2ln"}, "hm").Stop("end_turn"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			ping,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			delta("end_turn", "3"), stop},
	}, {
		name:   "thinking without signature sends no signature_delta",
		stream: NewStream().Block(Block{Type: "thinking"}).Stop("end_turn"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			ping,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			delta("end_turn", "1"), stop},
	}, {
		name:   "redacted thinking and a whole block, no deltas",
		stream: NewStream().Block(Block{Type: "redacted_thinking", Data: "EmwK"}).Block(Block{Raw: []byte(`{"type":"fallback"}`)}).Stop("end_turn"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwK"}}`,
			ping,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"fallback"}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			delta("end_turn", "1"), stop},
	}, {
		name: "whole tool input, streamed server tool input, and a compaction block with its delta (Compaction)",
		stream: NewStream().Block(Block{Type: "tool_use", ID: "toolu_1", Name: "roll", Input: []byte(`{"p":2}`)}).
			Block(Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"q":1}`).
			Compaction("sum"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"roll","input":{"p":2}}}`,
			ping,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"compaction","content":null}}`,
			`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"compaction_delta","content":"sum"}}`,
			`content_block_stop {"type":"content_block_stop","index":2}`,
			delta("tool_use", "3"), stop},
	}, {
		name:   "max_tokens closes a text block but not a tool call, unless EndBlock did",
		stream: NewStream().ToolUse("toolu_1", "a", `{}`).EndBlock().Text("b").Stop("max_tokens"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"a","input":{}}}`,
			ping,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"b"}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			delta("max_tokens", "3"), stop},
	}, {
		name:   "Replay sends its bytes with no message_start, then what the builder adds",
		stream: Replay([]byte("event: ping\ndata: {}\n\nevent: x\ndata: {}\n\n")).Text("a"),
		want: []string{`ping {}`, `x {}`,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`},
	}, {
		name:   "max_tokens cuts a tool call: no content_block_stop",
		stream: NewStream().ToolUse("toolu_1", "write", `{"text":"ab`).Stop("max_tokens"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"write","input":{}}}`,
			ping,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"text\":\"ab"}}`,
			delta("max_tokens", "2"), stop},
	}, {
		name:   "unknown events and pings between blocks",
		stream: NewStream().Text("a").EndBlock().Event("ping", `{"type": "ping"}`).Event("future_event", `{"type":"future_event"}`).Text().Stop("end_turn"),
		want: []string{start,
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			ping,
			`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
			`content_block_stop {"type":"content_block_stop","index":0}`,
			`ping {"type": "ping"}`,
			`future_event {"type":"future_event"}`,
			`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			`content_block_stop {"type":"content_block_stop","index":1}`,
			delta("end_turn", "1"), stop},
	}, {
		name:   "stall after stop sends the whole message",
		stream: NewStream().Stop("end_turn").Stall(),
		want:   []string{start, delta("end_turn", "1"), stop},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, events(t, tt.stream)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReplayVerbatim checks that Replay sends framing the builders cannot
// write (a comment, CRLF, a data-only event) byte for byte, with what the
// builders append after it.
func TestReplayVerbatim(t *testing.T) {
	const sse = ": comment\r\ndata: {\"type\":\"ping\"}\r\n\r\n"
	got := string(Replay([]byte(sse)).Event("ping", `{"type": "ping"}`).Bytes())
	if want := sse + "event: ping\ndata: {\"type\": \"ping\"}\n\n"; got != want {
		t.Errorf("Replay bytes = %q, want %q", got, want)
	}
}

func TestStreamRerendersAfterChange(t *testing.T) {
	s := NewStream().Text("a")
	before := s.Bytes()
	s.Text("b")
	after := s.Bytes()
	if bytes.Equal(before, after) || !bytes.Contains(after, []byte(`"text":"b"`)) {
		t.Errorf("Bytes did not follow a change to the script:\n%s", after)
	}
	if !bytes.Equal(after, s.Bytes()) {
		t.Error("Bytes is not stable")
	}
}

func TestStreamPanics(t *testing.T) {
	tests := map[string]func(){
		"builder after ErrorEvent":     func() { NewStream().ErrorEvent("api_error", "x").Text("y") },
		"builder after Reset":          func() { NewStream().Reset().Event("ping", `{"type": "ping"}`) },
		"builder after EndWithoutStop": func() { NewStream().EndWithoutStop().Stop("end_turn") },
		"two terminal faults":          func() { NewStream().Stall().Reset() },
		"deltas for a whole block":     func() { NewStream().Block(Block{Type: "redacted_thinking"}, "x") },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

// TestBufferedAndShared checks a Buffered server sends the same bytes, and
// that one Stream can serve overlapping requests, each reply with its own
// message id.
func TestBufferedAndShared(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := NewStream().Text(Split(strings.Repeat("token ", 2000), 5)...)
	want := bytes.Replace(s.Bytes(), []byte(`"model":"`+defaultModel+`"`), []byte(`"model":"m"`), 1)
	ids := make(chan string, 6)
	srv := NewServer(Repeat(NewStream().Text(Split(strings.Repeat("token ", 2000), 5)...)))
	srv.Buffered = true
	defer srv.Close()
	srv2 := NewServer(Repeat(s))
	defer srv2.Close()
	client := newClient(t)
	errs := make(chan error, 6)
	for i := range 6 {
		url := srv.URL
		if i%2 == 1 {
			url = srv2.URL
		}
		go func() {
			resp, err := tryPost(context.Background(), client, url)
			if err != nil {
				errs <- err
				return
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The message id is the only difference: msg_01AnthropicTest and nine digits.
			const at = len(`event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01AnthropicTest`)
			if err == nil && (len(got) != len(want) || !bytes.Equal(got[:at], want[:at]) || !bytes.Equal(got[at+9:], want[at+9:])) {
				err = fmt.Errorf("reply differs from Bytes():\n%.300s", got)
			}
			if err == nil {
				ids <- string(got[at : at+9])
			}
			errs <- err
		}()
	}
	for range 6 {
		if err := waitFor(t, errs, "a reply"); err != nil {
			t.Errorf("reply: %v", err)
		}
	}
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 3 { // three requests to each server, numbered 1 to 3 on each
		t.Errorf("message ids %v, want three, each used once on each server", seen)
	}
}
