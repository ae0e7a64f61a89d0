// Package durable runs the agent loop as a Temporal workflow, so that a run
// survives the death of the process that runs it.
//
// The workflow runs package agent's own loop (an agent.Agent), through the
// loop's seams (agent.Runtime, llm.Model, agent.Config.Hooks), split
// where Temporal needs it:
//
//   - Each model turn is an activity ([Activities.ModelTurn]). It streams
//     with the worker's [llm.Model] (an [*llm.Client] that does not retry
//     itself) and returns the assembled message, stop reason and usage. A
//     transient failure goes to Temporal's retry policy, after the
//     server's retry-after if it sent one; a 4xx (not [llm.IsRetryable]) is
//     not retried. A failure after the turn handed over a tool call is the
//     agent's to retry, since the call may have run: it is kept, with its
//     result, in the history before the retry.
//   - Each tool call is an activity ([Activities.CallTool]). The calls of a
//     turn run in parallel, except that the calls of the tools that share a
//     [tool.Tool] Queue run one after another in tool_use order. A call that
//     completed is recorded and never runs again. A call whose worker died
//     while it ran is run again on another worker: tool calls are
//     at-least-once. A tool named in [Config.AtMostOnce] is never retried;
//     the model gets an is_error result instead.
//   - A call of the task tool of [Config.Agents] (package subagent) is a
//     child workflow: the subagent's own run of this workflow, which
//     survives a worker's death as its parent does. [Stream] relays its
//     events, and its tokens and cost count against the run's limits.
//   - Everything else is agent's and memory's own code, run in the workflow,
//     deterministically: the history with its rules, compaction (whose
//     summary call is a ModelTurn activity), the limits, every stop reason,
//     repeat detection and approvals.
//
// As in process, a call starts the moment its input has streamed: the
// model activity signals it to the workflow, which starts its activity
// while the turn still streams (one whose input is over [BlobThreshold]
// starts when the turn ends, to keep it out of the history twice). If the
// turn then fails, the calls it started run to their end and stay in the
// history, as in process. A continue-as-new carries the history with its
// exact token counts (memory/jsonl's Encode).
//
// [Tracing] carries the trace context from a client through the workflow
// into the activities, so that a run's chat and execute_tool spans
// (Config.Telemetry) are children of the caller's span.
//
// Both activities heartbeat, so a dead worker is noticed after
// [Input].Heartbeat (default 10 s), not after the call's timeout.
//
// A tool named in [Input].Approve waits in the workflow until someone
// answers [Approve]: for days if need be, costing nothing while it waits.
// [Config].Approve is a worker's own policy, such as rules, asked before
// each call runs; [Config].System is the system prompt of runs that bring
// none.
//
// Every run keeps its events, which [Stream] reads with a query, not
// recorded in the history: the answer's text and the model's thinking, the
// tool calls with their results and durations, and the compactions. While
// a caller watches (Stream holds a lease, or [Input].Stream is set), the
// model activity signals the text to the workflow in batches at most
// [StreamInterval] apart, as it streams; otherwise a turn's text comes
// whole when the turn ends, and nothing is signalled. A summary call's
// text is not streamed.
//
// A model turn's input holds only the messages that are new since the
// run's last request, and names that request ([Prefix]); the worker reads
// that request's messages from the workflow with a query. So the history
// grows by what is new, not by the conversation, each turn.
//
// A run continues as new between two turns when Temporal suggests it (or
// after [Input].TurnsPerRun turns, if set), carrying the conversation over,
// so that its workflow history stays bounded. The
// [DataConverter] compresses payloads, and moves any that are still large
// into a [BlobStore] shared by the workers and clients, so that Temporal's
// 2 MB payload limit caps neither a conversation nor a tool input. A
// worker that serves histories of many MiB should raise
// worker.Options.DeadlockDetectionTimeout above its 1 s default: decoding
// them is part of the workflow task.
//
// # Why a separate module
//
// The Temporal server and SDK are large dependencies. This package lives in
// its own Go module, so that users of the core packages and the plain build
// of the agentloop CLI never download or compile them; it requires the
// Temporal SDK, not the server. The durable mode of the CLI is the module
// in cmd/agentloop: the same command, through internal/cli's hook, with
// worker, approve, deny, server and --temporal. The tests on a real
// Temporal server are the module in servertest.
package durable
