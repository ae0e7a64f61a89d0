package looprules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// TestSameJSON holds the repeat check's comparison to json.Compact's
// idea of insignificant whitespace.
func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1}`, `{ "a" : 1 }`, true},
		{"{\n\t\"a\": [1, 2]\n}", `{"a":[1,2]}`, true},
		{`{"s":"\\"}`, `{"s":"\\" }`, true},
		{`{"s":"a b"}`, `{"s":"ab"}`, false},
		{`{"s":"x\" y"}`, `{"s":"x\"y"}`, false},
		{`{"a":1}`, `{"a":12}`, false},
		{``, `{}`, false},
	} {
		if got := sameJSON([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestCheck runs a sequence of calls through one repeat state: the order
// of the checks, and that a call stopped before the repeat check is not
// counted as seen.
func TestCheck(t *testing.T) {
	call := func(name, input string) llm.ToolUse {
		return llm.ToolUse{ID: "toolu", Name: name, Input: []byte(input)}
	}
	var rep Repeats
	for i, tc := range []struct {
		call  llm.ToolUse
		final bool
		want  string // a substring of why; "" for a call to run
	}{
		{call("echo", `{"a":1}`), false, ""},
		{call("echo", `{ "a": 1 }`), false, ""},
		{call("echo", `{"a":1}`), true, Final}, // not counted
		{call("echo", `{"INVALID_JSON":"{\"a\":"}`), false, "not valid JSON"},
		{call("echo", `{"a":1}`), false, "3 times in a row"},
		{call("echo", `{"a":2}`), false, ""},
		{call("other", `{"a":2}`), false, ""},
	} {
		why, skip := Check(&rep, 3, tc.call, tc.final)
		if skip != (tc.want != "") || !strings.Contains(why, tc.want) {
			t.Errorf("call %d: Check = %q, %v; want %q", i, why, skip, tc.want)
		}
	}
	// A limit of 0 never stops a repeat.
	rep = Repeats{}
	for range 5 {
		if why, skip := Check(&rep, 0, call("echo", `{}`), false); skip {
			t.Fatalf("limit 0 stopped a call: %s", why)
		}
	}
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		stop  llm.StopReason
		calls bool
		want  Outcome
		known bool
	}{
		{llm.Refusal, true, Refuse, true},
		{llm.ToolUseStop, true, Act, true},
		{llm.MaxTokens, true, Act, true},
		{llm.MaxTokens, false, Truncate, true},
		{llm.PauseTurn, false, Resume, true},
		{llm.CompactionStop, false, Resume, true},
		{llm.EndTurn, false, Finish, true},
		{llm.StopSequence, false, Finish, true},
		{llm.ToolUseStop, false, Finish, true},
		{"something_new", false, Finish, false},
	} {
		if o, known := Stop(tc.stop, tc.calls); o != tc.want || known != tc.known {
			t.Errorf("Stop(%s, %v) = %v, %v; want %v, %v", tc.stop, tc.calls, o, known, tc.want, tc.known)
		}
	}
}

// TestCut checks what the loop keeps of the blocks max_tokens cut off:
// text as it is, a tool_use with input {} (reported, to be answered), and
// nothing of a cut thinking block.
func TestCut(t *testing.T) {
	msg := llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "whole"}}}
	use := llm.ToolUse{ID: "toolu_1", Name: "write", Input: []byte(`{"path":"a`)}
	got, cut := Cut(msg, []llm.Block{llm.Thinking{Thinking: "hm"}, llm.Text{Text: "par"}, use})
	use.Input = []byte("{}")
	want := []llm.Block{llm.Text{Text: "whole"}, llm.Text{Text: "par"}, use}
	if diff := cmp.Diff(want, got.Content); diff != "" {
		t.Errorf("Cut content (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]llm.ToolUse{use}, cut); diff != "" {
		t.Errorf("Cut calls (-want +got):\n%s", diff)
	}
}

func TestShown(t *testing.T) {
	img := llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}
	for _, tt := range []struct {
		content []llm.Block
		want    string
	}{
		{nil, ""},
		{[]llm.Block{llm.Text{Text: "ok"}}, "ok"},
		{[]llm.Block{llm.Text{Text: " indented"}}, " indented"}, // the text as the tool wrote it
		{[]llm.Block{img}, "[image]"},
		{[]llm.Block{llm.Text{Text: "a plot:"}, img, img}, "a plot: [image] [image]"},
		{[]llm.Block{llm.Text{Text: "The answer is 42."}, llm.Text{Text: "{}"}}, "The answer is 42.\n{}"}, // not "42.{}"
	} {
		if got := Shown(tt.content); got != tt.want {
			t.Errorf("Shown(%v) = %q, want %q", tt.content, got, tt.want)
		}
	}
}
