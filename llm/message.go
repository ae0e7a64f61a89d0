package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/agentloop/agentloop/internal/apirules"
)

// Role says who wrote a [Message].
type Role string

// The two roles the Messages API knows.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// A Message is one turn of a conversation: a role and its content blocks,
// in the API's wire shape as JSON, so that a history is sent, saved and
// loaded without a second set of types.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// A Block is one content block of a [Message]. The set of block types is
// sealed: it is one of [Text], [Thinking], [RedactedThinking], [ToolUse],
// [ToolResult], [Image] or [RawBlock]. A switch over those covers every case.
type Block interface{ blockType() string }

// Text is a text block. Citations are kept as raw JSON, to round-trip.
type Text struct {
	Text      string            `json:"text"`
	Citations []json.RawMessage `json:"citations,omitempty"`
}

// Thinking is an extended-thinking block, with the signature without which
// the API rejects it.
type Thinking struct {
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

// RedactedThinking is thinking the API encrypted, sent back as received.
type RedactedThinking struct {
	Data string `json:"data"`
}

// ToolUse is the model's request to call a client tool. Input is a JSON
// object; an empty one means {}. Caller (raw JSON: {"type":"direct"} for the
// model, or the code execution tool that made the call) and ToolsetName
// (of a toolset member) are kept only so that the block goes back as it
// came; they are empty when the API sent none. Input is shared, not copied,
// once made: don't modify its bytes.
type ToolUse struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Input       json.RawMessage `json:"input"`
	Caller      json.RawMessage `json:"caller,omitempty"`
	ToolsetName string          `json:"toolset_name,omitempty"`

	// checked is the Input an [Assembler] made and found a JSON object of
	// valid UTF-8 as it joined it. While Input is those very bytes, the
	// fact holds, and nothing reads them again (see ValidInput).
	checked json.RawMessage
}

// ValidInput reports whether Input is a JSON object, as the API requires
// (an empty one means {}; duplicate names and invalid UTF-8 are taken, as
// encoding/json takes them). An input the Assembler made is known to be
// one, and not read again: for a 5 MiB input a pass saved at every use.
func (b ToolUse) ValidInput() bool {
	if b.wellFormed() || len(bytes.TrimSpace(b.Input)) == 0 {
		return true
	}
	ok, _ := apirules.IsObject(b.Input)
	return ok
}

// wellFormed reports whether Input is the one its Assembler checked, a JSON
// object that an encoder, which mends invalid UTF-8, writes unchanged.
func (b ToolUse) wellFormed() bool {
	return len(b.Input) > 0 && len(b.checked) == len(b.Input) && &b.checked[0] == &b.Input[0]
}

// Equal reports whether b and c hold the same fields, whether or not an
// Assembler checked either's input, for go-cmp, which would not look inside.
func (b ToolUse) Equal(c ToolUse) bool {
	return b.ID == c.ID && b.Name == c.Name && bytes.Equal(b.Input, c.Input) && bytes.Equal(b.Caller, c.Caller) && b.ToolsetName == c.ToolsetName
}

// ToolResult answers the [ToolUse] whose ID is ToolUseID with [Text] and
// [Image] blocks. IsError tells the model the call failed, to correct it.
type ToolResult struct {
	ToolUseID string  `json:"tool_use_id"`
	Content   []Block `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitzero"`
}

// Image is a base64-encoded image, in a user message or a tool result.
type Image struct {
	MediaType string // for example "image/png"
	Data      string // base64, standard encoding
}

// RawBlock is any other block, such as a server tool's or a type newer than
// this package: JSON is the whole block, sent back as the same JSON value.
type RawBlock struct {
	Type string
	JSON json.RawMessage
}

func (Text) blockType() string             { return "text" }
func (Thinking) blockType() string         { return "thinking" }
func (RedactedThinking) blockType() string { return "redacted_thinking" }
func (ToolUse) blockType() string          { return "tool_use" }
func (ToolResult) blockType() string       { return "tool_result" }
func (Image) blockType() string            { return "image" }
func (b RawBlock) blockType() string       { return b.Type }

// TypeOf returns the API's "type" of b, a non-nil block: a RawBlock's Type.
func TypeOf(b Block) string { return b.blockType() }

// MarshalJSON writes the block in the API's wire shape, with its "type".
func (b Text) MarshalJSON() ([]byte, error) { return marshal(b) }

// MarshalJSON writes the block in the API's wire shape, with its "type".
func (b Thinking) MarshalJSON() ([]byte, error) { return marshal(b) }

// MarshalJSON writes the block in the API's wire shape, with its "type".
func (b RedactedThinking) MarshalJSON() ([]byte, error) { return marshal(b) }

// MarshalJSON writes the block in the API's wire shape; an empty Input as {}.
// An input its Assembler checked goes in as it is, in one copy of the exact
// size, where the encoder would copy it twice into buffers grown step by step
// (for a 5 MiB input, at each save of a session).
func (b ToolUse) MarshalJSON() ([]byte, error) {
	if in := b.Input; b.wellFormed() {
		b.Input = json.RawMessage("{}")
		out, err := marshal(b)
		// The first `"input":{}` is the key's: a quote in a string is escaped.
		if i := bytes.Index(out, []byte(`"input":{}`)); err == nil && i > 0 {
			i += len(`"input":`)
			return slices.Concat(out[:i], in, out[i+len("{}"):]), nil
		}
	}
	return marshal(b)
}

// MarshalJSON writes the block in the API's wire shape, with its "type".
func (b ToolResult) MarshalJSON() ([]byte, error) { return marshal(b) }

// MarshalJSON writes the block in the API's wire shape: a base64 source.
func (b Image) MarshalJSON() ([]byte, error) { return marshal(b) }

