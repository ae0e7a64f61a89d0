package agent

import (
	"context"
	"sync"
)

// Nested is an event of a run inside one of this run's tool calls, which
// the call passes on with [Relay], as package subagent does each event of
// its runs, their nested events wrapped once more: ParentID is the
// tool_use id of the call, Agent the inner agent's Config.Name. The run
// yields them on its own goroutine, in the order they were relayed,
// before the call's [ToolDone]: while it waits for its calls, and else at
// its next event.
type Nested struct {
	ParentID string `json:"parent_tool_use_id"`
	Agent    string `json:"agent"`
	Event    Event  `json:"event"`
}

func (Nested) isEvent() {}

// A relay queues the events of the runs inside a run's tool calls, which
// run on other goroutines, for the run to yield on its own.
type relay struct {
	run   *run
	mu    sync.Mutex
	queue []Event
	wake  chan struct{} // holds a token while events are queued
}

// A callSite, in a tool call's ctx, is the call's run's relay and its id.
type callSite struct {
	relay *relay
	id    string
}

type callKey struct{}

// inCall returns ctx for call id of this run.
func (r *run) inCall(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callKey{}, callSite{r.relay, id})
}

// CallID returns the tool_use id of the call whose ctx, or a child of it,
// ctx is: a tool handler's ctx in a run. It returns "" for another ctx.
func CallID(ctx context.Context) string {
	at, _ := ctx.Value(callKey{}).(callSite)
	return at.id
}

// take empties the queue, and returns it and then e unless nil.
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

// Relay queues ev, as a [Nested] event of agent, for the stream of the
// run whose tool call ctx is (or is a child of); for another ctx it does
// nothing.
func Relay(ctx context.Context, agent string, ev Event) {
	at, ok := ctx.Value(callKey{}).(callSite)
	if !ok {
		return
	}
	at.relay.mu.Lock()
	at.relay.queue = append(at.relay.queue, Nested{ParentID: at.id, Agent: agent, Event: ev})
	at.relay.mu.Unlock()
	select {
	case at.relay.wake <- struct{}{}:
	default:
	}
}

// awaitRelaying waits until done is closed, yielding meanwhile the events
// relayed to the run of the call whose ctx is ctx. A Runtime's wait calls
// it, on the run's goroutine, where yielding is safe.
func awaitRelaying(ctx context.Context, done <-chan struct{}) {
	at, ok := ctx.Value(callKey{}).(callSite)
	for ok {
		select {
		case <-done:
			return
		case <-at.relay.wake:
			at.relay.run.emit(nil)
		}
	}
	<-done
}
