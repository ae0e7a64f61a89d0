package apirules

// CompactionBlock is the type of the block server compaction writes (kept
// as an llm.RawBlock, and sent back unchanged). It stands in for the
// messages it summarises: the API drops every block before it from the
// prompt. An on-demand compaction (compaction: {"type": "summarize"})
// returns it alone, in an assistant message that later requests send
// first, so a conversation may open with that message instead of a user
// message.
const CompactionBlock = "compaction"
