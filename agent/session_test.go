package agent

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
	"github.com/agentloop/agentloop/tool"
)

// saved returns the bytes h saves as.
func saved(t *testing.T, h *memory.History) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := jsonl.Save(path, h); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFailedRunChangesNothing checks that a run that fails leaves the
// history, and so the session file, exactly as before it: its prompt is not
// merged into the next one, and a compaction it made is not kept.
func TestFailedRunChangesNothing(t *testing.T) {
	badRequest := func() at.Reply {
		return at.HTTPError{Status: 400, Type: "invalid_request_error", Message: "something about the request"}
	}
	tooLong := func() at.Reply {
		return at.HTTPError{Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 25000 tokens > 20000 maximum"}
	}
	tests := []struct {
		name    string
		history func() *memory.History
		fail    []at.Reply // the failing run's replies
	}{
		{"a 400", func() *memory.History { return memory.New(memory.Config{}) }, []at.Reply{badRequest()}},
		{"too long twice, compacted between", func() *memory.History { return longHistory(6) }, []at.Reply{tooLong(), tooLong()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := append([]at.Reply{at.NewStream().Text("first answer").Stop("end_turn")}, tt.fail...)
			srv, client := fake(t, summarising(append(replies, at.NewStream().Text("third answer").Stop("end_turn"))...))
			a := newAgent(t, client, Config{History: tt.history()})
			if _, err := a.Run(t.Context(), "first"); err != nil {
				t.Fatal(err)
			}
			before, file := texts(a.cfg.History), saved(t, a.cfg.History)

			if res, err := a.Run(t.Context(), "the failing prompt"); res.State != Failed || err == nil {
				t.Fatalf("second run = %+v, %v; want a failure", res, err)
			}
			if diff := cmp.Diff(before, texts(a.cfg.History)); diff != "" {
				t.Errorf("history after the failed run (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(file, saved(t, a.cfg.History)); diff != "" {
				t.Errorf("session file after the failed run (-before +after):\n%s", diff)
			}

			// The next prompt goes out alone, after the first exchange.
			if _, err := a.Run(t.Context(), "third"); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			last := reqs[len(reqs)-1].Messages()
			if got := last[len(last)-1].Text; got != "third" || strings.Contains(string(reqs[len(reqs)-1].Body), "the failing prompt") {
				t.Errorf("last request ends with %q; want the third prompt alone, without the failed one", got)
			}
		})
	}
}

// TestInterruptedRunReadsNaturally checks that the next prompt after an
// interrupted run follows the prompt and the partial answer, marked, as a
// complete exchange: user, assistant, user.
func TestInterruptedRunReadsNaturally(t *testing.T) {
	srv, client := fake(t, at.NewStream().Text("The first half").Stall(), at.NewStream().Text("ok").Stop("end_turn"))
	a := newAgent(t, client, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for ev := range a.Stream(ctx, "tell me a story") {
		if _, ok := ev.(TextDelta); ok {
			cancel()
		}
	}
	if _, err := a.Run(t.Context(), "go on"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range srv.Requests()[1].Messages() {
		got = append(got, m.Role+": "+m.Text)
	}
	want := []string{"user: tell me a story", "assistant: The first half" + interrupted, "user: go on"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second request (-want +got):\n%s", diff)
	}
}

// overflow is an error of some other Model that says, by errors.Is and not
// by its words, that the prompt did not fit.
type overflow struct{}

func (overflow) Error() string        { return "context full" }
func (overflow) Is(target error) bool { return target == llm.ErrPromptTooLong }

// TestPromptTooLongByErrorsIs checks that an overflow is recognised by
// errors.Is, whatever its text, and that text alone is not enough.
func TestPromptTooLongByErrorsIs(t *testing.T) {
	for _, tt := range []struct {
		err       error
		compacted bool
	}{
		{overflow{}, true},
		{errors.New("the tool said: prompt is too long"), false},
	} {
		turns := 0
		m := llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
			return func(yield func(llm.Event, error) bool) {
				if strings.HasPrefix(llm.TextOf(req.Messages[0].Content), "<transcript>") {
					for _, ev := range textTurn("summary", llm.EndTurn) {
						yield(ev, nil)
					}
					return
				}
				if turns++; turns == 1 {
					yield(nil, tt.err)
					return
				}
				for _, ev := range textTurn("fits now", llm.EndTurn) {
					yield(ev, nil)
				}
			}
		})
		h := longHistory(6)
		a := newAgent(t, m, Config{History: h})
		evs, res, _ := collect(t, a.Stream(t.Context(), "go on"))
		if got := len(eventsOf[Compacted](evs)) > 0; got != tt.compacted || (res.State == Finished) != tt.compacted {
			t.Errorf("error %q: compacted %v, state %s; want compacted %v", tt.err, got, res.State, tt.compacted)
		}
	}
}

// TestRetryBackoff checks the retries of a turn against the module's one
// backoff: 40 attempts wait at most its 8 s cap each, where a shift
// overflowed and panicked past 35, and a retry-after longer than the llm
// client would wait ends the retries at once.
func TestRetryBackoff(t *testing.T) {
	overloaded := streamError(t, at.NewStream().Text("par").ErrorEvent("overloaded_error", "Overloaded"))
	partial := func(m *scripted, err error, n int) *scripted {
		for range n {
			m.add(err, llm.MessageStart{ID: "msg_1"}, llm.TextDelta{Index: 0, Text: "par"})
		}
		return m
	}
	t.Run("40 attempts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := partial(&scripted{}, overloaded, 39).add(nil, textTurn("done", llm.EndTurn)...)
			a, err := New(Config{Model: m, MaxAttempts: 40})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := a.Run(t.Context(), "go")
			if err != nil || res.Text != "done" {
				t.Fatalf("run = %+v, %v", res, err)
			}
			if took := time.Since(start); took > 39*8*time.Second {
				t.Errorf("39 retries waited %v, more than 39 × the 8 s cap", took)
			}
		})
	})
	t.Run("retry-after too long", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			wait := *overloaded
			wait.RetryAfter = time.Minute + time.Second
			m := partial(&scripted{}, &wait, 1).add(nil, textTurn("done", llm.EndTurn)...)
			a, _ := New(Config{Model: m})
			start := time.Now()
			res, err := a.Run(t.Context(), "go")
			if res.State != Failed || !errors.As(err, new(*llm.APIError)) || time.Since(start) != 0 {
				t.Errorf("run = %+v, %v after %v; want a failure at once", res, err, time.Since(start))
			}
		})
	})
}

