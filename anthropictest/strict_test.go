package anthropictest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// send posts body, with header, to srv's path and returns the status and,
// for an error, the error's message.
func send(t *testing.T, srv *Server, path, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Type, Message string }
	}
	if resp.StatusCode != 200 {
		if err := json.Unmarshal(data, &e); err != nil || e.Error.Type != "invalid_request_error" && resp.StatusCode == 400 {
			t.Errorf("400 body %s is not the API's invalid_request_error", data)
		}
	}
	return resp.StatusCode, e.Error.Message
}

// expectStrict posts body, with header, to messages or, with count, to
// count_tokens, on a strict server and on a Lenient one: the strict one
// must answer the API's 400 with the message want, or 200 if want is
// empty; the Lenient one must answer 200.
func expectStrict(t *testing.T, count bool, body string, header http.Header, want string) {
	t.Helper()
	path := "/v1/messages"
	if count {
		path += "/count_tokens"
	}
	for _, lenient := range []bool{false, true} {
		srv := NewServer(Repeat(NewStream().Text("ok")))
		srv.Lenient = lenient
		status, msg := send(t, srv, path, body, header)
		srv.Close()
		want := want
		if lenient {
			want = ""
		}
		if want == "" && status != 200 || want != "" && (status != 400 || msg != want) {
			t.Errorf("lenient %v: %d %q, want %q", lenient, status, msg, want)
		}
	}
}

// The current models' request rules come back as the API's 400s, on
// messages and on count_tokens, before the script is touched; Lenient
// turns them off; other models are not held to them.
func TestStrictRequestRules(t *testing.T) {
	const msgs = `"max_tokens":100,"messages":[{"role":"user","content":"hi"}]`
	tools := `,"tools":[{"name":"f","input_schema":{"type":"object"}}]`
	tests := []struct {
		name, model, extra string
		count              bool
		want               string // the 400's message; empty for a 200
	}{
		{"disabled on opus 5.5", "claude-opus-5-5", `,"thinking":{"type":"disabled"}`, false, msgDisabled},
		{"disabled on fable 5.1", "claude-fable-5-1", `,"thinking":{"type":"disabled"}`, false, msgDisabled},
		{"disabled on sonnet 5.5 points to between_tools", "claude-sonnet-5-5", `,"thinking":{"type":"disabled"}`, false, msgDisabled55},
		{"disabled on haiku 5.5 is accepted", "claude-haiku-5-5", `,"thinking":{"type":"disabled"}`, false, ""},
		{"budget on opus 5.5", "claude-opus-5-5", `,"thinking":{"type":"enabled","budget_tokens":2048}`, false, msgEnabled},
		{"budget on fable 5.1", "claude-fable-5-1", `,"thinking":{"type":"enabled","budget_tokens":2048}`, false, msgEnabled},
		{"budget on sonnet 5.5", "claude-sonnet-5-5", `,"thinking":{"type":"enabled","budget_tokens":2048}`, false, msgEnabled},
		{"budget on haiku 5.5", "claude-haiku-5-5", `,"thinking":{"type":"enabled","budget_tokens":2048}`, false, msgEnabled},
		{"budget on sonnet 4.6 is accepted", "claude-sonnet-4-6", `,"thinking":{"type":"enabled","budget_tokens":2048}`, false, ""},
		{"adaptive with display on opus 5.5", "claude-opus-5-5", `,"thinking":{"type":"adaptive","display":"summarized"},"output_config":{"effort":"max"}`, false, ""},
		{"forced any on opus 5.5", "claude-opus-5-5", tools + `,"tool_choice":{"type":"any"}`, false, msgForced},
		{"forced tool on fable 5.1", "claude-fable-5-1", tools + `,"tool_choice":{"type":"tool","name":"f"}`, false, msgForced},
		{"forced any on sonnet 5.5", "claude-sonnet-5-5-20260928", tools + `,"tool_choice":{"type":"any"}`, false, msgForced},
		{"forced tool on haiku 5.5 is accepted", "claude-haiku-5-5", tools + `,"tool_choice":{"type":"tool","name":"f"}`, false, ""},
		{"forced any on count_tokens", "claude-opus-5-5", tools + `,"tool_choice":{"type":"any"}`, true, msgForced},
		{"tool_choice none on opus 5.5", "claude-opus-5-5", tools + `,"tool_choice":{"type":"none"}`, false, ""},
		{"an effort no model takes", "claude-opus-5-5", `,"output_config":{"effort":"extreme"}`, false, `output_config.effort: "extreme" is not supported for this model.`},
		{"forced any on opus 5", "claude-opus-5", tools + `,"tool_choice":{"type":"any"}`, false, ""},
		{"a system message on opus 4.7", "claude-opus-4-7", `,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"Be brief."}]`, false, "messages.1.role: role 'system' is not supported on this model"},
		{"a system message on sonnet 5, counted", "claude-sonnet-5", `,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"Be brief."}]`, true, "messages.1.role: role 'system' is not supported on this model"},
		{"an output_config.format the API rejects", "claude-sonnet-5-5", `,"output_config":{"format":{"type":"json_schema","schema":{"type":"integer","minimum":1}}}`, false,
			`/minimum: keyword "minimum" is not supported in output_config.format`},
		{"an output_config.format in the API's subset", "claude-sonnet-5-5", `,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}}}`, false, ""},
		{"a system message on opus 5.5 is accepted", "claude-opus-5-5", `,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"Be brief."}]`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectStrict(t, tt.count, `{"model":"`+tt.model+`",`+msgs+tt.extra+`}`, nil, tt.want)
		})
	}
}

