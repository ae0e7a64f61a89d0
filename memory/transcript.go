package memory

import (
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// maxResultChars caps each tool result in a summary transcript: the
// summary needs the gist of a result, and one huge result must not crowd
// out the rest of the conversation.
const maxResultChars = 4000

// transcript renders es as plain text for the summarisation call. A plain
// transcript, unlike the messages themselves, can be sent without tool
// definitions and without the pairing rules. Tool results that compaction
// cleared are rendered from the originals it kept.
func transcript(es []entry) string {
	var b strings.Builder
	for _, e := range es {
		switch {
		case e.summary:
			b.WriteString("[earlier summary]\n")
		case e.msg.Role == llm.Assistant:
			b.WriteString("[assistant]\n")
		default:
			b.WriteString("[user]\n")
		}
		for _, blk := range e.msg.Content {
			writeBlock(&b, blk, e.original)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func writeBlock(b *strings.Builder, blk llm.Block, original map[string][]llm.Block) {
	switch blk := blk.(type) {
	case llm.Text:
		b.WriteString(blk.Text)
		b.WriteByte('\n')
	case llm.Thinking, llm.RedactedThinking:
		// Thinking is the model's scratch work, not a fact of the session.
	case llm.ToolUse:
		fmt.Fprintf(b, "[tool call %s %s: %s]\n", blk.ID, blk.Name, truncate(string(blk.Input), maxResultChars))
	case llm.ToolResult:
		content := blk.Content
		if orig, ok := original[blk.ToolUseID]; ok {
			content = orig
		}
		status := "result"
		if blk.IsError {
			status = "error"
		}
		var body strings.Builder
		for _, c := range content {
			writeBlock(&body, c, nil)
		}
		fmt.Fprintf(b, "[tool %s %s]\n%s\n", status, blk.ToolUseID, truncate(strings.TrimSpace(body.String()), maxResultChars))
	case llm.Image:
		fmt.Fprintf(b, "[image %s]\n", blk.MediaType)
	case llm.RawBlock:
		fmt.Fprintf(b, "[%s block: %s]\n", blk.Type, truncate(string(blk.JSON), 1000))
	}
}
