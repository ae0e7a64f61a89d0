package anthropictest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	json2 "github.com/go-json-experiment/json"

	"github.com/agentloop/agentloop/internal/apirules"
)

// Strict mode, on unless Server.Lenient is set, answers a request that
// breaks a current model's rules with the 400 the API sends, before any
// reply is taken from the script:
//
//   - thinking {"type":"disabled"} or a budget ({"type":"enabled"}) on a
//     model whose thinking is always on, or a budget on one that takes
//     none;
//   - a forced tool_choice ("any" or "tool") on a model that rejects it,
//     on count_tokens too;
//   - an output_config.effort the model does not take;
//   - an output_config.format that CheckRequest rejects ("output-format"),
//     on any model;
//   - messages that end with an assistant turn the caller wrote, a prefill
//     ("Prefilling assistant messages is not supported for this model."),
//     on every model here; the API's own paused turn sent back (server
//     tool blocks after pause_turn, a compaction block) is no prefill, nor
//     is a compaction request (apirules.Continues says which is which);
//     count_tokens is not checked, the docs saying nothing of it there;
//   - temperature, top_p or top_k, on any model, at any value, with API
//     version 2026-10-21 or no anthropic-version header; with 2023-06-01,
//     on the models here, a value other than the default (temperature 1,
//     top_p 0.99), any top_k, or temperature and top_p together;
//   - a thinking block the server streamed, sent back after anything
//     before it changed (system, tools, an earlier non-thinking block), or
//     after a thinking block before it was removed other than as a leading
//     run ("The block is bound to a different conversation").
//
// The messages are the docs'. One check is stricter than the API: a
// thinking block sent to a model that cannot read it ([apirules.Reads]) is
// a 400 here, where the API drops it silently, so that a test sees the
// reasoning its client lost. The thinking block checks are in binding.go.

// strictRules are what the fake enforces for one model.
type strictRules struct {
	disabled  string // the 400's message for thinking "disabled"; empty: accepted
	enabled   string // the 400's message for a thinking budget; empty: accepted
	noForced  bool   // tool_choice "any" and "tool" are a 400
	efforts   []string
	binds     bool // thinking blocks are checked for their prefix
	reads     bool // thinking blocks are checked for their model
	noPrefill bool // a prefill is a 400, and so are non-default sampling parameters at 2023-06-01
	noSystem  bool // a system message in messages is a 400
}

// The API's messages, from models/opus-5-5/migration-guide and
// models/sonnet-5-5/migration-guide.
const (
	msgDisabled   = `"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.`
	msgDisabled55 = `"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" for the lowest thinking setting, or "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.`
	msgEnabled    = `"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.`
	msgForced     = `tool_choice: type "tool" and "any" are not supported for this model.`
	msgBound      = "%s: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"."
	msgModel      = "%s: Invalid `signature` in `thinking` block. The block was written by %s, which %s cannot read (the API would drop it without an error; anthropictest's strict mode rejects it)."
	// The errors page's (api/errors, "Prefill not supported").
	msgPrefill = "Prefilling assistant messages is not supported for this model."
	// The docs say only that the request is a 400; the text is as reported
	// against the API.
	msgSystem = "messages.%d.role: role 'system' is not supported on this model"
	// The docs give no text for the sampling 400s. At 2026-10-21 the field
	// is unknown, as pydantic words it ("%s: Extra inputs are not
	// permitted", as reported against the API); at 2023-06-01 a removed
	// parameter is "deprecated for this model" (reported for temperature on
	// Claude Opus 4.7, and assumed alike for top_p and top_k).
	msgSamplingRemoved    = "%s: Extra inputs are not permitted"
	msgSamplingDeprecated = "`%s` is deprecated for this model."
	msgSamplingBoth       = "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
)

var efforts = []string{"low", "medium", "high", "xhigh", "max"}