// TestToolsGivenDirectly checks that Config.Tools needs no Registry, and
// that a Registry given for its options gets the tools, also when two
// agents share it.
func TestToolsGivenDirectly(t *testing.T) {
	calc := newTools(t).reg
	tl, _ := calc.Lookup("calculator")
	reg := tool.NewRegistry(tool.Config{MaxConcurrency: 1})
	for range 2 {
		a, err := New(Config{Model: &scripted{}, Tools: []*tool.Tool{tl}, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		if a.cfg.Registry != reg {
			t.Error("the agent does not use the Registry it was given")
		}
	}
	if got, ok := reg.Lookup("calculator"); !ok || got != tl {
		t.Errorf("Registry.Lookup(calculator) = %v, %v; want the tool from Config.Tools", got, ok)
	}
	a, _ := New(Config{Model: &scripted{}, Tools: []*tool.Tool{tl}})
	if specs := a.cfg.Registry.Specs(); len(specs) != 1 || specs[0].Name != "calculator" {
		t.Errorf("specs = %+v, want the calculator alone", specs)
	}
}

// TestBlankPrompt checks that a blank prompt fails before any request, and
// changes nothing.
func TestBlankPrompt(t *testing.T) {
	m := &scripted{}
	a := newAgent(t, m, Config{})
	_, res, err := collect(t, a.Stream(t.Context(), " \n\t"))
	if res.State != Failed || err == nil || !strings.Contains(err.Error(), "prompt is empty") || len(m.reqs) != 0 || len(a.cfg.History.Messages()) != 0 {
		t.Errorf("blank prompt: %+v, %v, %d requests, %d messages", res, err, len(m.reqs), len(a.cfg.History.Messages()))
	}
}

// streamError returns the error an llm.Client yields for the stream s, such
// as a retryable *llm.APIError, which only llm can make. It is made outside
// any synctest bubble, since the fake server listens on a real socket.
func streamError(t *testing.T, s *at.Stream) *llm.APIError {
	t.Helper()
	srv := at.NewServer(s)
	defer srv.Close()
	c := llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test", MaxAttempts: 1})
	for _, err := range c.Stream(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "hi"}}}}}) {
		if ae, ok := errors.AsType[*llm.APIError](err); ok {
			return ae
		}
	}
	t.Fatal("the stream gave no *llm.APIError")
	return nil
}

// TestRepairedEvent checks that a history that breaks the API's rules
// before a request is repaired, and that the run says so, with what was
// fixed, before the turn that sends it.
func TestRepairedEvent(t *testing.T) {
	_, client := fake(t, at.NewStream().Text("ok").Stop("end_turn"))
	h := memory.New(memory.Config{})
	h.AppendUser(llm.Text{Text: "add 1 and 2"})
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: []llm.Block{
		llm.ToolUse{ID: "toolu_0", Name: "add", Input: json.RawMessage(`{"a":1,"b":2}`)}}}, llm.Usage{})
	evs, _, err := collect(t, newAgent(t, client, Config{History: h}).Stream(t.Context(), "go on"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"repaired", "turn_start", "result"}, kinds(evs, false)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if r := eventsOf[Repaired](evs); len(r) != 1 || len(r[0].Fixes) == 0 {
		t.Errorf("repaired events %+v, want one that names its fixes", r)
	}
}
