package agent

import "context"

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

// A callSite, in a tool call's ctx, is the call's run and its id (see
// run.startCall, which puts it there).
type callSite struct {
	run *run
	id  string
}

type callKey struct{}

// CallID returns the tool_use id of the call whose ctx, or a child of it,
// ctx is: a tool handler's ctx in a run. It returns "" for another ctx.
func CallID(ctx context.Context) string {
	at, _ := ctx.Value(callKey{}).(callSite)
	return at.id
}

// Relay queues ev, as a [Nested] event of agent, for the stream of the
// run whose tool call ctx is (or is a child of); for another ctx it does
// nothing.
func Relay(ctx context.Context, agent string, ev Event) {
	at, ok := ctx.Value(callKey{}).(callSite)
	if !ok {
		return
	}
	at.run.mu.Lock()
	at.run.relayed = append(at.run.relayed, Nested{ParentID: at.id, Agent: agent, Event: ev})
	at.run.mu.Unlock()
	select {
	case at.run.wake <- struct{}{}:
	default:
	}
}
