package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/memory"
)

// TestTextRenderer checks what a person sees for event sequences, off a
// terminal and on one shared by stdout and stderr (no spinner: these
// writers are not terminals).
func TestTextRenderer(t *testing.T) {
	call := []agent.Event{
		agent.TurnStart{Iteration: 1},
		agent.TextDelta{Text: "Adding."},
		agent.ToolCallStart{ID: "t1", Name: "calc"},
		agent.ToolInputDelta{ID: "t1", PartialJSON: `{"a":`},
		agent.ToolInputDelta{ID: "t1", PartialJSON: `1}`},
		agent.ToolCall{ID: "t1", Name: "calc", Input: json.RawMessage(`{"a": 1}`)},
		agent.ToolDone{ID: "t1", Name: "calc", Content: "one\n  line", Duration: time.Millisecond},
		agent.TurnStart{Iteration: 2},
		agent.TextDelta{Text: "Done"},
		agent.Result{State: agent.Finished, Iterations: 2},
	}
	for _, tc := range []struct {
		name               string
		events             []agent.Event
		sameScreen, lesson bool
		finalOnly          bool
		// term is stdout's terminal; nil means it is not one.
		term           *screen
		stdout, stderr string
	}{
		{
			name:   "tool call, separate streams",
			events: call,
			term:   &screen{},
			stdout: "Adding.\nDone\n",
			stderr: "→ calc#1 {\"a\":1}\n← calc#1 one line\n",
		},
		{
			// On one screen the answer's line is ended before a tool line,
			// and stdout's newlines are the only ones added.
			name:       "tool call, one screen",
			events:     call,
			sameScreen: true,
			term:       &screen{},
			stdout:     "Adding.\nDone\n",
			stderr:     "→ calc#1 {\"a\":1}\n← calc#1 one line\n",
		},
		{
			name:   "lesson shows every fragment",
			events: call[2:7],
			lesson: true,
			stderr: "act     calc#1 tool_use t1: its input arrives in fragments\n" +
				"        {\"a\":│1}│\n" +
				"act     calc#1 assembled, valid JSON; running it: {\"a\":1}\n" +
				"observe calc#1 → one line (sent back as its tool_result)\n",
		},
		{
			name: "thinking is one unbroken run on stderr",
			events: []agent.Event{
				agent.ThinkingDelta{Thinking: "Let me "}, agent.ThinkingDelta{Thinking: "think."},
				agent.TextDelta{Text: "Answer."}, agent.UsageUpdate{}, agent.Result{},
			},
			stdout: "Answer.\n",
			stderr: "Let me think.\n",
		},
		{
			// Off a terminal a turn's text waits for the turn to complete,
			// so a discarded one never reaches stdout.
			name: "a discarded turn never reaches a pipe",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Partial"},
				agent.Retry{Attempt: 2, Error: "overloaded", Discard: true},
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Whole."}, agent.UsageUpdate{}, agent.Result{},
			},
			stdout: "Whole.\n",
			stderr: "retrying the turn (attempt 2): overloaded; its partial output is discarded\n",
		},
		{
			// On a terminal it streams, and is erased: the cursor goes
			// back up the rows the turn wrote (here "ab\ncdefgh" on 4
			// columns: 3 rows down) and clears to the end of the screen.
			name: "a discarded turn is erased from a terminal",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "ab\ncdefgh"},
				agent.Retry{Attempt: 2, Error: "overloaded", Discard: true},
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Whole."}, agent.UsageUpdate{}, agent.Result{},
			},
			term:   &screen{cols: 4, rows: 24},
			stdout: "ab\ncdefgh\r\x1b[2A\x1b[JWhole.\n",
			stderr: "retrying the turn (attempt 2): overloaded; its partial output is discarded\n",
		},
		{
			name: "a discarded turn taller than the terminal is struck",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "1\n2\n3\n4"},
				agent.Retry{Attempt: 2, Error: "overloaded", Discard: true},
			},
			term:   &screen{cols: 80, rows: 3},
			stdout: "1\n2\n3\n4\n~~ the answer above was cut off and is being generated again ~~\n",
			stderr: "retrying the turn (attempt 2): overloaded; its partial output is discarded\n",
		},
		{
			// Off a terminal stdout holds the text of completed turns
			// only: not that of a turn cut short by Ctrl-C or
			// --max-duration, nor of one that failed.
			name: "an unfinished turn's text never reaches a pipe",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Complete."}, agent.UsageUpdate{},
				agent.TurnStart{Iteration: 2},
				agent.TextDelta{Text: "Cut"},
				agent.Result{State: agent.Cancelled},
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Timed out"},
				agent.Result{State: agent.TimeLimit},
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Failed"},
				agent.Result{State: agent.Failed},
			},
			stdout: "Complete.\n",
			stderr: strings.Repeat("the turn in progress did not complete: its partial text is left out of stdout\n", 2),
		},
		{
			// On a terminal it was shown as it streamed, and stays.
			name: "an interrupted turn's text stays on a terminal",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Kept"},
				agent.Result{State: agent.Cancelled},
			},
			term:   &screen{},
			stdout: "Kept\n",
		},
		{
			name: "a result without text",
			events: []agent.Event{
				agent.ToolCall{ID: "t1", Name: "screenshot", Input: json.RawMessage(`{}`)},
				agent.ToolDone{ID: "t1", Name: "screenshot"},
			},
			stderr: "→ screenshot#1 {}\n← screenshot#1 (no text)\n",
		},
		{
			// Nothing a model or a tool sends reaches a terminal raw: not
			// the answer, the thinking, a tool's name, input or result.
			name: "escapes on a terminal",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.ThinkingDelta{Thinking: "\x1b[2Jhm"},
				agent.TextDelta{Text: "\x1b]0;title\x07Hi\n"},
				agent.ToolCall{ID: "t1", Name: "x\x1b[8m", Input: json.RawMessage("{\"s\":\"\u009b\u2800\"}")},
				agent.ToolDone{ID: "t1", Name: "x\x1b[8m", Content: "1\t\x1b[H\x1b[2J$ "},
				agent.UsageUpdate{}, agent.Result{},
			},
			term:   &screen{},
			stdout: "\\x1b]0;title\\aHi\n",
			stderr: "\\x1b[2Jhm\n→ x\\x1b[8m#1 {\"s\":\"\\u009b\\u2800\"}\n← x\\x1b[8m#1 1 \\x1b[H\\x1b[2J$\n",
		},
		{
			// A pipe or a file gets the answer's exact text.
			name: "a pipe gets the answer as written",
			events: []agent.Event{
				agent.TextDelta{Text: "\x1b[1mbold\x1b[0m"}, agent.UsageUpdate{}, agent.Result{},
			},
			stdout: "\x1b[1mbold\x1b[0m\n",
		},
		{
			// Off a terminal stdout gets the final answer alone; the
			// text of a turn that called tools is narration, on stderr.
			name: "final answer only",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Step 1: adding.\n"},
				agent.ToolCallStart{ID: "t1", Name: "calc"},
				agent.ToolCall{ID: "t1", Name: "calc", Input: json.RawMessage(`{}`)},
				agent.ToolDone{ID: "t1", Name: "calc", Content: "3"},
				agent.UsageUpdate{},
				agent.TurnStart{Iteration: 2},
				agent.TextDelta{Text: "Done."}, agent.UsageUpdate{},
				agent.Result{State: agent.Finished},
			},
			finalOnly: true,
			stdout:    "Done.\n",
			stderr:    "→ calc#1 {}\n← calc#1 3\nStep 1: adding.\n",
		},
		{
			// A turn without calls that another follows was not final.
			name: "a turn followed by another is narration",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "First."}, agent.UsageUpdate{},
				agent.TurnStart{Iteration: 2},
				agent.TextDelta{Text: "Second."}, agent.UsageUpdate{},
				agent.Result{State: agent.Finished},
			},
			finalOnly: true,
			stdout:    "Second.\n",
			stderr:    "First.\n",
		},
		{
			// The calls of a discarded attempt are not the retried turn's:
			// each attempt starts with its own TurnStart.
			name: "a retried turn without calls is the answer",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Part"}, agent.ToolCallStart{ID: "t1", Name: "calc"},
				agent.Retry{Attempt: 2, Error: "overloaded", Discard: true},
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Answer."}, agent.UsageUpdate{},
				agent.Result{State: agent.Finished},
			},
			finalOnly: true,
			stdout:    "Answer.\n",
			stderr:    "retrying the turn (attempt 2): overloaded; its partial output is discarded\n",
		},
		{
			// A run that stops at a limit has no final answer.
			name: "a limit leaves stdout empty",
			events: []agent.Event{
				agent.TurnStart{Iteration: 1},
				agent.TextDelta{Text: "Step 1."},
				agent.ToolCallStart{ID: "t1", Name: "calc"}, agent.UsageUpdate{},
				agent.Result{State: agent.IterationLimit},
			},
			finalOnly: true,
			stderr:    "Step 1.\n",
		},
		{
			name:   "compaction",
			events: []agent.Event{agent.Compacted{Compaction: memory.Compaction{Before: 190000, After: 60000, Steps: []string{"summarised 40 messages"}}}},
			stderr: "compacted the history from about 190000 to 60000 tokens (summarised 40 messages)\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw strings.Builder
			r := newTextRenderer(&out, &errw, style{}, false, tc.sameScreen, tc.lesson, tc.term)
			r.finalOnly = tc.finalOnly
			for _, ev := range tc.events {
				r.event(ev, nil)
			}
			r.close()
			if diff := cmp.Diff(tc.stdout, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stderr, errw.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSameFile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	other, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"one pipe twice, as after 2>&1", w, w, true},
		{"two different pipes", w, w2, false},
		{"a pipe and a file", w, other, false},
		{"not files", &strings.Builder{}, w, false},
	} {
		if got := sameFile(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: sameFile = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPauseStopsSpinner checks that pause stops the spinner and that only
// the next event starts it again: a note, by contrast, resumes it, and a
// spinner running under a permission question would draw over it.
func TestPauseStopsSpinner(t *testing.T) {
	var errw bytes.Buffer
	r := newTextRenderer(io.Discard, &errw, style{}, true, false, false, nil)
	running := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.spin.running
	}
	r.event(agent.ToolCall{ID: "toolu_1", Name: "bash", Input: []byte(`{}`)}, nil)
	r.note("a retry")
	if !running() {
		t.Fatal("no spinner after a tool call and a note")
	}
	r.pause()
	if running() {
		t.Error("the spinner still runs after pause")
	}
	r.event(agent.ToolDone{ID: "toolu_1", Name: "bash", Content: "ok"}, nil)
	r.close()
}

// TestPieces checks the text held off a terminal: whatever the sizes of
// the writes, it reads back whole, and no part is copied to grow.
func TestPieces(t *testing.T) {
	for _, tt := range []struct {
		name   string
		writes []string
	}{
		{"none", nil},
		{"small ones", []string{"Hel", "lo", ", ", "world"}},
		{"across parts", []string{strings.Repeat("a", pieceSize-1), "bc", strings.Repeat("d", pieceSize)}},
		{"one larger than a part", []string{"x", strings.Repeat("y", 3*pieceSize+5), "z"}},
	} {
		var p pieces
		for _, w := range tt.writes {
			p.WriteString(w)
		}
		want := strings.Join(tt.writes, "")
		if got := p.String(); got != want || p.Len() != len(want) {
			t.Errorf("%s: held %d bytes (Len %d), want %d", tt.name, len(got), p.Len(), len(want))
		}
		var out bytes.Buffer
		r := &textRenderer{out: &out}
		r.writePieces(&p)
		if out.String() != want || p.Len() != 0 || r.midLine != (want != "") {
			t.Errorf("%s: writePieces wrote %d bytes, left %d held, midLine %v", tt.name, out.Len(), p.Len(), r.midLine)
		}
	}
	var p pieces
	if n := testing.AllocsPerRun(pieceSize, func() { p.WriteString("word ") }); n > 0.01 {
		t.Errorf("a 5-byte write allocates %v times on average, want a part in thousands", n)
	}
}
