package memory

import (
	"context"
	"iter"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// fakeModel answers every call with summary, as a well-formed stream, and
// records the requests.
type fakeModel struct {
	summary string
	usage   llm.Usage
	err     error // returned instead of a reply when set

	mu   sync.Mutex
	reqs []llm.Request
}

func (f *fakeModel) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return func(yield func(llm.Event, error) bool) {
		if f.err != nil {
			yield(nil, f.err)
			return
		}
		evs := []llm.Event{
			llm.MessageStart{ID: "msg_1", Model: req.Model, Usage: llm.Usage{InputTokens: f.usage.InputTokens, OutputTokens: 1}},
			llm.TextDelta{Index: 0, Text: f.summary},
			llm.BlockStop{Index: 0},
			llm.MessageDelta{StopReason: llm.EndTurn, Usage: f.usage},
			llm.MessageStop{},
		}
		for _, ev := range evs {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

func (f *fakeModel) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.reqs...)
}
