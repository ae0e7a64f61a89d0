package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
)

// A convo drives a history through the strict fake, as the agent does:
// each turn sends the history, appends the reply, and answers its tool
// calls.
type convo struct {
	t      *testing.T
	srv    *anthropictest.Server
	client *llm.Client
	h      *History
	system string
	tools  []llm.ToolSpec
	turns  int
}

func newConvo(t *testing.T, model string) *convo {
	srv := anthropictest.NewServer()
	t.Cleanup(srv.Close)
	c := &convo{t: t, srv: srv, client: llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test", MaxAttempts: 1}),
		system: "You add numbers.", tools: []llm.ToolSpec{{Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	c.h = New(Config{Model: model, Logger: nil})
	c.h.SetPrefix(c.system, c.tools)
	c.h.AppendUser(llm.Text{Text: task})
	return c
}

// turn scripts the next reply (thinking, then a tool call unless last),
// sends the history and appends the reply; it returns the API's error.
func (c *convo) turn(last bool) error {
	c.t.Helper()
	c.turns++
	n := c.turns
	// No input usage: the history's counts stay estimates, which the
	// compaction cases size their limits by.
	st := anthropictest.NewStream().Usage(0, 1, 0, 0).Block(anthropictest.Block{Type: "thinking", Signature: fmt.Sprintf("sig_%d", n)}, fmt.Sprintf("Step %d.", n))
	if last {
		st.Text("The total is 42.")
	} else {
		st.ToolUse(fmt.Sprintf("toolu_%d", n), "read", fmt.Sprintf(`{"file":%d}`, n))
	}
	c.srv.Enqueue(st)
	return c.send()
}

// send sends the history as it is and appends the reply.
func (c *convo) send() error {
	c.t.Helper()
	c.h.SetPrefix(c.system, c.tools)
	c.h.Repair()
	req := llm.Request{Model: c.h.Config().Model, MaxTokens: 1000, System: c.system, Tools: c.tools, Messages: c.h.Messages(), Cache: true}
	var asm llm.Assembler
	for ev, err := range c.client.Stream(c.t.Context(), req) {
		if err != nil {
			return err
		}
		asm.Add(ev)
	}
	msg := asm.Turn().Message
	c.h.AppendAssistant(msg, asm.Turn().Usage)
	var results []llm.Block
	for _, b := range msg.Content {
		if u, ok := b.(llm.ToolUse); ok {
			results = append(results, result(u.ID, "value "+strings.Repeat("7", 400)))
		}
	}
	if len(results) > 0 {
		c.h.AppendUser(results...)
	} else {
		c.h.AppendUser(llm.Text{Text: "And now?"})
	}
	return nil
}

// thinkingCount counts the history's thinking blocks.
func thinkingCount(h *History) int {
	n := 0
	for _, m := range h.Messages() {
		for _, b := range m.Content {
			if _, ok := b.(llm.Thinking); ok {
				n++
			}
		}
	}
	return n
}

// Every history rewrite leaves requests the strict fake accepts, on the
// current models: the thinking a rewrite invalidates goes, the rest stays.
// Without the rule each case drops, the fake answers the next request
// with the API's 400.
func TestRewritesKeepThinkingValid(t *testing.T) {
	summarise := func(t *testing.T, c *convo) { // the client's summary
		c.srv.Enqueue(anthropictest.NewStream().Text("We read three files; the total so far is 21."))
		c.h.cfg.ContextLimit, c.h.cfg.KeepRecent, c.h.cfg.Compaction = 150, 1, "client"
		if _, err := c.h.Compact(t.Context(), c.client); err != nil && !errors.Is(err, ErrCannotCompact) {
			t.Fatal(err)
		}
		if !c.h.entries[0].Summary {
			t.Fatal("no summary")
		}
	}
	tests := []struct {
		name    string
		model   string
		rewrite func(t *testing.T, c *convo)
		kept    int // thinking blocks left after the rewrite
	}{
		{"clearing old tool results", "claude-opus-5-5", func(t *testing.T, c *convo) {
			c.h.cfg.ContextLimit, c.h.cfg.KeepRecent = 300, 1
			if _, err := c.h.Compact(t.Context(), nil); err != nil && !errors.Is(err, ErrCannotCompact) {
				t.Fatal(err)
			}
		}, 1}, // the first turn's, before the first result cleared
		{"a summary on sonnet-5-5", "claude-sonnet-5-5", summarise, 0},
		{"a summary on opus-5-5", "claude-opus-5-5", summarise, 0},
		{"a summary on fable-5-1", "claude-fable-5-1", summarise, 0},
		{"a summary on haiku-5-5", "claude-haiku-5-5", summarise, 0},
		{"a server summary on opus-5-5", "claude-opus-5-5", func(t *testing.T, c *convo) {
			c.srv.Enqueue(anthropictest.NewStream().Compaction("We read three files.").Stop("compaction"))
			c.h.cfg.ContextLimit = 150
			if _, err := c.h.Compact(t.Context(), c.client); err != nil && !errors.Is(err, ErrCannotCompact) {
				t.Fatal(err)
			}
		}, 0},
		{"a changed system prompt", "claude-fable-5-1", func(t *testing.T, c *convo) { c.system = "You add numbers carefully." }, 0},
		{"a changed tool list", "claude-haiku-5-5", func(t *testing.T, c *convo) {
			c.tools = append(c.tools, llm.ToolSpec{Name: "write"})
		}, 0},
		{"repair of a corrupted session", "claude-opus-5-5", func(t *testing.T, c *convo) {
			// The second tool call's input became a string in the file:
			// repair makes it {}, a change after the first thinking block.
			s := c.h.Snapshot()
			for _, e := range s.Entries {
				for j, b := range e.Message.Content {
					if u, ok := b.(llm.ToolUse); ok && string(u.Input) == `{"file":2}` {
						u.Input = json.RawMessage(`"file 2"`)
						e.Message.Content[j] = u
					}
				}
			}
			c.h = Restore(s, c.h.Config())
		}, 1},
		{"resumed with a model that cannot read the blocks", "claude-opus-5-5", func(t *testing.T, c *convo) {
			c.h = resume(t, c.h, "claude-sonnet-5-5")
		}, 0},
		{"resumed with a model that reads them", "claude-opus-5-5", func(t *testing.T, c *convo) {
			c.h = resume(t, c.h, "claude-fable-5-1")
		}, 3},
		{"resumed with the same model and prefix", "claude-sonnet-5-5", func(t *testing.T, c *convo) {
			c.h = resume(t, c.h, "claude-sonnet-5-5")
		}, 3},
		{"compaction on a model that does not bind its blocks", "claude-opus-5", func(t *testing.T, c *convo) {
			c.h.cfg.ContextLimit, c.h.cfg.KeepRecent = 300, 1
			c.h.Compact(t.Context(), nil)
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConvo(t, tt.model)
			for i := range 3 {
				if err := c.turn(i == 2); err != nil {
					t.Fatalf("turn %d: %v", i+1, err)
				}
			}
			tt.rewrite(t, c)
			c.h.SetPrefix(c.system, c.tools)
			c.h.Repair()
			if got := thinkingCount(c.h); got != tt.kept {
				t.Errorf("%d thinking blocks kept, want %d", got, tt.kept)
			}
			if err := c.h.validate(); err != nil {
				t.Fatal(err)
			}
			if err := c.turn(true); err != nil {
				t.Fatalf("the request after the rewrite: %v", err)
			}
		})
	}
}

// resume restores h for model, as a --session run does.
func resume(t *testing.T, h *History, model string) *History {
	t.Helper()
	cfg := h.Config()
	cfg.Model, cfg.ContextWindow, cfg.ContextLimit = model, 0, 0
	return Restore(h.Snapshot(), cfg)
}

// A refusal's take-back restores the history exactly, so its thinking
// stays valid: the next request replays it and the strict fake accepts it.
func TestRollbackKeepsThinking(t *testing.T) {
	c := newConvo(t, "claude-opus-5-5")
	if err := c.turn(true); err != nil {
		t.Fatal(err)
	}
	rollback := c.h.Checkpoint()
	c.h.AppendUser(llm.Text{Text: "Something the classifiers decline."})
	c.srv.Enqueue(anthropictest.NewStream().Block(anthropictest.Block{Type: "thinking", Signature: "sig_refused"}).Stop("refusal"))
	if err := c.send(); err != nil {
		t.Fatal(err)
	}
	rollback()
	if got := thinkingCount(c.h); got != 1 {
		t.Fatalf("%d thinking blocks after the take-back, want the first turn's", got)
	}
	if err := c.turn(true); err != nil {
		t.Fatalf("the request after the take-back: %v", err)
	}
}