// strictModels holds the rules strict mode enforces, by model.
var strictModels = map[string]strictRules{
	"claude-opus-5-5":   {disabled: msgDisabled, enabled: msgEnabled, noForced: true, efforts: efforts, binds: true, reads: true, noPrefill: true},
	"claude-fable-5-1":  {disabled: msgDisabled, enabled: msgEnabled, noForced: true, efforts: efforts, binds: true, reads: true, noPrefill: true},
	"claude-mythos-5-1": {disabled: msgDisabled, enabled: msgEnabled, noForced: true, efforts: efforts, reads: true, noPrefill: true}, // no prefix check
	"claude-sonnet-5-5": {disabled: msgDisabled55, enabled: msgEnabled, noForced: true, efforts: efforts, binds: true, reads: true, noPrefill: true},
	"claude-haiku-5-5":  {enabled: msgEnabled, efforts: efforts, binds: true, reads: true, noPrefill: true},
	// Claude Opus 4.7 and later reject a budget, and a prefill (as Claude
	// Opus 4.6 and Sonnet 4.6 do, which are not held to these rules).
	// Mid-conversation system messages are taken by Claude Opus 4.8 and the
	// models after it but Claude Sonnet 5 (the docs' list, which does not
	// name Sonnet 5.5 or Haiku 5.5: they are let through).
	"claude-opus-5":   {enabled: msgEnabled, efforts: efforts, noPrefill: true},
	"claude-sonnet-5": {enabled: msgEnabled, efforts: efforts, noPrefill: true, noSystem: true},
	"claude-fable-5":  {enabled: msgEnabled, efforts: efforts, noPrefill: true},
	"claude-mythos-5": {enabled: msgEnabled, efforts: efforts, noPrefill: true},
	"claude-opus-4-8": {enabled: msgEnabled, efforts: efforts, noPrefill: true},
	"claude-opus-4-7": {enabled: msgEnabled, efforts: efforts, noPrefill: true, noSystem: true},
}

