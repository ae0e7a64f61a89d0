package anthropictest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/outputformat"
)

// CheckRequest reports whether body, a Messages API request, obeys the
// API's rules. It returns nil if it does, and otherwise an error listing
// every violation, one a line, as "path: what is wrong [rule]", so that a
// test can assert that what its client sent would not come back as a 400.
//
// The request must decode ("json"), name a model and a positive max_tokens
// ("required"), and hold messages ("no-messages"). Its messages are held to
// the same rules that package memory keeps its history within: roles
// ("role", "first-user"; a mid-conversation system message where the API
// takes one, "system-placement"), content ("empty-content", "empty-text",
// "trailing-whitespace", "block-type", "block-role"), tool calls
// ("tool-use-id", "tool-input", "tool-unanswered", "tool-result-first",
// "tool-result-once", "tool-result-orphan") and thinking
// ("thinking-signature"). A body with anthropic_version is a cloud
// platform's, whose model is in the URL: it must not name one ("platform").
// An output_config.format must be a json_schema
// in the subset of JSON Schema the structured outputs page gives: its
// keywords, string formats and minItems, every object with
// additionalProperties false ("output-format"). A tool sent with
// defer_loading needs a tool search tool, and one tool at least must not be
// deferred ("tools"). Consecutive messages of one role are allowed,
// because the API merges them into one turn; the tool rules apply to the
// merged turns. On the current models, the request is also held to what
// the model takes, as the server's strict mode is: its thinking mode
// ("thinking-mode"), no forced tool choice ("tool-choice"), its effort
// levels ("effort"), no prefill ("prefill") and system messages only where
// it takes them ("system-message"); and, on any model, to no sampling
// parameters ("sampling"), as at API version 2026-10-21.
//
// A request that continues a thread of the message-threads beta
// (thread {"type":"continue","previous_message_id":…}, which it must name,
// "required"; "thread" for an unknown type) sends only the turn after the
// thread's last response, which the API holds: its messages may be none
// and need not open with a user message, and tool results in its first
// user turn are taken to answer that response.
func CheckRequest(body []byte) error {
	vs := check(body)
	if len(vs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "anthropictest: request breaks the Messages API's rules (%d):", len(vs))
	for _, v := range vs {
		fmt.Fprintf(&b, "\n\t%s: %s [%s]", v.path, v.msg, v.rule)
	}
	return errors.New(b.String())
}

// A violation is one way a request breaks a rule: the rule's name, where in
// the API's notation (such as "messages.2.content.0"), and what is wrong.
type violation struct{ rule, path, msg string }

func check(body []byte) []violation {
	r := &Request{Body: body}
	p, err := r.Params()
	if err != nil {
		return []violation{{"json", "body", "does not decode: " + err.Error()}}
	}
	var vs []violation
	set, setErr := r.settings()
	switch platform := setErr == nil && set.Version != ""; {
	case platform && p.Model != "":
		vs = append(vs, violation{"platform", "model", "on Bedrock and Vertex AI the model goes in the URL, not the body"})
	case !platform && p.Model == "":
		vs = append(vs, violation{"required", "model", "model is required"})
	}
	if p.MaxTokens <= 0 {
		vs = append(vs, violation{"required", "max_tokens", fmt.Sprintf("max_tokens must be a positive integer, got %d", p.MaxTokens)})
	}
	var th thread
	if set, err := r.settings(); err == nil {
		th = set.Thread
	}
	continued := th.Type == "continue"
	switch {
	case th.Type != "" && !continued && th.Type != "create":
		vs = append(vs, violation{"thread", "thread.type", fmt.Sprintf(msgThreadType, th.Type)})
	case continued && th.PreviousMessageID == "":
		vs = append(vs, violation{"required", "thread.previous_message_id", "thread.previous_message_id is required"})
	}
	for _, f := range checkMessages(p.Messages) {
		if !(continued && afterHeld(p.Messages, f)) {
			vs = append(vs, violation{f.rule, path(p.Messages, f), f.msg})
		}
	}
	vs = append(vs, checkTools(body)...)
	if _, _, v := modelRules(r, false); v != nil {
		vs = append(vs, *v)
	}
	if set, err := r.settings(); err == nil && set.OutputConfig.Format != nil {
		vs = append(vs, outputFormat(set.OutputConfig.Format.Type, set.OutputConfig.Format.Schema)...)
	}
	return vs
}

