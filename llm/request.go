package llm

import "encoding/json"

// A Request is one Messages API call. Only fields the caller set are sent.
// Anything else the API takes (stop_sequences, metadata, service_tier, a
// temperature for the models that still accept one) goes in Extra.
type Request struct {
	// Model is the model name, for example "claude-sonnet-5-5". Required.
	Model string
	// MaxTokens caps the output. Zero means [DefaultMaxTokens].
	MaxTokens int
	// System is the system prompt. Empty means none.
	System string
	// Messages is the conversation, starting with a user message.
	Messages []Message
	// Tools are the client tools the model may call.
	Tools []ToolSpec
	// ToolChoice constrains tool use. Nil means the API's default (auto).
	ToolChoice *ToolChoice
	// Thinking turns on extended thinking. Nil means off.
	Thinking *ThinkingConfig
	// Cache puts cache_control breakpoints on the last tool, the system
	// prompt and the last message, so that each call of a loop reads the
	// previous call's prefix from the prompt cache.
	Cache bool
	// Container is sent as container: the id of a code execution container
	// to reuse, as the previous turn's [MessageDelta].Container reported.
	// Empty sends none. count_tokens does not take it.
	Container string
	// Extra holds top-level fields to send as they are, so that new API
	// features need no release of this package. It overrides any field
	// above with the same JSON name.
	Extra map[string]any
}

// ToolSpec describes a client tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolChoice constrains which tool the model calls.
type ToolChoice struct {
	// Type is "auto", "any", "tool" or "none".
	Type string
	// Name is the tool to call when Type is "tool".
	Name string
}

// ThinkingConfig configures extended thinking.
type ThinkingConfig struct {
	// BudgetTokens is the thinking budget. Zero with Adaptive false means
	// thinking is off.
	BudgetTokens int
	// Adaptive lets the model decide how much to think; BudgetTokens is
	// then ignored.
	Adaptive bool
}