// A thinking block the server streamed is valid only after its exact
// prefix and under a model that reads it. The conversation: turn 1 streams
// thinking A and a tool call; turn 2, with the result, streams thinking B
// and text; the third request replays both, rewritten as each case says.
func TestStrictThinkingBinding(t *testing.T) {
	type conv struct {
		model, system, first, tools, cache string
		a, b                               bool // A and B are sent back
	}
	const toolDef = `{"name":"f","input_schema":{"type":"object"}}`
	body := func(c conv, turns int) string {
		var m []string
		m = append(m, `{"role":"user","content":[{"type":"text","text":"`+c.first+`"}]}`)
		if turns >= 2 {
			var blocks []string
			if c.a {
				blocks = append(blocks, `{"type":"thinking","thinking":"plan","signature":"sig_A"}`)
			}
			blocks = append(blocks, `{"type":"tool_use","id":"toolu_1","name":"f","input":{"x": 1}}`)
			m = append(m, `{"role":"assistant","content":[`+strings.Join(blocks, ",")+`]}`,
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"42"`+c.cache+`}]}`)
		}
		if turns >= 3 {
			var blocks []string
			if c.b {
				blocks = append(blocks, `{"type":"thinking","thinking":"","signature":"sig_B"}`)
			}
			blocks = append(blocks, `{"type":"text","text":"It is 42."}`)
			m = append(m, `{"role":"assistant","content":[`+strings.Join(blocks, ",")+`]}`,
				`{"role":"user","content":"thanks"}`)
		}
		return `{"model":"` + c.model + `","max_tokens":100,"system":` + c.system + `,"tools":[` + c.tools +
			`],"messages":[` + strings.Join(m, ",") + `]}`
	}
	orig := conv{model: "claude-opus-5-5", system: `"Be brief."`, first: "f?", tools: toolDef, a: true, b: true}
	tests := []struct {
		name    string
		edit    func(c *conv)
		lenient bool
		want    string // a substring of the 400's message; empty for a 200
	}{
		{"unchanged", func(c *conv) {}, false, ""},
		{"system as blocks with a cache marker", func(c *conv) {
			c.system = `[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]`
		}, false, ""},
		{"a cache marker moved onto the result", func(c *conv) { c.cache = `,"cache_control":{"type":"ephemeral"}` }, false, ""},
		{"system changed", func(c *conv) { c.system = `"Be very brief."` }, false, "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation."},
		{"tools changed", func(c *conv) { c.tools = toolDef + `,{"name":"g"}` }, false, "bound to a different conversation"},
		{"first message changed", func(c *conv) { c.first = "g?" }, false, "messages.1.content.0"},
		{"leading block removed", func(c *conv) { c.a = false }, false, ""},
		{"later block alone kept after a gap", func(c *conv) { c.a, c.b = false, true }, false, ""},
		{"both removed", func(c *conv) { c.a, c.b = false, false }, false, ""},
		{"to fable 5.1, which reads opus 5.5", func(c *conv) { c.model = "claude-fable-5-1" }, false, ""},
		{"to sonnet 5.5, which does not", func(c *conv) { c.model = "claude-sonnet-5-5" }, false, "written by claude-opus-5-5, which claude-sonnet-5-5 cannot read"},
		{"to opus 5, which checks nothing", func(c *conv) { c.model = "claude-opus-5" }, false, ""},
		{"lenient", func(c *conv) { c.system = `"other"` }, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(
				NewStream().Block(Block{Type: "thinking", Signature: "sig_A"}, "plan").ToolUse("toolu_1", "f", `{"x":`, ` 1}`),
				NewStream().Block(Block{Type: "thinking", Signature: "sig_B"}).Text("It is ", "42."),
				NewStream().Text("ok"))
			defer srv.Close()
			srv.Lenient = tt.lenient
			for turn := 1; turn <= 2; turn++ {
				if status, msg := send(t, srv, "/v1/messages", body(orig, turn), nil); status != 200 {
					t.Fatalf("turn %d: %d %s", turn, status, msg)
				}
			}
			c := orig
			tt.edit(&c)
			status, msg := send(t, srv, "/v1/messages", body(c, 3), nil)
			if tt.want == "" && status != 200 || tt.want != "" && (status != 400 || !strings.Contains(msg, tt.want)) {
				t.Errorf("%d %q, want %q", status, msg, tt.want)
			}
		})
	}
	// Removing a block from the middle of the run invalidates the later
	// ones: A kept, B gone, then C (from a fourth turn) replayed.
	t.Run("a block removed from the middle", func(t *testing.T) {
		srv := NewServer(
			NewStream().Block(Block{Type: "thinking", Signature: "sig_A"}, "plan").ToolUse("toolu_1", "f", `{"x": 1}`),
			NewStream().Block(Block{Type: "thinking", Signature: "sig_B"}).Text("It is 42."),
			NewStream().Block(Block{Type: "thinking", Signature: "sig_C"}).Text("You are welcome."),
			NewStream().Text("ok"))
		defer srv.Close()
		for turn := 1; turn <= 3; turn++ {
			if status, msg := send(t, srv, "/v1/messages", body(orig, turn), nil); status != 200 {
				t.Fatalf("turn %d: %d %s", turn, status, msg)
			}
		}
		four := func(withB bool) string {
			c := orig
			c.b = withB
			b := body(c, 3)
			return strings.TrimSuffix(b, "]}") + `,{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"sig_C"},{"type":"text","text":"You are welcome."}]},{"role":"user","content":"bye"}]}`
		}
		if status, msg := send(t, srv, "/v1/messages", four(false), nil); status != 400 || !strings.Contains(msg, "messages.5.content.0") {
			t.Errorf("B removed: %d %q, want the 400 for C at messages.5.content.0", status, msg)
		}
		if status, msg := send(t, srv, "/v1/messages", four(true), nil); status != 200 {
			t.Errorf("unchanged: %d %q", status, msg)
		}
	})
}

// The blocks a script streams assemble as a client assembles them.
func TestAssembleBlocks(t *testing.T) {
	st := NewStream().Block(Block{Type: "thinking", Signature: "s"}, "a", "b").Text("x", "y").ToolUse("toolu_1", "f", `{"a":`, `1}`)
	var got []string
	for _, b := range assembleBlocks(st.items) {
		got = append(got, b.Type+"|"+b.Text+b.Thinking+"|"+b.Signature+"|"+string(b.Input))
	}
	want := []string{"thinking|ab|s|", "text|xy||", `tool_use|||{"a":1}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

