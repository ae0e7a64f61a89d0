package anthropictest

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// A Request is one recorded POST /v1/messages or, as Server.CountTokens
// sees it, POST /v1/messages/count_tokens.
type Request struct {
	// N is the request's position in arrival order, starting at 1;
	// count_tokens requests are numbered on their own.
	N int
	// Method, Path and Query are from the request line; Query is the raw
	// query, such as "beta=true".
	Method, Path, Query string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the request body, exactly as sent.
	Body []byte
	// Platform is "bedrock" or "vertex" for a request on that platform's
	// route (platform.go), whose model is the one in Path; empty for the
	// Anthropic API's.
	Platform string

	urlModel  string // a platform route's model
	urlStream bool   // a platform route streams

	set    *settings // the checks' view of Body (strict.go)
	setErr error
	held   *held // the thread the request continues (thread.go)
}

// Params decodes the body's main fields.
func (r *Request) Params() (*Params, error) {
	var w struct {
		Params
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		ContextManagement *contextManagement `json:"context_management"`
	}
	if err := json.Unmarshal(r.Body, &w); err != nil {
		return nil, err
	}
	p := w.Params
	p.Model, p.Stream = cmp.Or(r.urlModel, p.Model), p.Stream || r.urlStream
	for _, m := range w.Messages {
		content, isString, err := decodeContent(m.Content)
		if err != nil {
			return nil, err
		}
		p.Messages = append(p.Messages, Message{Role: m.Role, Content: content, StringContent: isString, Text: textOf(content)})
	}
	msgs := p.Messages
	if r.held != nil {
		msgs = append(slices.Clone(r.held.messages), msgs...)
	}
	p.Prompt = prompt(msgs)
	p.CompactionTrigger = compactionTrigger(w.ContextManagement)
	return &p, nil
}

// Messages returns the body's messages, or nil if the body does not decode
// (use Params to see why).
func (r *Request) Messages() []Message {
	p, err := r.Params()
	if err != nil {
		return nil
	}
	return p.Messages
}

// ToolResults returns the tool_result blocks of the last message, which
// answer the previous turn's tool calls.
func (r *Request) ToolResults() []Block {
	msgs := r.Messages()
	if len(msgs) == 0 {
		return nil
	}
	var out []Block
	for _, b := range msgs[len(msgs)-1].Content {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// Params holds the main fields of a Messages API request body. Fields this
// package does not model stay in the body; json.Unmarshal(r.Body, &v)
// decodes them.
type Params struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	// System is the system prompt as sent: a string or an array of text
	// blocks.
	System   json.RawMessage `json:"system,omitempty"`
	Messages []Message       `json:"-"`
	// Prompt is what the model reads of Messages: as the API does, it
	// drops every block before the last compaction block, which then opens
	// the prompt in its assistant message. For a request that continues a
	// thread (thread.go), the messages the server holds come first.
	Prompt []Message `json:"-"`
	// CompactionTrigger is the input tokens at which the request's
	// compact_20260112 edit of context_management compacts (150,000 if it
	// gives no trigger), 0 if the request has no such edit.
	CompactionTrigger int `json:"-"`
	// Tools, ToolChoice and Thinking are kept as sent.
	Tools      []json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage   `json:"tool_choice,omitempty"`
	Thinking   json.RawMessage   `json:"thinking,omitempty"`
}

// A Message is one message of a request.
type Message struct {
	// Role is "user" or "assistant".
	Role string `json:"role"`
	// Content holds the message's blocks. A string content is decoded as
	// one text block (none if the string is empty).
	Content []Block `json:"content"`
	// StringContent reports that the content was sent as a plain string.
	StringContent bool `json:"-"`
	// Text is the concatenated text of the message's text blocks.
	Text string `json:"-"`
}

// textOf returns the concatenated text of the text blocks of bs.
func textOf(bs []Block) string {
	var b strings.Builder
	for _, c := range bs {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// decodeContent decodes a message's or tool result's content: a string,
// as one text block (none if empty), or an array of blocks.
func decodeContent(raw json.RawMessage) (blocks []Block, isString bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s == "" {
			return nil, true, err
		}
		return []Block{{Type: "text", Text: s}}, true, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, false, err
	}
	for _, data := range raws {
		var w struct {
			Block
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, false, err
		}
		b := w.Block
		b.Raw = data
		if b.Type == "tool_result" {
			if b.Content, b.StringContent, err = decodeContent(w.Content); err != nil {
				return nil, false, err
			}
		}
		blocks = append(blocks, b)
	}
	return blocks, false, nil
}

// A Block is one content block of a message. Only the fields of its Type
// are set; Raw holds the block exactly as sent.
type Block struct {
	// Type is the block type, such as "text" or "tool_use".
	Type string `json:"type"`
	// Text is set for text blocks.
	Text string `json:"text,omitempty"`
	// ID, Name and Input are set for tool_use blocks.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content, IsError and StringContent are set for
	// tool_result blocks; a string content is decoded as one text block.
	ToolUseID     string  `json:"tool_use_id,omitempty"`
	Content       []Block `json:"content,omitempty"`
	IsError       bool    `json:"is_error,omitempty"`
	StringContent bool    `json:"-"`
	// Thinking and Signature are set for thinking blocks, Data for
	// redacted_thinking blocks.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	// Raw is the block's JSON as sent.
	Raw json.RawMessage `json:"-"`
}
