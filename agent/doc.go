// Package agent is the orchestrator of agentloop: the think → act → observe
// loop of the seed's agent.py, tying together [llm], [tool] and [memory].
//
// An Agent streams a model turn, starts each tool call the moment the model
// has finished writing it (while the rest of the turn still streams),
// collects the results into one user message, and asks again, until the
// model ends its turn or a limit is hit:
//
//	a, err := agent.New(agent.Config{
//		Model: llm.New(llm.Config{APIKey: key}),
//		Tools: []*tool.Tool{weather},
//	})
//	for ev, err := range a.Stream(ctx, "What is 3 + 5?") {
//		switch ev := ev.(type) {
//		case agent.TextDelta:
//			fmt.Print(ev.Text)
//		case agent.Retry:
//			// ev.Discard: throw away what this turn printed so far.
//		case agent.Done:
//			fmt.Println("\n", ev.Result.State, err)
//		}
//	}
//
// [Agent.Run] is the same loop without the events. The whole loop is in
// loop.go, meant to be read in one sitting.
//
// # Stop reasons
//
// end_turn and stop_sequence finish the run. tool_use acts. pause_turn
// sends the turn back as it is and goes on. refusal ends the run in state
// [Refused] with the history rolled back, so that the refused exchange is
// not sent again. model_context_window_exceeded, like a 400 "prompt is too
// long", compacts the history once and asks again. An unknown stop reason
// is end_turn, with a log line.
//
// max_tokens cuts only the last block of a turn. Cut text ends the run in
// state [Truncated], the text kept. A cut tool_use is never run: it keeps
// input {} and gets an is_error result saying it was cut off, and the loop
// goes on, so that the model writes the call again, shorter, where stopping
// would lose the turn's work.
//
// # Failures and cancellation
//
// A turn whose stream fails transiently after output arrived (an
// overloaded error event, a dropped connection) is retried whole, up to
// [Config.MaxAttempts]; a [Retry] event with Discard set tells the caller
// to throw away what it showed. [Agent.Stream] says what a failed, refused
// or cancelled run leaves in the history.
package agent