// outputFormat checks output_config.format: a json_schema format whose
// schema is in the subset of JSON Schema the API takes.
func outputFormat(typ string, schema any) []violation {
	if typ != "json_schema" {
		return []violation{{"output-format", "output_config.format.type", fmt.Sprintf("output_config.format.type must be \"json_schema\", not %q", typ)}}
	}
	if schema == nil {
		return []violation{{"required", "output_config.format.schema", "output_config.format.schema is required"}}
	}
	var vs []violation
	for _, p := range formatProblems(schema, "", nil) {
		vs = append(vs, violation{"output-format", "output_config.format.schema", p})
	}
	return vs
}

// formatProblems appends to out each way schema v, at JSON pointer at,
// breaks the API's rules for output_config.format: a keyword it does not
// take, an object without additionalProperties false, a string format it
// does not know, a minItems above 1, a pattern it cannot match.
func formatProblems(v any, at string, out []string) []string {
	s, ok := v.(map[string]any)
	if !ok {
		return append(out, fmt.Sprintf("%s: a schema must be a JSON object", cmp.Or(at, "/")))
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		switch k {
		case "properties", "$defs", "definitions":
			m, _ := v.(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(m)) {
				out = formatProblems(m[name], at+"/"+k+"/"+name, out)
			}
		case "items":
			out = formatProblems(v, at+"/items", out)
		case "anyOf", "allOf":
			list, _ := v.([]any)
			for i, p := range list {
				out = formatProblems(p, fmt.Sprintf("%s/%s/%d", at, k, i), out)
			}
		case "format":
			if !slices.Contains(outputformat.StringFormats, fmt.Sprint(v)) {
				out = append(out, fmt.Sprintf("%s/format: format %v is not supported (supported: %s)", at, v, strings.Join(outputformat.StringFormats, ", ")))
			}
		case "pattern":
			if outputformat.BadPattern.MatchString(fmt.Sprint(v)) {
				out = append(out, fmt.Sprintf("%s/pattern: lookaround, backreferences and word boundaries are not supported: %v", at, v))
			}
		case "minItems":
			if v != 0.0 && v != 1.0 {
				out = append(out, fmt.Sprintf("%s/minItems: only 0 and 1 are supported, not %v", at, v))
			}
		case "additionalProperties":
			if v != false {
				out = append(out, fmt.Sprintf("%s/additionalProperties: must be false", at))
			}
		default:
			if !slices.Contains(outputformat.Keywords, k) && k != "$schema" {
				out = append(out, fmt.Sprintf("%s/%s: keyword %q is not supported in output_config.format", at, k, k))
			}
		}
	}
	types, _ := s["type"].([]any)
	if _, has := s["additionalProperties"]; !has && (s["type"] == "object" || slices.Contains(types, any("object")) || s["properties"] != nil) {
		out = append(out, fmt.Sprintf("%s: an object schema must set additionalProperties to false", cmp.Or(at, "/")))
	}
	return out
}

// afterHeld reports whether f is no violation in the messages of a request
// that continues a thread (the message-threads beta): they follow the
// thread's last response, which the API holds and the request does not
// send, so they may be none, need not open with a user message, and their
// first user turn answers tool calls the request cannot show.
func afterHeld(msgs []Message, f finding) bool {
	switch f.rule {
	case "no-messages", "first-user":
		return true
	case "tool-result-orphan":
		i := 0 // the end of the user turn that opens msgs
		for i < len(msgs) && msgs[i].Role == "user" {
			i++
		}
		return f.message < i
	}
	return false
}

// path writes f's location in the API's notation.
func path(msgs []Message, f finding) string {
	if f.message < 0 {
		return "messages"
	}
	p := fmt.Sprintf("messages.%d", f.message)
	switch {
	case f.block < 0 && f.field != "":
		return p + "." + f.field
	case f.block < 0:
		return p
	case msgs[f.message].StringContent:
		return p + ".content"
	}
	p += fmt.Sprintf(".content.%d", f.block)
	if f.item >= 0 {
		p += fmt.Sprintf(".content.%d", f.item)
	}
	if f.field != "" && f.field != "type" {
		p += "." + f.field
	}
	return p
}
