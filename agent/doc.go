// Package agent is the orchestrator of agentloop: the think → act → observe
// loop of the seed's agent.py, tying together [llm], [tool] and [memory].
//
// An Agent streams a model turn, starts each tool call the moment the model
// has finished writing it (while the rest of the turn still streams),
// collects the results into one user message, and asks again, until the
// model ends its turn or a limit is hit. [Agent.Stream] yields the run's
// events as they happen (see its Example); [Agent.Run] is the same loop
// without them. The whole loop is in loop.go, meant to be read in one
// sitting.
//
// # Stop reasons
//
// end_turn and stop_sequence finish the run; tool_use acts; pause_turn
// sends the turn back as it is. refusal ends the run [Refused], the history
// rolled back so that the refused exchange is not sent again.
// model_context_window_exceeded, like a 400 "prompt is too long", compacts
// the history once and asks again. max_tokens cuts only the last block:
// cut text ends the run [Truncated]; a cut tool_use is never run but gets an
// is_error result, so that the model writes the call again, shorter, where
// stopping would lose the turn's work.
//
// A turn whose stream fails transiently after output arrived is retried,
// up to [Config.MaxAttempts], with a [Retry] event telling the caller to
// discard what it showed. The tool calls the failed turn already ran are
// not discarded: they run to their end and stay in the history, with their
// results, before the retry, so that the model knows what it did.
//
// # Seams
//
// The loop starts no goroutine and reads no clock itself: tool calls and
// time come from a [Runtime] (by default, the Registry on goroutines and
// the system clock), turns from the [llm.Model]. Package durable gives both
// its own, to run this same loop as a Temporal workflow. Capabilities the
// loop does not need are built on these seams and the hooks: package typed
// holds a run's answer to a JSON schema with a Middleware, a BeforeStop
// hook and an [Observer].
package agent
