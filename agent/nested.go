package agent

import (
	"context"
	"iter"
	"sync"
)

// Nested is an event of a run inside one of this run's tool calls, such
// as a subagent's (package subagent): ParentID is the tool_use id of the
// call it runs in, Agent the inner agent's Config.Name. Every run of an
// Agent under a tool call's ctx is relayed so, its Result included (its
// error goes with the call's result), and its own nested runs' events
// come wrapped once more. The run yields them on its own goroutine, in
// the order they happened, before the call's [ToolDone]: while it waits
// for its calls, and else at its next event.
type Nested struct {
	ParentID string `json:"parent_tool_use_id"`
	Agent    string `json:"agent"`
	Event    Event  `json:"event"`
}

func (Nested) isEvent() {}

// A relay queues the events of runs inside a run's tool calls, which run
// on other goroutines, for the run's loop to yield.
type relay struct {
	mu    sync.Mutex
	queue []Event
	wake  chan struct{} // holds a token while events are queued
	flush func()        // the run's: yields the queue, on its goroutine
}

type callKey struct{}

// A callSite is where a run's tool call runs: the relay of its run and
// its tool_use id.
type callSite struct {
	relay *relay
	id    string
}

func newRelay(r *run) *relay {
	return &relay{wake: make(chan struct{}, 1), flush: func() { r.emit(nil) }}
}

// inCall returns ctx for call id of this run: a run under it relays its
// events here.
func (r *run) inCall(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callKey{}, callSite{r.relay, id})
}

// CallID returns the tool_use id of the call whose ctx, or a child of it,
// ctx is: a tool handler's ctx in a run. It returns "" for another ctx.
func CallID(ctx context.Context) string {
	at, _ := ctx.Value(callKey{}).(callSite)
	return at.id
}

// take returns the queued events, then e unless nil, and empties the queue.
func (l *relay) take(e Event) []Event {
	l.mu.Lock()
	q := l.queue
	l.queue = nil
	l.mu.Unlock()
	if e != nil {
		q = append(q, e)
	}
	return q
}

// relayed passes seq on, and queues each of its events, as [Nested], for
// the run whose tool call ctx is in, if any.
func relayed(ctx context.Context, agent string, seq iter.Seq2[Event, error]) iter.Seq2[Event, error] {
	at, ok := ctx.Value(callKey{}).(callSite)
	if !ok {
		return seq
	}
	return func(yield func(Event, error) bool) {
		for ev, err := range seq {
			at.relay.mu.Lock()
			at.relay.queue = append(at.relay.queue, Nested{ParentID: at.id, Agent: agent, Event: ev})
			at.relay.mu.Unlock()
			select {
			case at.relay.wake <- struct{}{}:
			default:
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// awaitRelaying waits until done is closed, yielding meanwhile the events
// that runs inside the call of ctx relay to its run. It is called on the
// run's goroutine (by a Runtime's wait), where yielding is safe.
func awaitRelaying(ctx context.Context, done <-chan struct{}) {
	at, ok := ctx.Value(callKey{}).(callSite)
	if !ok {
		<-done
		return
	}
	for {
		select {
		case <-done:
			return
		case <-at.relay.wake:
			at.relay.flush()
		}
	}
}