// Server-side compaction is no edit: a thinking block after a compaction
// block is compared from the compaction on, so the turns it replaced may
// go or change.
func TestStrictThinkingAfterCompaction(t *testing.T) {
	srv := NewServer(
		NewStream().Compaction("The user asked f?; f said 42.").
			Block(Block{Type: "thinking", Signature: "sig_B"}).Text("It is 42."),
		NewStream().Text("ok"), NewStream().Text("ok"))
	defer srv.Close()
	const head = `{"model":"claude-opus-5-5","max_tokens":100,"system":"Be brief.","messages":[`
	const after = `{"role":"assistant","content":[{"type":"compaction","content":"The user asked f?; f said 42."},{"type":"thinking","thinking":"","signature":"sig_B"},{"type":"text","text":"It is 42."}]},{"role":"user","content":"thanks"}]}`
	if status, msg := send(t, srv, "/v1/messages", head+`{"role":"user","content":"f? `+strings.Repeat("x", 100)+`"}]}`, nil); status != 200 {
		t.Fatal(status, msg)
	}
	for _, before := range []string{`{"role":"user","content":"f? ` + strings.Repeat("x", 100) + `"},`, `{"role":"user","content":"f?"},`} {
		if status, msg := send(t, srv, "/v1/messages", head+before+after, nil); status != 200 {
			t.Errorf("after the compaction, with %s: %d %s", before, status, msg)
		}
	}
}
