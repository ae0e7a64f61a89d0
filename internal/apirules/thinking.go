package apirules

import "strings"

// Bound thinking blocks. On the current models (Claude Opus 5.5, Fable 5.1,
// Sonnet 5.5, Haiku 5.5 and later), a thinking or redacted_thinking block
// sent back in a request is checked twice, by its signature
// (build-with-claude/preserved-thinking, models/fable-5-1/whats-new-fable-5-1):
//
//   - Its prefix: the system prompt, the tools, and every block before it
//     other than thinking must be exactly what the request that produced it
//     held, moved cache_control markers aside. If not, that block and every
//     later one are invalid, and the request is a 400, "The block is bound
//     to a different conversation". Removing a leading run of thinking
//     blocks (the oldest first) keeps the rest valid; removing one from
//     anywhere else invalidates every later one.
//   - Its model: a model reads its own blocks and those of a fixed set of
//     others ([Reads]); the API drops a block it cannot read, silently.
//
// So each history rewrite keeps or drops thinking as follows, on a model
// that binds its blocks (on others thinking is kept: older models need the
// last turn's thinking kept in a tool loop):
//
//   - Compaction (clearing old tool results, a summary, a hard cut)
//     changes the prefix of every later block: it drops all thinking from
//     the first message it changed on. Server-side compaction and context
//     editing do not count as changes.
//   - Repair changes messages from the first one it fixes: it drops all
//     thinking from there on, as compaction does.
//   - A refusal's take-back restores the history to exactly what it was
//     before the run, prefix included: it keeps every block.
//   - A changed system prompt or tool list changes every block's prefix:
//     all thinking goes.
//   - Resuming a session with another model drops all thinking from the
//     first block the new model cannot read on: the unreadable blocks
//     would be dropped by the API anyway, and the later ones would then
//     follow a gap.

// IsThinking reports whether a block of type typ is thinking, the blocks
// bound to their prefix and model.
func IsThinking(typ string) bool { return typ == "thinking" || typ == "redacted_thinking" }

// Reads reports whether model, one that binds its thinking blocks, can use
// a block that producer wrote, by the docs' tables of model switches
// (models/opus-5-5/migration-guide, models/sonnet-5-5/migration-guide,
// models/fable-5-1/whats-new-fable-5-1). A model the tables do not name
// reads its own blocks only. Dated names are compared without the date.
func Reads(model, producer string) bool {
	model, producer = Undated(model), Undated(producer)
	if model == producer {
		return true
	}
	later := map[string]bool{ // produced by models newer than the readers below
		"claude-sonnet-5-5": true, "claude-haiku-5-5": true, "claude-fable-5-2": true, "claude-mythos-5-2": true,
	}
	fable := strings.HasPrefix(producer, "claude-fable") || strings.HasPrefix(producer, "claude-mythos")
	switch model {
	case "claude-fable-5-1", "claude-mythos-5-1":
		// Earlier models' blocks, Opus 5.5's, and each other's.
		return !later[producer]
	case "claude-opus-5-5":
		// Opus 5 and earlier Opus, Sonnet and Haiku models.
		return !fable && !later[producer]
	case "claude-sonnet-5-5":
		// Sonnet 5, Opus 4.8, Haiku 4.5 and earlier; not Opus 5 or later.
		return !fable && !later[producer] && producer != "claude-opus-5" && producer != "claude-opus-5-5"
	case "claude-fable-5-2", "claude-mythos-5-2":
		return producer == "claude-fable-5-2" || producer == "claude-mythos-5-2"
	}
	return false
}

// Undated returns model without a -YYYYMMDD date suffix, such as
// "claude-haiku-4-5" for "claude-haiku-4-5-20251001", and without a cloud
// platform's decorations: Amazon Bedrock's "anthropic." and inference
// profile prefix and "-v1:0" suffix ("us.anthropic.claude-haiku-4-5-20251001-v1:0"),
// Vertex AI's "@20251001", so that a platform's id names the same model.
func Undated(model string) string {
	if i := strings.Index(model, "anthropic."); i >= 0 && !strings.ContainsAny(model[:i], "/:") {
		model = model[i+len("anthropic."):]
		if j := strings.LastIndex(model, "-v"); j > 0 && strings.Trim(model[j+2:], "0123456789:") == "" {
			model = model[:j]
		}
	}
	model, _, _ = strings.Cut(model, "@")
	if i := strings.LastIndexByte(model, '-'); i >= 0 && len(model)-i == 9 && strings.Trim(model[i+1:], "0123456789") == "" {
		return model[:i]
	}
	return model
}
