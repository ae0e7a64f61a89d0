package llm

import (
	"cmp"
	"encoding/json"
)

// An Event is one step of a streamed model turn: one of the exported types
// below, or an unexported one that only an [Assembler] needs. Switch on the
// events you show, and give every event to an Assembler. A turn is
// MessageStart, then each content block's deltas (a tool use's after its
// ToolUseStart) and BlockStop, then MessageDelta and MessageStop. Index is
// the block's position in the message content.
type Event interface{ isEvent() }

// MessageStart opens a turn. Container is as in [MessageDelta].
type MessageStart struct {
	ID, Model string
	Usage     Usage
	Container string
}

// TextDelta appends Text to the text block at Index, and opens it if
// Index has no block: a block's start arrives as its first delta, its Text
// usually empty. A reader 4 KiB behind the stream gets those read joined.
type TextDelta struct {
	Index int
	Text  string
}

// ThinkingDelta appends to the thinking block at Index, and opens it as
// TextDelta does.
type ThinkingDelta struct {
	Index    int
	Thinking string
}

// signatureDelta carries a thinking block's signature, or a compaction
// block's.
type signatureDelta struct {
	Index     int
	Signature string
}

// ToolUseStart opens a client tool call. Input is the start's own: the
// placeholder {}, or the whole input of a call sent with no deltas
// (programmatic tool calling). Caller and ToolsetName are as in [ToolUse].
type ToolUseStart struct {
	Index         int
	ID, Name      string
	Input, Caller json.RawMessage
	ToolsetName   string
}

// ToolInputDelta carries a fragment of the JSON input of the tool_use or
// server_tool_use block at Index, split anywhere, even inside an escape:
// concatenate them and parse only at BlockStop.
type ToolInputDelta struct {
	Index       int
	PartialJSON string
}

// citationDelta adds one citation, as raw JSON, to the text block at
// Index. rawStart opens any other block, to be sent back as it is; rawDelta
// is a delta of a type this package does not model, such as
// compaction_delta, Raw the whole delta object.
type citationDelta struct {
	Index    int
	Citation json.RawMessage
}
type rawStart struct {
	Index int
	Block Block
}
type rawDelta struct {
	Index int
	Raw   json.RawMessage
}

// BlockStop closes the block at Index: a tool_use's input is complete.
type BlockStop struct{ Index int }

// MessageDelta carries the stop reason. Usage is cumulative for the turn,
// MessageStart's included. Container is the id of the code execution
// container the turn ran code in, or empty; the next request must send it
// back as [Request].Container, or programmatic tool calling cannot go on.
type MessageDelta struct {
	StopReason StopReason
	Usage      Usage
	Container  string
}

// MessageStop ends a turn; a stream that ends without it is an error.
type MessageStop struct{}

func (MessageStart) isEvent()   {}
func (TextDelta) isEvent()      {}
func (ThinkingDelta) isEvent()  {}
func (signatureDelta) isEvent() {}
func (ToolUseStart) isEvent()   {}
func (ToolInputDelta) isEvent() {}
func (citationDelta) isEvent()  {}
func (rawStart) isEvent()       {}
func (rawDelta) isEvent()       {}
func (BlockStop) isEvent()      {}
func (MessageDelta) isEvent()   {}
func (MessageStop) isEvent()    {}

// StopReason says why the model stopped.
type StopReason string

// The stop reasons the API documents. Treat an unknown one as [EndTurn].
const (
	EndTurn                    StopReason = "end_turn"
	MaxTokens                  StopReason = "max_tokens"
	StopSequence               StopReason = "stop_sequence"
	ToolUseStop                StopReason = "tool_use"
	PauseTurn                  StopReason = "pause_turn"
	CompactionStop             StopReason = "compaction" // server compaction paused, or a Summarize reply
	Refusal                    StopReason = "refusal"
	ModelContextWindowExceeded StopReason = "model_context_window_exceeded"
)

// Usage counts the tokens of one turn, or a sum of turns.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens,omitempty"`
	// Compaction is what the server's compaction during the turn used,
	// billed on top of the fields above, which measure the compacted
	// context (the API's usage.iterations). Nil when it did not compact.
	Compaction *Usage `json:"compaction,omitempty"`
	// ServerToolUse counts the server tools' uses, web searches priced
	// apart ([WebSearchPrice]).
	ServerToolUse ServerToolUse `json:"server_tool_use,omitzero"`
}

// Add returns the field-by-field sum of u and v.
func (u Usage) Add(v Usage) Usage {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheCreationInputTokens += v.CacheCreationInputTokens
	u.CacheReadInputTokens += v.CacheReadInputTokens
	u.ServerToolUse.WebSearchRequests += v.ServerToolUse.WebSearchRequests
	u.ServerToolUse.WebFetchRequests += v.ServerToolUse.WebFetchRequests
	if c, d := u.Compaction, v.Compaction; c != nil || d != nil {
		u.Compaction = new(cmp.Or(c, &Usage{}).Add(*cmp.Or(d, &Usage{})))
	}
	return u
}

// Context returns every input token, cached or not, plus the output: after
// a turn, the exact size of the conversation so far.
func (u Usage) Context() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
}
