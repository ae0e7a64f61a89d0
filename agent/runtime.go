package agent

import (
	"context"
	"iter"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// An Observer sees runs from the outside, as package telemetry does to
// trace them, so that the loop itself carries no tracing (package typed
// wraps one to hold a run's answer to a schema). It wraps a run,
// the Runtime that starts its tool calls and each compaction, and each of
// them goes on under the context the Observer passes in: the work inside
// (a subagent's run in a tool call, a summary's model call) nests under
// whatever the Observer opened there, such as a span.
type Observer interface {
	// Run wraps a's run of input, which run starts under the ctx given.
	Run(ctx context.Context, a *Agent, input string, run func(context.Context) iter.Seq2[Event, error]) iter.Seq2[Event, error]
	// Runtime wraps the Runtime of the agent's runs, once, in [New].
	Runtime(Runtime) Runtime
	// Compact wraps a compaction of the history, which compact does.
	Compact(ctx context.Context, compact func(context.Context) (memory.Compaction, error)) (memory.Compaction, error)
}

// A Runtime is everything a run takes from the world besides its Model and
// its hooks: where tool calls run, and time. The loop itself starts no
// goroutine, reads no clock, draws no random number and blocks only in the
// Model, in the hooks and in these methods, so that a Runtime (and Model)
// that do all of it in a Temporal workflow's own primitives make the same
// loop a deterministic workflow (package durable does this).
//
// The default, for a nil [Config].Runtime, runs the calls on the Registry's
// goroutines and uses the system clock.
type Runtime interface {
	// Specs are the tools the model may call.
	Specs() []llm.ToolSpec
	// Start starts call under ctx and returns a function that waits for
	// its result and reports how long the call itself ran (0 if it did
	// not run). The loop calls wait exactly once, in tool_use order; a
	// call whose ctx ends must still return, with an is_error result.
	Start(ctx context.Context, call llm.ToolUse) (wait func() (llm.ToolResult, time.Duration))
	// Wait waits until every call started has returned, or ctx ends; then
	// it returns an error naming the calls still running.
	Wait(ctx context.Context) error
	// WithTimeout returns a child of ctx that is cancelled with cause
	// after d, as context.WithTimeoutCause does.
	WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
	// Backoff waits before try attempt+1 of a model turn that failed with
	// err, as [llm.RetryWait] does: it returns err if the wait would be too
	// long, and ctx's cause if ctx ends first.
	Backoff(ctx context.Context, attempt int, err error) error
	// Pause reports whether the run should stop before its next model
	// turn, to be resumed later (a workflow that continues as new). The
	// run then ends [Paused]. The default never pauses.
	Pause() bool
}

// goroutines is the default Runtime: the registry's calls, on goroutines.
// Specs and Wait are the Registry's.
type goroutines struct{ *tool.Registry }

// Start starts call on the Registry's goroutines. Its wait, on the run's
// goroutine, yields meanwhile the events relayed to the run ([Relay]).
func (g goroutines) Start(ctx context.Context, call llm.ToolUse) func() (llm.ToolResult, time.Duration) {
	began, wait := time.Now(), g.Registry.Start(ctx, call)
	var res llm.ToolResult
	took := make(chan time.Duration, 1)
	// Waiting here times the call, not the stream; wait returns once ctx ends.
	go func() {
		res = wait()
		took <- time.Since(began)
	}()
	at, inRun := ctx.Value(callKey{}).(callSite)
	return func() (llm.ToolResult, time.Duration) {
		for inRun {
			select {
			case d := <-took:
				return res, d
			case <-at.run.wake:
				at.run.emit(nil)
			}
		}
		d := <-took
		return res, d
	}
}

func (goroutines) WithTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, cause)
}

func (goroutines) Backoff(ctx context.Context, attempt int, err error) error {
	return llm.RetryWait(ctx, attempt, err)
}

func (goroutines) Pause() bool { return false }
