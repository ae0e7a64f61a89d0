package telemetry

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentloop/agentloop/llm"
)

// Span events for what the conventions have no name for. A retry and a
// repair go on the span of the operation that retried or repaired: the
// run's invoke_agent span, or the compaction span around a summary call.
const (
	// EventRetry: a model call failed and is sent again.
	EventRetry = "agentloop.retry"
	// EventDiscarded: a failed turn's partial output was thrown away.
	EventDiscarded = "agentloop.turn.discarded"
	// EventRepaired: the history broke an API rule and was repaired.
	EventRepaired = "agentloop.history.repaired"
	// EventNotRun: the loop answered a tool call itself without running
	// it (denied, repeated, cut off, invalid input, unknown tool).
	EventNotRun = "agentloop.tool.not_run"
)

// Attributes for what the conventions have no name for.
const (
	// Attempt is the number of the attempt about to start: 2 for the first
	// retry.
	Attempt = attribute.Key("agentloop.attempt")
	// RetryWait is the wait before the retry, in seconds.
	RetryWait = attribute.Key("agentloop.retry.wait")
	// Repairs lists what a repair fixed.
	Repairs = attribute.Key("agentloop.history.repairs")
	// State is how a run ended, as agent.State names it.
	State = attribute.Key("agentloop.state")
	// Iterations counts a run's model calls.
	Iterations = attribute.Key("agentloop.iterations")
	// TokensBefore and TokensAfter are a compaction's estimates.
	TokensBefore = attribute.Key("agentloop.compaction.tokens_before")
	TokensAfter  = attribute.Key("agentloop.compaction.tokens_after")
	// Steps lists what a compaction did.
	Steps = attribute.Key("agentloop.compaction.steps")
)

// jsonValue returns raw JSON as a structured attribute value: objects
// become maps, with their keys sorted so that equal JSON gives equal
// values, and arrays slices. Bytes that are not JSON are kept as a string.
func jsonValue(raw []byte) attribute.Value {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return attribute.StringValue(string(raw))
	}
	return value(v)
}

// textValue returns a tool's text output as an attribute value: structured
// when it is a JSON object or array, as the conventions prefer, else the
// string.
func textValue(s string) attribute.Value {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		if json.Valid([]byte(t)) {
			return jsonValue([]byte(t))
		}
	}
	return attribute.StringValue(s)
}

// mapValue returns the pairs as a map value, leaving out empty values.
func mapValue(kvs ...attribute.KeyValue) attribute.Value {
	return attribute.MapValue(slices.DeleteFunc(kvs, func(kv attribute.KeyValue) bool {
		return kv.Value.Type() == attribute.EMPTY || kv.Value.Type() == attribute.STRING && kv.Value.AsString() == ""
	})...)
}

// value converts what encoding/json decodes into an attribute value.
func value(v any) attribute.Value {
	switch v := v.(type) {
	case string:
		return attribute.StringValue(v)
	case bool:
		return attribute.BoolValue(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return attribute.Int64Value(n)
		}
		f, _ := v.Float64()
		return attribute.Float64Value(f)
	case []any:
		vs := make([]attribute.Value, len(v))
		for i, e := range v {
			vs[i] = value(e)
		}
		return attribute.SliceValue(vs...)
	case map[string]any:
		kvs := make([]attribute.KeyValue, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(k), Value: value(v[k])})
		}
		return attribute.MapValue(kvs...)
	}
	return attribute.Value{} // null
}

// message is one message of the conventions' input and output message
// schemas. finish, the stop reason, belongs to output messages only.
func message(role, finish string, parts ...attribute.Value) attribute.Value {
	return mapValue(attribute.String("role", role), attribute.KeyValue{Key: "parts", Value: attribute.SliceValue(parts...)},
		attribute.String("finish_reason", finish))
}

// messages returns msgs as the conventions' messages; finish goes on the
// last, for an output message.
func messages(finish string, msgs ...llm.Message) attribute.Value {
	vs := make([]attribute.Value, len(msgs))
	for i, m := range msgs {
		vs[i] = message(string(m.Role), finish, parts(m.Content)...)
	}
	return attribute.SliceValue(vs...)
}

// part is one part of a message: its type, then its fields.
func part(typ string, kvs ...attribute.KeyValue) attribute.Value {
	return mapValue(append([]attribute.KeyValue{attribute.String("type", typ)}, kvs...)...)
}

// textPart is a text part.
func textPart(text string) attribute.Value {
	return part("text", attribute.String("content", text))
}

// parts returns the conventions' parts of the blocks. A block their
// schemas have no part for is its type alone.
func parts(blocks []llm.Block) []attribute.Value {
	parts := make([]attribute.Value, len(blocks))
	for i, b := range blocks {
		switch b := b.(type) {
		case llm.Text:
			parts[i] = textPart(b.Text)
		case llm.Thinking:
			parts[i] = part("reasoning", attribute.String("content", b.Thinking))
		case llm.RedactedThinking:
			parts[i] = part("redacted_thinking")
		case llm.ToolUse:
			args := []byte(b.Input)
			if len(args) == 0 {
				args = []byte("{}") // as the API gets it
			}
			parts[i] = part("tool_call", attribute.String("id", b.ID), attribute.String("name", b.Name),
				attribute.KeyValue{Key: "arguments", Value: jsonValue(args)})
		case llm.ToolResult:
			parts[i] = part("tool_call_response", attribute.String("id", b.ToolUseID),
				attribute.KeyValue{Key: "response", Value: textValue(llm.TextOf(b.Content))})
		case llm.Image:
			parts[i] = part("blob", attribute.String("modality", "image"),
				attribute.String("mime_type", b.MediaType), attribute.String("content", b.Data))
		case llm.RawBlock:
			parts[i] = part(b.Type)
		}
	}
	return parts
}
