package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// script drives a History through the operations an agent loop performs,
// chosen by fuzz bytes: appends, interrupted turns, cut-off replies, stray
// results, repairs and compactions.
type script struct {
	t      *testing.T
	h      *History
	m      *fakeModel
	data   []byte
	next   int
	lastID []string // tool_use ids of the last assistant turn
}

func (s *script) byte() byte {
	if s.next >= len(s.data) {
		return 0
	}
	b := s.data[s.next]
	s.next++
	return b
}

func (s *script) step() {
	op := s.byte() % 9
	switch op {
	case 0: // user prompt, sometimes blank
		if s.byte()%5 == 0 {
			s.h.AppendUser(llm.Text{Text: " "})
		} else {
			s.h.AppendUser(llm.Text{Text: fmt.Sprintf("prompt %d %s", s.next, pad(int(s.byte())))})
		}
	case 1, 2: // assistant turn with 0-3 tool calls, maybe thinking
		var blocks []llm.Block
		if s.byte()%3 == 0 {
			blocks = append(blocks, llm.Thinking{Thinking: "thinking", Signature: "sig"})
		}
		if b := s.byte(); b%4 != 0 {
			blocks = append(blocks, text(fmt.Sprintf("answer %d %s", s.next, pad(int(b)))))
		}
		if s.byte()%3 == 0 { // a paused turn ending in whitespace, as a server tool leaves it
			blocks = append(blocks, text("searching \n"))
		}
		s.lastID = nil
		for k := range int(s.byte() % 4) {
			id := fmt.Sprintf("toolu_%d_%d", s.next, k)
			if s.next%17 == 0 {
				id = "toolu_dup" // now and then a duplicate id
			}
			s.lastID = append(s.lastID, id)
			blocks = append(blocks, llm.ToolUse{ID: id, Name: "calc", Input: json.RawMessage(`{"n":1}`)})
		}
		s.h.AppendAssistant(asst(blocks...), llm.Usage{InputTokens: int64(s.byte()) * 10, OutputTokens: 5})
	case 3: // all results
		s.results(len(s.lastID), false)
	case 4: // some results, sometimes a stray one: a cancellation mid-batch
		s.results(int(s.byte())%(len(s.lastID)+1), s.byte()%2 == 0)
	case 5: // a reply cut off inside its tool input
		s.h.AppendAssistant(asst(llm.ToolUse{ID: fmt.Sprintf("toolu_cut%d", s.next), Name: "calc", Input: json.RawMessage(`{"n":`)}), llm.Usage{})
	case 6:
		s.h.Repair()
		s.check("after Repair")
	case 7:
		s.h.Repair()
		before := len(s.h.entries)
		if _, err := s.h.Compact(context.Background(), s.m); err == nil || before > 0 {
			s.check("after Compact")
		}
	case 8: // a tool result with a large payload, to give compaction work
		if len(s.lastID) > 0 {
			s.h.AppendUser(result(s.lastID[0], pad(2000)))
		}
	}
}

func (s *script) results(n int, stray bool) {
	var rs []llm.Block
	for _, id := range s.lastID[:n] {
		rs = append(rs, result(id, "ok "+pad(int(s.byte()))))
	}
	if stray {
		rs = append(rs, result("toolu_stray", "?"))
	}
	s.h.AppendUser(rs...)
}

func (s *script) check(when string) {
	s.t.Helper()
	if len(s.h.entries) == 0 {
		return
	}
	// The fake API's rules, for the request that would be sent now.
	if err := s.h.validate(); err != nil {
		s.t.Fatalf("%s (op byte %d): %v", when, s.next, err)
	}
	if s.h.Messages()[0].Role != llm.User {
		s.t.Fatalf("%s: first message is not a user message", when)
	}
}

func pad(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

// FuzzHistory checks the central promise: whatever happened, after Repair
// (and after a successful Compact) the request the history makes passes
// the fake API's rules (anthropictest.CheckRequest).
func FuzzHistory(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 2, 3, 1, 3, 0, 4, 1, 3})
	f.Add([]byte{1, 1, 0, 2, 1, 2, 5, 6, 0, 7})
	f.Add([]byte{0, 0, 1, 1, 1, 3, 4, 2, 1, 0, 5, 0, 0, 7, 8, 7, 3})
	f.Add([]byte{4, 4, 4, 0, 5, 0, 6, 6})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &script{t: t, data: data, m: &fakeModel{summary: "the user asked for sums; all done so far"},
			h: New(Config{ContextLimit: 1500, KeepRecent: 2})}
		for s.next < len(data) {
			s.step()
		}
		s.h.Repair()
		s.check("at the end")
	})
}

// TestHistoryRandom runs the fuzz body over many pseudo-random scripts, so
// that plain `go test` covers far more than the seed corpus.
func TestHistoryRandom(t *testing.T) {
	state := uint32(1)
	rnd := func() byte {
		state ^= state << 13
		state ^= state >> 17
		state ^= state << 5
		return byte(state)
	}
	for run := range 400 {
		data := make([]byte, 20+run%80)
		for i := range data {
			data[i] = rnd()
		}
		s := &script{t: t, data: data, m: &fakeModel{summary: "summary of the work"},
			h: New(Config{ContextLimit: 1200 + 10*run, KeepRecent: 1 + run%3})}
		for s.next < len(data) {
			s.step()
		}
		s.h.Repair()
		s.check(fmt.Sprintf("run %d at the end", run))
	}
}
