package anthropictest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// body wraps messages (a JSON array's contents) in a valid request.
func body(messages string) string {
	return `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[` + messages + `]}`
}

const (
	user      = `{"role":"user","content":"What's 2+3 and 4*5?"}`
	askAdd    = `{"role":"assistant","content":[{"type":"text","text":"Adding."},{"type":"tool_use","id":"toolu_a","name":"add","input":{"a":2,"b":3}}]}`
	answerAdd = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"5"}]}`
	askBoth   = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"add","input":{"a":2,"b":3}},{"type":"tool_use","id":"toolu_m","name":"mul","input":{"a":4,"b":5}}]}`
	final     = `{"role":"assistant","content":[{"type":"text","text":"5 and 20."}]}`
	sys       = `{"role":"system","content":"The user is on call: keep it short."}`
)

// threaded wraps messages in a request with the thread field {"type":typ…}.
func threaded(typ, messages string) string {
	return `{"model":"claude-sonnet-4-5","max_tokens":1024,"thread":{"type":` + typ + `},"messages":[` + messages + `]}`
}

func TestCheckRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string // nil: the request is valid
	}{
		// Valid requests.
		{"one user message", body(user), nil},
		{"text block content", body(`{"role":"user","content":[{"type":"text","text":"hi"}]}`), nil},
		{"tool round trip, text after the result", body(user + `,` + askAdd + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"5"},{"type":"text","text":"thanks"}]},` + final), nil},
		{"parallel results in any order", body(user + `,` + askBoth + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_m","content":"20"},{"type":"tool_result","tool_use_id":"toolu_a","content":"5"}]}`), nil},
		{"consecutive user messages are merged", body(user + `,` + user), nil},
		{"consecutive assistant messages are merged", body(user + `,` + final + `,` + askAdd + `,` + answerAdd), nil},
		{"forced tool use on a model that takes it", strings.Replace(body(user), `"messages"`, `"tool_choice":{"type":"any"},"messages"`, 1), nil},
		{"forced tool use on opus 5.5", strings.Replace(body(user), `"claude-sonnet-4-5","max_tokens":1024,`, `"claude-opus-5-5","max_tokens":1024,"tool_choice":{"type":"tool","name":"add"},`, 1), []string{"tool-choice"}},
		{"thinking disabled on fable 5.1", strings.Replace(body(user), `"claude-sonnet-4-5","max_tokens":1024,`, `"claude-fable-5-1","max_tokens":1024,"thinking":{"type":"disabled"},`, 1), []string{"thinking-mode"}},
		{"a budget on sonnet 5.5", strings.Replace(body(user), `"claude-sonnet-4-5","max_tokens":1024,`, `"claude-sonnet-5-5","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":2000},`, 1), []string{"thinking-mode"}},
		{"an unknown effort on haiku 5.5", strings.Replace(body(user), `"claude-sonnet-4-5","max_tokens":1024,`, `"claude-haiku-5-5","max_tokens":1024,"output_config":{"effort":"huge"},`, 1), []string{"effort"}},
		{"results split over consecutive user messages", body(user + `,` + askBoth + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"5"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_m","content":"20"}]}`), nil},
		{"tool result with empty string content", body(user + `,` + askAdd + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":""}]}`), nil},
		{"tool result with block content and is_error", body(user + `,` + askAdd + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","is_error":true,"content":[{"type":"text","text":"boom"}]}]}`), nil},
		{"tool with empty input object", body(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_n","name":"now","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_n","content":"noon"}]}`), nil},
		{"thinking with signature, redacted thinking", body(user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"c2ln"},{"type":"redacted_thinking","data":"EmwK"},{"type":"tool_use","id":"toolu_a","name":"add","input":{}}]},` + answerAdd), nil},
		{"empty final assistant prefill", body(user + `,{"role":"assistant","content":[]}`), nil},
		{"final assistant prefill", body(user + `,{"role":"assistant","content":"The answer is"}`), nil},
		{"unknown block types pass", body(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"brand_new","x":1}]}`), nil},
		{"system message after a user turn, last", body(user + `,` + sys), nil},
		{"system messages after tool results, before the assistant", body(user + `,` + askAdd + `,` + answerAdd + `,` + sys + `,{"role":"system","content":[{"type":"text","text":"Be brief."},{"type":"tool_removal","tool":{"type":"tool_reference","name":"add"}}]},` + final), nil},
		{"system message after a paused turn", body(user + `,{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]},` + sys), nil},
		{"system message on opus 4.8", strings.Replace(body(user+`,`+sys), `"claude-sonnet-4-5"`, `"claude-opus-4-8"`, 1), nil},
		{"thread continue: only the new turn, answering tools it cannot show", threaded(`"continue","previous_message_id":"msg_01AnthropicTest000000001"`, answerAdd+`,`+sys), nil},
		{"thread continue with nothing new", threaded(`"continue","previous_message_id":"msg_01AnthropicTest000000001"`, ``), nil},
		{"thread create", threaded(`"create"`, user), nil},

		// One failing case per rule.
		{"not JSON", `{"messages":`, []string{"json"}},
		{"content of the wrong type", body(`{"role":"user","content":42}`), []string{"json"}},
		{"model and max_tokens missing", `{"messages":[` + user + `]}`, []string{"required", "required"}},
		{"no messages", body(``), []string{"no-messages"}},
		{"first message from the assistant", body(final + `,` + user), []string{"first-user"}},
		{"unknown role", body(user + `,{"role":"developer","content":"be nice"}`), []string{"role"}},
		{"system message first", body(sys + `,` + user), []string{"first-user"}},
		{"system message after an assistant turn", body(user + `,` + final + `,` + sys), []string{"system-placement"}},
		{"system message before a user turn", body(user + `,` + sys + `,` + user), []string{"system-placement"}},
		{"system message between a tool call and its result", body(user + `,` + askAdd + `,` + sys + `,` + answerAdd), []string{"tool-unanswered", "tool-result-orphan", "system-placement"}},
		{"system message holding an image", body(user + `,{"role":"system","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}`), []string{"block-role"}},
		{"system message on opus 4.7", strings.Replace(body(user+`,`+sys), `"claude-sonnet-4-5"`, `"claude-opus-4-7"`, 1), []string{"system-message"}},
		{"system message on sonnet 5", strings.Replace(body(user+`,`+sys), `"claude-sonnet-4-5"`, `"claude-sonnet-5"`, 1), []string{"system-message"}},
		{"thread continue without previous_message_id", threaded(`"continue"`, user), []string{"required"}},
		{"thread of an unknown type", threaded(`"resume"`, user), []string{"thread"}},
		{"thread continue: an orphan after the first turn", threaded(`"continue","previous_message_id":"msg_1"`, answerAdd+`,`+final+`,`+answerAdd), []string{"tool-result-orphan"}},
		{"empty string content", body(`{"role":"user","content":""}`), []string{"empty-content"}},
		{"empty content before the end", body(user + `,{"role":"assistant","content":[]},` + user), []string{"empty-content"}},
		{"empty text block", body(`{"role":"user","content":[{"type":"text","text":""}]}`), []string{"empty-text"}},
		{"whitespace-only text", body(`{"role":"user","content":[{"type":"text","text":" \n"},{"type":"text","text":"hi"}]}`), []string{"empty-text"}},
		{"whitespace-only string content", body(`{"role":"user","content":"  "}`), []string{"empty-text"}},
		{"empty text inside a tool result", body(user + `,` + askAdd + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"text","text":""}]}]}`), []string{"empty-text"}},
		{"final assistant ends in whitespace", body(user + `,{"role":"assistant","content":"The answer is "}`), []string{"trailing-whitespace"}},
		{"tool input is an array", body(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"add","input":[2,3]}]},` + answerAdd), []string{"tool-input"}},
		{"tool input is a JSON string", body(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"add","input":"{\"a\":2}"}]},` + answerAdd), []string{"tool-input"}},
		{"tool input missing", body(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"add"}]},` + answerAdd), []string{"tool-input"}},
		{"tool input null", body(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"add","input":null}]},` + answerAdd), []string{"tool-input"}},
		{"tool id with bad characters", body(user + `,{"role":"assistant","content":[{"type":"tool_use","id":"call.1","name":"add","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call.1","content":"5"}]}`), []string{"tool-use-id"}},
		{"tool id missing", body(user + `,{"role":"assistant","content":[{"type":"tool_use","name":"add","input":{}}]},` + user), []string{"tool-use-id"}},
		{"tool id reused in a later turn", body(user + `,` + askAdd + `,` + answerAdd + `,` + askAdd + `,` + answerAdd), []string{"tool-use-id"}},
		{"tool use answered by text", body(user + `,` + askAdd + `,` + user), []string{"tool-unanswered"}},
		{"tool use is the last message", body(user + `,` + askAdd), []string{"tool-unanswered"}},
		{"one of two parallel tools unanswered", body(user + `,` + askBoth + `,` + answerAdd), []string{"tool-unanswered"}},
		{"tool use answered a turn late", body(user + `,` + askAdd + `,` + user + `,` + final + `,` + answerAdd), []string{"tool-unanswered", "tool-result-orphan"}},
		{"tool result after text", body(user + `,` + askAdd + `,{"role":"user","content":[{"type":"text","text":"here:"},{"type":"tool_result","tool_use_id":"toolu_a","content":"5"}]}`), []string{"tool-result-first"}},
		{"tool result after a merged text message", body(user + `,` + askAdd + `,` + user + `,` + answerAdd), []string{"tool-result-first"}},
		{"tool answered twice", body(user + `,` + askAdd + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"5"},{"type":"tool_result","tool_use_id":"toolu_a","content":"5"}]}`), []string{"tool-result-once"}},
		{"tool result without tool use", body(user + `,` + final + `,` + answerAdd), []string{"tool-result-orphan"}},
		{"tool result in the first message", body(answerAdd), []string{"tool-result-orphan"}},
		{"tool result in an assistant message", body(user + `,{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"5"}]}`), []string{"block-role"}},
		{"tool use in a user message", body(`{"role":"user","content":[{"type":"tool_use","id":"toolu_a","name":"add","input":{}}]}`), []string{"block-role"}},
		{"paused turn ending in whitespace", body(user + `,{"role":"assistant","content":[{"type":"text","text":"Searching. "},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"text","text":"Found it.\n"}]}`), []string{"trailing-whitespace"}},
		{"thinking without signature", body(user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"ok"}]},` + user), []string{"thinking-signature"}},
		{"thinking with empty signature", body(user + `,{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":""},{"type":"text","text":"ok"}]},` + user), []string{"thinking-signature"}},
		{"redacted thinking without data", body(user + `,{"role":"assistant","content":[{"type":"redacted_thinking"},{"type":"text","text":"ok"}]},` + user), []string{"thinking-signature"}},

		// Every violation is reported, not just the first.
		{"many at once", body(final + `,{"role":"user","content":[{"type":"text","text":""},{"type":"tool_result","tool_use_id":"toolu_x","content":"?"}]},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"toolu_b","name":"f","input":[]}]}`),
			[]string{"first-user", "empty-text", "thinking-signature", "tool-input", "tool-result-orphan", "tool-unanswered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRequest([]byte(tt.body))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckRequest = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckRequest = nil, want %v", tt.want)
			}
			var rules []string
			for _, v := range check([]byte(tt.body)) {
				rules = append(rules, v.rule)
				// The message names every violation.
				if line := v.path + ": " + v.msg + " [" + v.rule + "]"; !strings.Contains(err.Error(), line) {
					t.Errorf("Error() = %q lacks %q", err, line)
				}
			}
			if diff := cmp.Diff(tt.want, rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestCheckErrorPaths(t *testing.T) {
	body := body(user + `,` + askAdd + `,{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_a","content":"5"}]},{"role":"user","content":"  "}`)
	var got []string
	for _, v := range check([]byte(body)) {
		got = append(got, v.path)
	}
	want := []string{"messages.3.content", "messages.2.content.1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

// TestFormatProblems checks that CheckRequest rejects schemas the API would.
func TestFormatProblems(t *testing.T) {
	tests := []struct {
		name, schema string
		want         []string
	}{
		{"ok", `{"type":"object","properties":{"a":{"type":"string","format":"email"}},"additionalProperties":false}`, nil},
		{"open object", `{"type":"object","properties":{"a":{"type":"string"}}}`,
			[]string{"/: an object schema must set additionalProperties to false"}},
		{"map", `{"type":"object","additionalProperties":{"type":"integer"}}`,
			[]string{"/additionalProperties: must be false"}},
		{"bounds", `{"type":"object","properties":{"n":{"type":"integer","minimum":1},"s":{"type":"string","minLength":2,"format":"hex"}},"additionalProperties":false}`,
			[]string{`/properties/n/minimum: keyword "minimum" is not supported in output_config.format`,
				"/properties/s/format: format hex is not supported (supported: date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid)",
				`/properties/s/minLength: keyword "minLength" is not supported in output_config.format`}},
		{"minItems", `{"type":"array","items":{"type":"string"},"minItems":3}`,
			[]string{"/minItems: only 0 and 1 are supported, not 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s any
			if err := json.Unmarshal([]byte(tt.schema), &s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, formatProblems(s, "", nil)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			err := CheckRequest(formatRequest([]byte(tt.schema)))
			if (err == nil) != (tt.want == nil) {
				t.Errorf("CheckRequest = %v", err)
			}
		})
	}
}

// formatRequest is a Messages API request with schema as output_config.format.
func formatRequest(schema []byte) []byte {
	return []byte(`{"model":"claude-sonnet-5-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}],` +
		`"output_config":{"format":{"type":"json_schema","schema":` + string(schema) + `}}}`)
}
