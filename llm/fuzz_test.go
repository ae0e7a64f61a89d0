package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/internal/testenv"
)

// FuzzDecode feeds arbitrary bytes to the SSE reader and event decoder, and
// the events to an Assembler. Whatever the bytes, nothing panics or hangs,
// the stream ends with an error unless message_stop came, and every block
// the Assembler completes can be marshalled to send back.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(textStream))
	f.Add([]byte("data: {\"type\":\"message_stop\"}"))
	f.Add([]byte(strings.Repeat("\r", 100_000))) // once quadratic
	f.Add([]byte("\xEF\xBB\xBFevent: message_stop\r\n\r\n"))
	f.Add([]byte("event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\\ud83d\\ude00\"}}\r\r"))
	f.Add([]byte("event: content_block_start\ndata: {\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"index\":0,\"delta\":{\"type\":\"x_delta\",\"input\":\"a\",\"k\":[1]}}\n\nevent: content_block_stop\ndata: {\"index\":0}\n\n"))
	if dir, ok := testenv.FindFixtures(); ok {
		files, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
		for _, p := range files {
			f.Add(readFixture(f, dir, filepath.Base(p)))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, err := decodeAll(bytes.NewReader(in))
		var a Assembler
		stopped := false
		for _, ev := range evs {
			a.Add(ev)
			_, stopped = ev.(MessageStop)
		}
		if err == nil && !stopped {
			t.Fatal("stream without message_stop ended without error")
		}
		if err != nil && !IsRetryable(err) && !errors.Is(err, errMalformedEvent) {
			if _, ok := errors.AsType[*APIError](err); !ok {
				t.Fatalf("unexpected error kind: %v", err)
			}
		}
		if _, err := json.Marshal(a.Turn().Message); err != nil {
			t.Fatalf("assembled message does not marshal: %v", err)
		}
		a.Turn()
	})
}

// FuzzAssembler drives an Assembler with arbitrary event sequences, as a
// broken or hostile stream could produce them: stray deltas, duplicate and
// interleaved starts, stops for unknown blocks, fragments of anything.
// Completed blocks always marshal, and time stays linear.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte("\x00\x01\x02{\"a\":\x03\x01\x021}\x08\x01"))
	f.Add([]byte("\x04\x00\x05\x00hi\x06\x00\x08\x00\x09\x00\x0a"))
	f.Fuzz(func(t *testing.T, prog []byte) {
		var a Assembler
		for len(prog) >= 2 {
			op, index := prog[0]%12, int(prog[1]%4)
			prog = prog[2:]
			n := 0
			if len(prog) > 0 {
				n = min(int(prog[0]), len(prog)-1)
				prog = prog[1:]
			}
			arg := string(prog[:n])
			prog = prog[n:]
			obj := json.RawMessage(`{"type":"x"}`)
			if json.Valid([]byte(arg)) && len(arg) > 0 && arg[0] == '{' {
				obj = json.RawMessage(arg)
			}
			var ev Event
			switch op {
			case 0:
				ev = ToolUseStart{Index: index, ID: "t", Name: "f", Input: obj}
			case 1:
				ev = ToolInputDelta{Index: index, PartialJSON: arg}
			case 2:
				ev = BlockStop{Index: index}
			case 3:
				ev = ThinkingDelta{Index: index, Thinking: arg}
			case 4:
				ev = TextDelta{Index: index, Text: arg}
			case 5:
				ev = rawStart{Index: index, Block: RawBlock{Type: "compaction", JSON: obj}}
			case 6:
				ev = signatureDelta{Index: index, Signature: arg}
			case 7:
				ev = rawStart{Index: index, Block: RawBlock{Type: "server_tool_use", JSON: obj}}
			case 8:
				ev = rawDelta{Index: index, Raw: obj}
			case 9:
				ev = citationDelta{Index: index, Citation: obj}
			case 10:
				ev = MessageDelta{StopReason: StopReason(arg)}
			case 11:
				ev = MessageStart{ID: arg}
			}
			if b, ok := a.Add(ev); ok {
				if _, err := json.Marshal(b); err != nil {
					t.Fatalf("completed block %#v does not marshal: %v", b, err)
				}
			}
		}
		if _, err := json.Marshal(a.Turn().Message); err != nil {
			t.Fatal(err)
		}
	})
}
