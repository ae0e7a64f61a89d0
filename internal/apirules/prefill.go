package apirules

import "strings"

// A request whose messages end with an assistant turn asks the model to
// continue that turn. The caller writing its start (a prefill) is a 400 on
// Claude Opus 4.6 and later ("Prefilling assistant messages is not
// supported for this model.", platform.claude.com/docs/en/api/errors), yet
// the API's own turn sent back is how two of its stop reasons resume:
// pause_turn ("pass the paused response back as-is",
// docs/en/agents-and-tools/tool-use/server-tools) and compaction with
// pause_after_compaction (the block appended as an assistant message,
// docs/en/build-with-claude/compaction). The docs do not say how the API
// tells the two apart; the conservative reading here is that a final turn
// is a continuation only if it holds what those stop reasons leave: a
// server tool's call or result, or a compaction block.

// Continues reports whether a block of type typ, in a request's final
// assistant turn, makes the turn the API's own paused turn sent back to be
// resumed rather than a prefill.
func Continues(typ string) bool {
	switch typ {
	case CompactionBlock, "server_tool_use", "mcp_tool_use":
		return true
	}
	return typ != "tool_result" && strings.HasSuffix(typ, "_tool_result")
}

// SamplingParams are the request fields API version 2026-10-21 removed,
// on every model: a request that sends any of them, at any value, is a 400
// (docs/en/api/versioning, docs/en/api/migration-2026-10-21).
var SamplingParams = []string{"temperature", "top_p", "top_k"}
