package cli

import (
	"regexp"
	"strings"
	"testing"
)

// sgr matches an escape sequence that sets colours.
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestDemo(t *testing.T) {
	h := newHarness(t)
	h.env = map[string]string{} // no key, no base URL: the demo needs neither
	r := h.run(strings.NewReader(""), "demo")
	r.check(t, 0)
	want := "I'll work out both parts at once.\n84 and 12. Now the sum.\nThe sum is 96. Squaring it:\n" +
		"12 × 7 = 84 and 144 ÷ 12 = 12, which add up to 96. Squared, that is 9216.\n"
	if r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	for _, want := range []string{
		"think", "act", "observe", "done",
		// The fragments, exactly as streamed, cut mid-token.
		`{"a": 1│2, "b"│: 7, "op│eration": "mul│tiply"}│`,
		`calculator#1 assembled, valid JSON; running it: {"a":12,"b":7,"operation":"multiply"}`,
		"calculator#1 → 84",
		"calculator#2 → 12",
		"calculator#3 → 96",
		"calculator#4 → 9216",
		"finished after 4 model turns",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if sgr.MatchString(r.stderr) {
		t.Errorf("colour off a terminal:\n%q", r.stderr)
	}
}

func TestDemoJSON(t *testing.T) {
	h := newHarness(t)
	r := h.run(strings.NewReader(""), "--json", "demo")
	r.check(t, 0)
	types := jsonTypes(t, r.stdout)
	n := 0
	for _, ty := range types {
		if ty == "tool_done" {
			n++
		}
	}
	if n != 4 || types[len(types)-1] != "done" {
		t.Errorf("events %v: want 4 tool results and done last", types)
	}
}

// TestDemoTerminal runs the demo as if on a terminal, unpaced, to exercise
// the colours and the spinner, and checks that NO_COLOR turns colour off.
func TestDemoTerminal(t *testing.T) {
	for _, noColor := range []bool{false, true} {
		h := newHarness(t)
		h.terminals = map[string]bool{"stdin": true, "stdout": true, "stderr": true}
		if noColor {
			h.env["NO_COLOR"] = "1"
		}
		r := h.run(strings.NewReader(""), "demo", "--fast")
		r.check(t, 0)
		if got := sgr.MatchString(r.stderr); got == noColor {
			t.Errorf("NO_COLOR=%v: colour on stderr is %v:\n%q", noColor, got, r.stderr)
		}
		if !strings.Contains(r.stdout, "9216") {
			t.Errorf("no answer on stdout:\n%s", r.stdout)
		}
	}
}
