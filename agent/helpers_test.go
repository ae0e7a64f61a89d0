package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/calculator"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake starts a fake Anthropic server answering with replies and returns
// it with a real llm.Client pointed at it. At the end of the test every
// request the client sent must pass anthropictest.CheckRequest: whatever
// the loop did, the real API would not have answered 400.
func fake(t testing.TB, replies ...anthropictest.Reply) (*anthropictest.Server, *llm.Client) {
	t.Helper()
	srv := anthropictest.NewServer(replies...)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
		for _, r := range srv.Requests() {
			if err := anthropictest.CheckRequest(r.Body); err != nil {
				t.Errorf("request %d would be rejected by the API: %v\nbody: %s", r.N, err, r.Body)
			}
		}
	})
	client := llm.New(llm.Config{
		BaseURL:     srv.URL,
		APIKey:      "test",
		HTTPClient:  &http.Client{Transport: tr},
		MaxAttempts: 3,
	})
	return srv, client
}

// newAgent returns an agent over model with cfg, failing the test on error.
// Retries do not wait.
func newAgent(t testing.TB, model llm.Model, cfg Config) *Agent {
	t.Helper()
	cfg.Model = model
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.rt = noBackoff{a.rt}
	return a
}

// noBackoff is a Runtime whose retries do not wait.
type noBackoff struct{ Runtime }

func (noBackoff) Backoff(context.Context, int, error) error { return nil }

// collect drains a run and returns its events and the final error. It
// checks the stream's contract: the Result comes last, exactly once, and
// the error comes with it and nowhere else.
func collect(t testing.TB, seq iter.Seq2[Event, error]) ([]Event, Result, error) {
	t.Helper()
	var evs []Event
	var res Result
	var err error
	for ev, e := range seq {
		if len(evs) > 0 {
			if _, ok := evs[len(evs)-1].(Result); ok {
				t.Errorf("event %T after the Result", ev)
			}
		}
		evs = append(evs, ev)
		if r, ok := ev.(Result); ok {
			res = r
		} else if e != nil {
			t.Errorf("error %v yielded with %T, want it only with the Result", e, ev)
		}
		err = e
		// Every event must marshal, for the CLI's --json.
		if _, jerr := json.Marshal(ev); jerr != nil {
			t.Errorf("json.Marshal(%#v): %v", ev, jerr)
		}
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	if _, ok := evs[len(evs)-1].(Result); !ok {
		t.Errorf("last event is %T, want the Result", evs[len(evs)-1])
	}
	return evs, res, err
}

// kinds returns the type of each event in snake_case ("turn_start"), in order, leaving out the
// chatty ones (deltas and usage) unless all is true.
func kinds(evs []Event, all bool) []string {
	var out []string
	for _, e := range evs {
		switch e.(type) {
		case TextDelta, ThinkingDelta, ToolInputDelta, UsageUpdate:
			if !all {
				continue
			}
		}
		out = append(out, snake(strings.TrimPrefix(fmt.Sprintf("%T", e), "agent.")))
	}
	return out
}

// eventsOf returns the events of type E.
func eventsOf[E Event](evs []Event) []E {
	var out []E
	for _, e := range evs {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// validHistory fails the test if h breaks the API's rules.
func validHistory(t testing.TB, h *memory.History) {
	t.Helper()
	// An empty history is where a refused first prompt leaves it: nothing
	// to send, and the next prompt starts a valid one. The next prompt is
	// appended, as the next run sends it: a history may end with the
	// model's answer, which on its own would read as a prefill.
	next := llm.Message{Role: llm.User, Content: []llm.Block{llm.Text{Text: "next"}}}
	body, err := json.Marshal(map[string]any{"model": llm.DefaultModel, "max_tokens": 1, "messages": append(h.Messages(), next)})
	if err == nil && len(h.Messages()) > 0 {
		err = anthropictest.CheckRequest(body)
	}
	if err != nil {
		t.Errorf("history invalid: %v", err)
	}
}

// tools returns a registry with the calculator, echo (returns its text
// input) and block (waits for its context or a release channel, and
// reports each start on started).
type testTools struct {
	reg     *tool.Registry
	started chan string // the id-less input of each block call, as it starts
	release chan struct{}
	mu      sync.Mutex
	calls   []string // names of the tools that ran, in start order
}

func newTools(t testing.TB) *testTools {
	t.Helper()
	tt := &testTools{
		reg:     tool.NewRegistry(tool.Config{}),
		started: make(chan string, 16),
		release: make(chan struct{}),
	}
	type echoIn struct {
		Text string `json:"text"`
	}
	echo, err := tool.New("echo", "Echo the text.", func(ctx context.Context, in echoIn) (string, error) {
		tt.ran("echo")
		return in.Text, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	type blockIn struct {
		N int `json:"n"`
	}
	block, err := tool.New("block", "Wait until released.", func(ctx context.Context, in blockIn) (string, error) {
		tt.ran("block")
		tt.started <- fmt.Sprint(in.N)
		select {
		case <-tt.release:
			return fmt.Sprintf("released %d", in.N), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tt.reg.Register(calculator.New(), echo, block); err != nil {
		t.Fatal(err)
	}
	return tt
}

func (tt *testTools) ran(name string) {
	tt.mu.Lock()
	tt.calls = append(tt.calls, name)
	tt.mu.Unlock()
}

func (tt *testTools) ranNames() []string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]string(nil), tt.calls...)
}

// scripted is an in-process Model that plays one scripted turn per call,
// for tests that need exact control over the events (the fake server
// covers the wire). A turn may end with an error.
type scripted struct {
	mu    sync.Mutex
	turns [][]llm.Event
	errs  []error
	reqs  []llm.Request
}

func (s *scripted) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	var evs []llm.Event
	var err error
	if len(s.turns) > 0 {
		evs, s.turns = s.turns[0], s.turns[1:]
		err, s.errs = s.errs[0], s.errs[1:]
	} else {
		err = errors.New("scripted: no more turns")
	}
	s.mu.Unlock()
	return func(yield func(llm.Event, error) bool) {
		for _, ev := range evs {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

func (s *scripted) add(err error, evs ...llm.Event) *scripted {
	s.turns = append(s.turns, evs)
	s.errs = append(s.errs, err)
	return s
}

// textTurn is the events of a turn answering text with stop reason stop.
func textTurn(text string, stop llm.StopReason) []llm.Event {
	return []llm.Event{
		llm.MessageStart{ID: "msg_1", Usage: llm.Usage{InputTokens: 10}},
		llm.TextDelta{Index: 0, Text: text},
		llm.BlockStop{Index: 0},
		llm.MessageDelta{StopReason: stop, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}},
		llm.MessageStop{},
	}
}

// snake turns a Go type name such as "ToolDone" into "tool_done".
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// texts returns each message of h as "role: text", the text of its blocks
// (tool results' included) joined by "|".
func texts(h *memory.History) []string {
	var out []string
	for _, m := range h.Messages() {
		var parts []string
		for _, b := range m.Content {
			switch b := b.(type) {
			case llm.Text:
				parts = append(parts, b.Text)
			case llm.ToolResult:
				parts = append(parts, llm.TextOf(b.Content))
			}
		}
		out = append(out, string(m.Role)+": "+strings.Join(parts, "|"))
	}
	return out
}
