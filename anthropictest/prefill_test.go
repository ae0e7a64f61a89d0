package anthropictest

import (
	"net/http"
	"strings"
	"testing"
)

// A prefill is the API's 400 on the models here, on messages only; the
// API's own paused turn sent back, and a compaction request, are not.
// Sampling parameters are a 400 on every model at API version 2026-10-21
// (or none named), and at 2023-06-01 on the models here unless at their
// defaults. Lenient turns both off.
func TestStrictPrefillAndSampling(t *testing.T) {
	const user = `{"role":"user","content":"Find the Go release notes."}`
	const prefill = `{"role":"assistant","content":[{"type":"text","text":"{"}]}`
	const paused = `{"role":"assistant","content":[{"type":"text","text":"Searching."},` +
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}]}`
	const compacted = `{"role":"assistant","content":[{"type":"compaction","content":"Summary."}]}`
	tests := []struct {
		name, model, version string
		msgs                 []string
		extra                string
		count                bool
		want                 string // the 400's message; empty for a 200
	}{
		{"prefill on opus 5.5", "claude-opus-5-5", "", []string{user, prefill}, "", false, msgPrefill},
		{"prefill on fable 5.1", "claude-fable-5-1", "", []string{user, prefill}, "", false, msgPrefill},
		{"prefill on sonnet 5.5", "claude-sonnet-5-5-20260928", "", []string{user, prefill}, "", false, msgPrefill},
		{"prefill on haiku 5.5", "claude-haiku-5-5", "", []string{user, prefill}, "", false, msgPrefill},
		{"prefill on opus 5", "claude-opus-5", "", []string{user, prefill}, "", false, msgPrefill},
		{"an empty final assistant message", "claude-opus-5-5", "", []string{user, `{"role":"assistant","content":[]}`}, "", false, msgPrefill},
		{"prefill on haiku 4.5 is accepted", "claude-haiku-4-5", "", []string{user, prefill}, "", false, ""},
		{"prefill on count_tokens is accepted", "claude-opus-5-5", "", []string{user, prefill}, "", true, ""},
		{"pause_turn sent back", "claude-opus-5-5", "", []string{user, paused}, "", false, ""},
		{"pause_turn and a prefill, one turn", "claude-haiku-5-5", "", []string{user, paused, prefill}, "", false, ""},
		{"compaction sent back", "claude-sonnet-5-5", "", []string{user, compacted}, "", false, ""},
		{"a compaction request", "claude-opus-5-5", "", []string{user, prefill}, `,"compaction":{"type":"summarize"}`, false, ""},
		{"a user turn last", "claude-opus-5-5", "", []string{user, prefill, user}, "", false, ""},
		{"temperature at 2026-10-21", "claude-opus-5-5", "2026-10-21", []string{user}, `,"temperature":1`, false, "temperature: Extra inputs are not permitted"},
		{"top_k with no version, on sonnet 4.6", "claude-sonnet-4-6", "", []string{user}, `,"top_k":5`, false, "top_k: Extra inputs are not permitted"},
		{"top_p on count_tokens", "claude-haiku-5-5", "2026-10-21", []string{user}, `,"top_p":0.99`, true, "top_p: Extra inputs are not permitted"},
		{"temperature 1 at 2023-06-01", "claude-haiku-5-5", "2023-06-01", []string{user}, `,"temperature":1`, false, ""},
		{"temperature 0 at 2023-06-01", "claude-opus-5-5", "2023-06-01", []string{user}, `,"temperature":0`, false, "`temperature` is deprecated for this model."},
		{"top_p 1 at 2023-06-01", "claude-haiku-5-5", "2023-06-01", []string{user}, `,"top_p":1`, false, "`top_p` is deprecated for this model."},
		{"top_k at 2023-06-01", "claude-fable-5-1", "2023-06-01", []string{user}, `,"top_k":40`, false, "`top_k` is deprecated for this model."},
		{"both defaults at 2023-06-01", "claude-haiku-5-5", "2023-06-01", []string{user}, `,"temperature":1,"top_p":0.99`, false, msgSamplingBoth},
		{"temperature 0 at 2023-06-01 on sonnet 4.6", "claude-sonnet-4-6", "2023-06-01", []string{user}, `,"temperature":0`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := http.Header{}
			if tt.version != "" {
				header.Set("anthropic-version", tt.version)
			}
			if strings.Contains(tt.extra, `"compaction"`) {
				header.Set("anthropic-beta", "compact-2026-09-04")
			}
			expectStrict(t, tt.count, `{"model":"`+tt.model+`","max_tokens":100,"messages":[`+strings.Join(tt.msgs, ",")+`]`+tt.extra+`}`, header, tt.want)
		})
	}
}

// CheckRequest holds a request to the same rules, as at API version
// 2026-10-21, naming them.
func TestCheckRequestPrefillAndSampling(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"prefill", `{"model":"claude-opus-5-5","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"{"}]}`,
			"messages.1: " + msgPrefill + " [prefill]"},
		{"temperature", `{"model":"claude-3-haiku","max_tokens":10,"temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`,
			"temperature: temperature: Extra inputs are not permitted [sampling]"},
		{"pause_turn", `{"model":"claude-opus-5-5","max_tokens":10,"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRequest([]byte(tt.body))
			got := ""
			if err != nil {
				got = err.Error()[strings.Index(err.Error(), "\n\t")+2:]
			}
			if got != tt.want {
				t.Errorf("CheckRequest = %q, want %q", got, tt.want)
			}
		})
	}
}
