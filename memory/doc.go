// Package memory is the conversation history of the agent loop: the seed's
// context.py. A [History] holds the messages in llm's own types, keeps them
// within the Messages API's structural rules, counts their tokens, compacts
// them when they outgrow the context window, and saves them as JSONL.
//
// The rules matter because one broken history fails every later request: a
// tool_use left without its tool_result after a cancel or a crash makes the
// API answer 400 forever. [History.Repair] fixes such damage (an unanswered
// call gets a synthetic is_error result, "not executed: interrupted"), and
// [History.Validate] lists whatever breaks a rule.
//
// Token counts are exact where the API has measured them: the usage of the
// last turn covers everything sent so far. Only what was added since is
// estimated, at a characters-per-token ratio learned from the API's own
// counts. [History.Compact] shrinks the history in escalating steps (clear
// old tool results, summarise with a model call, hard cut), always between
// complete turns.
//
// One turn of an agent loop uses it like this:
//
//	h := memory.New(memory.Config{Model: model})
//	h.SetPrefix(system, tools)
//	h.AppendUserText(task)
//	for {
//		h.Repair()
//		if h.NeedsCompaction() {
//			if _, err := h.Compact(ctx, client); err != nil {
//				return err
//			}
//		}
//		msg, usage, err := turn(ctx, h.Messages()) // stream one model turn
//		if memory.IsPromptTooLong(err) {
//			h.MarkOverflow(err) // then compact and retry the turn once
//			continue
//		}
//		h.AppendAssistant(msg, usage)
//		if !hasToolUse(msg) {
//			break
//		}
//		h.AppendToolResults(run(ctx, msg))
//	}
//	usd, _ := h.Cost()
package memory
