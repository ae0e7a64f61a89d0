package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// DefaultMaxTokens is sent when Request.MaxTokens is zero.

// cacheControl is the breakpoint Request.Cache places.
const cacheControl = `"cache_control":{"type":"ephemeral"}`

// built is a Request in the SDK's terms, shared by Stream and CountTokens.
type built struct {
	messages   []anthropic.MessageParam
	system     []anthropic.TextBlockParam
	tools      []json.RawMessage
	toolChoice anthropic.ToolChoiceUnionParam
	thinking   anthropic.ThinkingConfigParamUnion
}

// build converts the parts of r that every endpoint takes. Messages and
// tools go through param.Override as their own wire JSON: Message already
// marshals to the API's shape, and a second conversion into the SDK's
// union types would be slower and could drop block types the SDK does not
// know yet.
func build(r Request) (built, error) {
	var b built
	if r.Model == "" {
		return b, errors.New("llm: Request.Model is empty")
	}
	for i, m := range r.Messages {
		raw, err := marshalMessage(m, r.Cache && i == len(r.Messages)-1)
		if err != nil {
			return b, fmt.Errorf("llm: message %d: %w", i, err)
		}
		b.messages = append(b.messages, param.Override[anthropic.MessageParam](json.RawMessage(raw)))
	}
	if r.System != "" {
		sys := anthropic.TextBlockParam{Text: r.System}
		if r.Cache {
			sys.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		b.system = []anthropic.TextBlockParam{sys}
	}
	for i, t := range r.Tools {
		raw, err := marshalTool(t, r.Cache && i == len(r.Tools)-1)
		if err != nil {
			return b, fmt.Errorf("llm: tool %q: %w", t.Name, err)
		}
		b.tools = append(b.tools, raw)
	}
	if tc := r.ToolChoice; tc != nil {
		var dp param.Opt[bool]
		if tc.DisableParallel {
			dp = param.NewOpt(true)
		}
		switch tc.Type {
		case "", "auto":
			b.toolChoice.OfAuto = &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: dp}
		case "any":
			b.toolChoice.OfAny = &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: dp}
		case "tool":
			b.toolChoice.OfTool = &anthropic.ToolChoiceToolParam{Name: tc.Name, DisableParallelToolUse: dp}
		case "none":
			b.toolChoice.OfNone = &anthropic.ToolChoiceNoneParam{}
		default:
			raw, _ := json.Marshal(map[string]any{"type": tc.Type})
			b.toolChoice = param.Override[anthropic.ToolChoiceUnionParam](json.RawMessage(raw))
		}
	}
	if th := r.Thinking; th != nil {
		switch {
		case th.Adaptive:
			b.thinking.OfAdaptive = &anthropic.ThinkingConfigAdaptiveParam{}
		case th.BudgetTokens > 0:
			b.thinking.OfEnabled = &anthropic.ThinkingConfigEnabledParam{BudgetTokens: int64(th.BudgetTokens)}
		}
	}
	return b, nil
}

// messageParams builds the body of a Messages API call. Only fields the
// caller set are present, so no sampling parameter is sent unless asked
// for: API version 2026-10-21 rejects temperature, top_p and top_k.
func messageParams(r Request) (anthropic.MessageNewParams, error) {
	b, err := build(r)
	if err != nil {
		return anthropic.MessageNewParams{}, err
	}
	p := anthropic.MessageNewParams{
		Model:         anthropic.Model(r.Model),
		MaxTokens:     int64(r.MaxTokens),
		Messages:      b.messages,
		System:        b.system,
		ToolChoice:    b.toolChoice,
		Thinking:      b.thinking,
		StopSequences: r.StopSequences,
	}
	if p.MaxTokens <= 0 {
		p.MaxTokens = DefaultMaxTokens
	}
	for _, t := range b.tools {
		p.Tools = append(p.Tools, param.Override[anthropic.ToolUnionParam](t))
	}
	if r.Container != "" {
		p.Container.OfString = param.NewOpt(r.Container)
	}
	if r.UserID != "" {
		p.Metadata = anthropic.MetadataParam{UserID: param.NewOpt(r.UserID)}
	}
	extra := map[string]any{}
	if r.Temperature != nil {
		extra["temperature"] = *r.Temperature
	}
	for k, v := range r.Extra {
		extra[k] = v
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return p, nil
}

// countParams builds the body of a count_tokens call: the parts of the
// request that take up context. Extra is not sent, since most extra fields
// concern generation and count_tokens rejects unknown ones.
func countParams(r Request) (anthropic.MessageCountTokensParams, error) {
	b, err := build(r)
	if err != nil {
		return anthropic.MessageCountTokensParams{}, err
	}
	p := anthropic.MessageCountTokensParams{
		Model:      anthropic.Model(r.Model),
		Messages:   b.messages,
		ToolChoice: b.toolChoice,
		Thinking:   b.thinking,
	}
	if b.system != nil {
		p.System.OfTextBlockArray = b.system
	}
	for _, t := range b.tools {
		p.Tools = append(p.Tools, param.Override[anthropic.MessageCountTokensToolUnionParam](t))
	}
	return p, nil
}

// marshalTool writes a tool definition, with a cache breakpoint if asked.
// A tool without a schema takes no input: {"type":"object"}.
func marshalTool(t ToolSpec, cache bool) (json.RawMessage, error) {
	if t.Name == "" {
		return nil, errors.New("tool has no name")
	}
	if len(bytes.TrimSpace(t.InputSchema)) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if cache {
		raw = withCacheControl(raw)
	}
	return raw, nil
}

// marshalMessage writes m in the wire shape. With cache set, the last block
// that can carry a breakpoint gets one: thinking blocks cannot.
func marshalMessage(m Message, cache bool) ([]byte, error) {
	mark := -1
	if cache {
		for i := len(m.Content) - 1; i >= 0; i-- {
			if t := m.Content[i].BlockType(); t != "thinking" && t != "redacted_thinking" {
				mark = i
				break
			}
		}
	}
	var buf bytes.Buffer
	buf.WriteString(`{"role":`)
	role, _ := json.Marshal(m.Role)
	buf.Write(role)
	buf.WriteString(`,"content":[`)
	for i, blk := range m.Content {
		if blk == nil {
			return nil, fmt.Errorf("content block %d is nil", i)
		}
		raw, err := json.Marshal(blk)
		if err != nil {
			return nil, err
		}
		if i == mark {
			raw = withCacheControl(raw)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw)
	}
	buf.WriteString("]}")
	return buf.Bytes(), nil
}

// withCacheControl adds a cache breakpoint to the JSON object obj, unless
// it has one already.
func withCacheControl(obj []byte) []byte {
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[len(obj)-1] != '}' {
		return obj
	}
	var has struct {
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(obj, &has) != nil || has.CacheControl != nil {
		return obj
	}
	out := make([]byte, 0, len(obj)+len(cacheControl)+1)
	out = append(out, obj[:len(obj)-1]...)
	if len(bytes.TrimSpace(obj[1:len(obj)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, cacheControl...)
	return append(out, '}')
}