// MarshalJSON writes the block's JSON, checked and compacted.
func (b RawBlock) MarshalJSON() ([]byte, error) { return marshal(b) }

func marshal(v any) ([]byte, error) { return json2.Marshal(v, lenient, writeBlocks) }

// blockMarshalers write each block, "type" first, straight into the encoder
// of the whole request. Through the MarshalJSON methods, which are for
// encoding/json, a block's JSON would be copied and checked again inside
// each enclosing value: for a 5 MiB tool input, most of a request's time.
var blockMarshalers = json2.JoinMarshalers(
	typed(func(b Text) textWire { return textWire(b) }),
	typed(func(b Thinking) thinkingWire { return thinkingWire(b) }),
	typed(func(b RedactedThinking) redactedWire { return redactedWire(b) }),
	typed(func(b ToolUse) toolUseWire {
		if len(bytes.TrimSpace(b.Input)) == 0 {
			b.Input = json.RawMessage("{}")
		}
		return toolUseWire(b)
	}),
	typed(func(b ToolResult) toolResultWire { return toolResultWire(b) }),
	typed(func(b Image) (w imageSource) {
		w.Source.Type, w.Source.MediaType, w.Source.Data = "base64", b.MediaType, b.Data
		return w
	}),
	json2.MarshalToFunc(func(enc *jsontext.Encoder, b RawBlock) error {
		if err := enc.WriteValue(jsontext.Value(b.JSON)); err != nil {
			return fmt.Errorf("llm: raw %q block holds invalid JSON: %w", b.Type, err)
		}
		return nil
	}),
)

var writeBlocks = json2.WithMarshalers(blockMarshalers)

// The blocks' fields without their methods, for typed.
type (
	textWire       Text
	thinkingWire   Thinking
	redactedWire   RedactedThinking
	toolUseWire    ToolUse
	toolResultWire ToolResult
)

// typed returns the marshaler of block type B: "type", then wire(b)'s fields.
func typed[B Block, W any](wire func(B) W) *json2.Marshalers {
	return json2.MarshalToFunc(func(enc *jsontext.Encoder, b B) error {
		return json2.MarshalEncode(enc, struct {
			Type string `json:"type"`
			V    W      `json:",embed"`
		}{b.blockType(), wire(b)})
	})
}

// imageSource is the source of an image block as the API has it.
type imageSource struct {
	Source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// UnmarshalJSON reads a message in the API's wire shape; a string content
// becomes one [Text] block.
func (m *Message) UnmarshalJSON(data []byte) error {
	type wire Message // without this method
	return json.Unmarshal(data, &struct {
		*wire
		Content *content `json:"content"`
	}{(*wire)(m), (*content)(&m.Content)})
}

// UnmarshalJSON reads a tool result as [Message.UnmarshalJSON] does.
func (b *ToolResult) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &struct {
		*toolResultWire
		Content *content `json:"content"`
	}{(*toolResultWire)(b), (*content)(&b.Content)})
}

// content is the content of a message or a tool result on the wire.
type content []Block

func (c *content) UnmarshalJSON(data []byte) error {
	if data = bytes.TrimSpace(data); len(data) == 0 || string(data) == "null" {
		return nil
	}
	if data[0] == '"' {
		var s string
		err := json.Unmarshal(data, &s)
		*c = content{Text{Text: s}}
		return err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return fmt.Errorf("llm: content is neither a string nor an array: %w", err)
	}
	*c = make(content, len(raws))
	for i, r := range raws {
		var err error
		if (*c)[i], err = unmarshalBlock(r); err != nil {
			return fmt.Errorf("llm: content block %d: %w", i, err)
		}
	}
	return nil
}

// unmarshalBlock decodes one content block; other types become a
// [RawBlock] of the exact input bytes, not copied.
func unmarshalBlock(data []byte) (Block, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json2.Unmarshal(data, &head, asV1); err != nil {
		return nil, err
	}
	if head.Type == "" {
		return nil, errors.New(`llm: content block has no "type"`)
	} else if decode := decoders[head.Type]; decode != nil {
		return decode(data)
	} else if head.Type == "image" {
		var w imageSource
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, err
		}
		if w.Source.Type == "base64" {
			return Image{MediaType: w.Source.MediaType, Data: w.Source.Data}, nil
		}
		// URL and file sources are kept verbatim, as other types are.
	}
	return RawBlock{Type: head.Type, JSON: data}, nil
}

// decoders decode the block types unmarshalBlock knows but image.
var decoders = map[string]func([]byte) (Block, error){"text": decodeAs[Text], "thinking": decodeAs[Thinking],
	"redacted_thinking": decodeAs[RedactedThinking], "tool_use": decodeAs[ToolUse], "tool_result": decodeAs[ToolResult]}

// decodeAs unmarshals data into a block of type B.
func decodeAs[B Block](data []byte) (Block, error) {
	var b B
	err := json2.Unmarshal(data, &b, asV1)
	return b, err
}

// asV1 reads JSON as encoding/json does, in one pass where it takes two
// (a block start or a saved message may hold a 5 MiB tool input).
var asV1 = jsonv1.DefaultOptionsV1()

// Truncate returns s cut to about n bytes, on a UTF-8 boundary, with a note
// of the bytes cut, so that one long text cannot crowd out the rest of a
// message to the model.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… [%d more bytes]", len(s)-n)
}

// TextOf returns the concatenated text of the [Text] blocks in blocks: the
// one block's own string, not a copy, when one alone holds text, as a
// turn's answer (megabytes, maybe) most often is.
func TextOf(blocks []Block) string {
	var parts []string
	for _, blk := range blocks {
		if t, ok := blk.(Text); ok && t.Text != "" {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "")
}