// settings are the request fields the model rules read. Decoding them
// allocates next to nothing for the messages, which may be megabytes: a
// role each.
type settings struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Thinking struct {
		Type         string `json:"type"`
		BlockBinding struct {
			PrefixMismatchBehavior string `json:"prefix_mismatch_behavior"`
		} `json:"block_binding"`
	} `json:"thinking"`
	ToolChoice struct {
		Type string `json:"type"`
	} `json:"tool_choice"`
	OutputConfig struct {
		Effort string `json:"effort"`
		Format *struct {
			Type   string `json:"type"`
			Schema any    `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	Temperature *float64        `json:"temperature"`
	TopP        *float64        `json:"top_p"`
	TopK        json.RawMessage `json:"top_k"`
	Compaction  json.RawMessage `json:"compaction"` // a compaction request
	Thread      thread          `json:"thread"`
	// A platform's: the API version and betas, in the body.
	Version string   `json:"anthropic_version"`
	Betas   []string `json:"anthropic_beta"`
	// Decoded by contextManagement, only when present.
	ContextManagement json.RawMessage `json:"context_management"`
	// The roles alone: the content is decoded only after an assistant turn.
	Messages []roleOnly `json:"messages"`
}

type roleOnly struct {
	Role string `json:"role"`
}

// settings decodes the request's settings, once: the server's checks of
// one request each read them, and the body may be megabytes. It is first
// called before the Request is shared, so the cache needs no lock.
func (r *Request) settings() (*settings, error) {
	if r.set == nil && r.setErr == nil {
		r.set = new(settings)
		if r.setErr = json2.Unmarshal(r.Body, r.set, v1Syntax); r.setErr != nil {
			r.set = nil
		} else if r.Platform != "" { // the model is in the URL, and the version and betas in the body
			r.set.Model, r.set.Stream = cmp.Or(r.urlModel, r.set.Model), r.set.Stream || r.urlStream
		}
	}
	return r.set, r.setErr
}

// v1Syntax makes go-json-experiment, which decodes a 5 MiB body in one
// pass where encoding/json takes two, accept what encoding/json does.
var v1Syntax = json2.JoinOptions(apirules.Lenient, json2.MatchCaseInsensitiveNames(true))

// checkStrict returns the 400 the API would answer r with, or nil. count
// is set for count_tokens, where the thinking blocks are not checked.
func (s *Server) checkStrict(r *Request, count bool) *HTTPError {
	if s.Lenient {
		return nil
	}
	set, rules, v := modelRules(r, count)
	if vs := checkTools(r.Body); v == nil && len(vs) > 0 {
		v = &vs[0]
	}
	if f := set.OutputConfig.Format; v == nil && f != nil {
		if vs := outputFormat(f.Type, f.Schema); len(vs) > 0 {
			v = &vs[0]
		}
	}
	switch {
	case v != nil:
		return &HTTPError{Status: 400, Message: v.msg}
	case count || !rules.reads:
		return nil
	}
	s.mu.Lock()
	issued := len(s.issued) > 0
	s.mu.Unlock()
	if !issued {
		return nil // no block to check: the messages need no decoding
	}
	p, err := r.full()
	if err != nil {
		return nil
	}
	drop := set.Thinking.BlockBinding.PrefixMismatchBehavior == "drop_block"
	return s.checkThinking(p, rules.binds && !drop)
}

// modelRules checks r against its model's rules in strictModels, and the
// API version's, and returns the first violation, if any, with what it
// decoded; rules are zero for a body that does not decode or a model the
// table does not hold. count is set for count_tokens.
func modelRules(r *Request, count bool) (set settings, rules strictRules, v *violation) {
	decoded, err := r.settings()
	if err != nil {
		return set, rules, nil // not these rules' business
	}
	set = *decoded
	rules = strictModels[apirules.Undated(set.Model)]
	if v := sampling(set, rules, cmp.Or(r.Header.Get("anthropic-version"), set.Version)); v != nil {
		return set, rules, v
	}
	if rules.noPrefill && !count && set.Compaction == nil {
		if n := len(set.Messages); n > 0 && set.Messages[n-1].Role == "assistant" {
			if i := prefilled(r.Messages()); i >= 0 {
				return set, rules, &violation{"prefill", fmt.Sprintf("messages.%d", i), msgPrefill}
			}
		}
	}
	if rules.noSystem {
		if i := slices.IndexFunc(set.Messages, func(m roleOnly) bool { return m.Role == "system" }); i >= 0 {
			return set, rules, &violation{"system-message", fmt.Sprintf("messages.%d.role", i), fmt.Sprintf(msgSystem, i)}
		}
	}
	switch t := set.Thinking.Type; {
	case t == "disabled" && rules.disabled != "":
		return set, rules, &violation{"thinking-mode", "thinking.type", rules.disabled}
	case t == "enabled" && rules.enabled != "":
		return set, rules, &violation{"thinking-mode", "thinking.type", rules.enabled}
	}
	if t := set.ToolChoice.Type; rules.noForced && (t == "any" || t == "tool") {
		return set, rules, &violation{"tool-choice", "tool_choice.type", msgForced}
	}
	if e := set.OutputConfig.Effort; e != "" && rules.efforts != nil && !slices.Contains(rules.efforts, e) {
		return set, rules, &violation{"effort", "output_config.effort", fmt.Sprintf("output_config.effort: %q is not supported for this model.", e)}
	}
	return set, rules, nil
}

// sampling checks the sampling parameters of set, a request at API
// version version, against rules.
func sampling(set settings, rules strictRules, version string) *violation {
	sent := map[string]bool{"temperature": set.Temperature != nil, "top_p": set.TopP != nil, "top_k": set.TopK != nil}
	for _, name := range apirules.SamplingParams {
		switch {
		case !sent[name]:
		case version != "2023-06-01": // 2026-10-21, or none said: the latest
			return &violation{"sampling", name, fmt.Sprintf(msgSamplingRemoved, name)}
		case !rules.noPrefill:
		case name == "temperature" && *set.Temperature != 1, name == "top_p" && *set.TopP != 0.99, name == "top_k":
			return &violation{"sampling", name, fmt.Sprintf(msgSamplingDeprecated, name)}
		}
	}
	if rules.noPrefill && sent["temperature"] && sent["top_p"] {
		return &violation{"sampling", "top_p", msgSamplingBoth}
	}
	return nil
}

// prefilled returns the index of the last message if msgs end with an
// assistant turn that is a prefill, and -1 otherwise. The turn is the
// trailing run of assistant messages, which the API merges.
func prefilled(msgs []Message) int {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != "assistant" {
		return -1
	}
	for i := n - 1; i >= 0 && msgs[i].Role == "assistant"; i-- {
		if slices.ContainsFunc(msgs[i].Content, func(b Block) bool { return apirules.Continues(b.Type) }) {
			return -1
		}
	}
	return n - 1
}
