package llm

import (
	"fmt"

	"github.com/agentloop/agentloop/internal/apirules"
)

// checkTurn checks the two rules of a Messages call that are not a
// model's settings, so that breaking them fails here, naming what is
// wrong, instead of as a 400:
//
//   - Messages may end with an assistant turn for the model to continue (a
//     prefill) only on a model whose [ModelInfo].Prefill is set, and with
//     thinking off. The API's
//     own paused turn sent back is no prefill: one that holds a server
//     tool's blocks (stop_reason pause_turn) or a compaction block
//     (stop_reason compaction), and a [Request].Summarize call, which
//     summarises the messages rather than continuing them (the compaction
//     docs send one after an assistant reply, to claude-opus-5-5).
//   - Extra may not hold temperature, top_p or top_k: API version
//     2026-10-21, the one this package's SDK sends, removed them for every
//     model, so that even a default value is a 400.
//
// count_tokens is not checked: Extra is not sent to it, and the docs do not
// say that it refuses a history ending with an assistant turn, which
// memory counts after every reply.
func checkTurn(r Request) error {
	for _, k := range apirules.SamplingParams {
		if _, ok := r.Extra[k]; ok {
			return fmt.Errorf("llm: Request.Extra[%q]: API version 2026-10-21, which this package sends, takes no temperature, top_p or top_k on any model: leave it out, and steer the model in the prompt", k)
		}
	}
	n := len(r.Messages)
	if n == 0 || r.Messages[n-1].Role != Assistant || r.Summarize != nil {
		return nil
	}
	info, known := LookupModel(r.Model)
	thinking := r.Thinking != nil && (r.Thinking.Adaptive || r.Thinking.BudgetTokens > 0)
	if info.Prefill && !thinking {
		return nil
	}
	// The API merges consecutive messages of one role into one turn.
	for i := n - 1; i >= 0 && r.Messages[i].Role == Assistant; i-- {
		for _, b := range r.Messages[i].Content {
			if b != nil && apirules.Continues(b.blockType()) {
				return nil
			}
		}
	}
	if info.Prefill { // "Claude Haiku 4.5 accepts one when thinking is off" (haiku-5-5/migration-guide)
		return fmt.Errorf("llm: %s continues a final assistant message (a prefill) only with thinking off", r.Model)
	}
	unknown := map[bool]string{false: " (a model llm.Models does not know gets the current models' rules)"}[known]
	return fmt.Errorf("llm: %s does not continue a final assistant message (a prefill)%s: end Messages with a user turn, and ask there for what the prefill was for", r.Model, unknown)
}
