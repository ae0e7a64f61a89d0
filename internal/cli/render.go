package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/agent"
)

// A renderer shows a run's events to the user.
type renderer interface {
	// event shows one event; err is the error yielded with it, the run's
	// error when ev is the Result that ends the run.
	event(ev agent.Event, err error)
	// fail shows the error that ended a run.
	fail(err error)
	// note shows a one-line remark, such as a refusal notice.
	note(format string, args ...any)
	// done ends a prompt's run, once its outcome is known (output.go).
	done(e ending)
	// pause stops anything animating until the next event, so that a
	// question can wait on the screen.
	pause()
	// close stops anything still animating.
	close()
}

// textRenderer shows a run to a person: the answer on stdout as it streams,
// everything else on stderr. On a terminal it adds colour (unless NO_COLOR)
// and a spinner; otherwise it prints plain lines and nothing that moves.
//
// A model turn the agent discards (see agent.Retry) must not stay in the
// answer. Off a terminal, where nothing can be taken back, each turn's text
// is held until the turn is complete; on a terminal it streams, and is
// erased if the turn is discarded.
type textRenderer struct {
	out, errw io.Writer
	style     style
	// sameScreen is whether stdout and stderr are both terminals, so that
	// a line on stderr must not land in the middle of the answer.
	sameScreen bool
	// lesson turns on the demo's commentary: a heading for each phase of
	// the loop and every tool-input fragment as it arrives.
	lesson bool

	mu      sync.Mutex // orders writes against the spinner's
	spin    *spinner   // nil when stderr is not a terminal
	midLine bool       // stdout's last write did not end a line
	// errOpen says what stderr's unfinished line holds: "" for none,
	// "thinking", or the id of the call whose input fragments it shows.
	errOpen string
	labels  map[string]string // call id → name#n
	ncalls  int
	running int // calls started and not yet finished

	// screen follows stdout's terminal, to erase a discarded turn; nil
	// when stdout is not a terminal. rawOut is stdout untracked.
	screen *screen
	rawOut io.Writer
	// held is the current turn's text, when stdout is not a terminal.
	held pieces

	// finalOnly keeps stdout to the final turn's answer when stdout is not
	// a terminal: a completed turn that called tools is narration, and
	// goes to stderr; the last one without calls waits in answer for the
	// run's end. --all-turns turns it off.
	finalOnly bool
	turnCalls bool // the current turn called a tool
	answer    pieces
	// summary ends a one-shot run with a line of turns, tokens, cost and
	// files changed (stderr is a terminal); priced says the cost is known.
	summary, priced bool
	// edits are the paths of the file edits in flight, by call id, and
	// changed the paths edited so far in the run.
	edits   map[string]string
	changed map[string]bool
}

// newTextRenderer returns a renderer. outTerm, when stdout is a terminal,
// holds its size (zero when unknown); nil means stdout is not one.
func newTextRenderer(stdout, stderr io.Writer, st style, stderrTerm, sameScreen, lesson bool, outTerm *screen) *textRenderer {
	r := &textRenderer{out: stdout, errw: stderr, rawOut: stdout, style: st, sameScreen: sameScreen, lesson: lesson,
		labels: map[string]string{}, screen: outTerm, edits: map[string]string{}, changed: map[string]bool{}}
	if outTerm != nil {
		r.out = trackingWriter{stdout, outTerm}
		if sameScreen {
			r.errw = trackingWriter{stderr, outTerm}
		}
	}
	if stderrTerm {
		r.spin = newSpinner(r.errw, &r.mu, st)
	}
	return r
}

func (r *textRenderer) event(ev agent.Event, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case agent.TurnStart:
		r.closeErrLine()
		// A turn without tool calls that another follows was not final.
		r.narrate(r.answer.String())
		r.answer.Reset()
		r.turnCalls = false
		// Each turn's text is its own paragraph, even off a terminal.
		if r.midLine {
			io.WriteString(r.out, "\n")
			r.midLine = false
		}
		if r.lesson {
			r.line(r.style.phase("think") + r.style.dim(fmt.Sprintf(" model turn %d: the model streams its reply", ev.Iteration)))
		}
		if r.screen != nil {
			r.screen.mark()
		}
		r.spinLocked("thinking")
	case agent.ThinkingDelta:
		r.stopSpin()
		if r.errOpen != "thinking" {
			r.closeErrLine()
			r.endOutLine()
			r.errOpen = "thinking"
		}
		io.WriteString(r.errw, r.style.dim(printable(ev.Thinking)))
	case agent.TextDelta:
		if r.screen == nil {
			r.held.WriteString(ev.Text)
			return
		}
		r.stopSpin()
		r.closeErrLine()
		r.write(printable(ev.Text))
	case agent.ToolCallStart:
		r.stopSpin()
		r.turnCalls = true
		label := r.label(ev.ID, ev.Name)
		if r.lesson {
			r.line(r.style.phase("act") + " " + r.style.tool(label) + r.style.dim(" tool_use "+ev.ID+": its input arrives in fragments"))
			io.WriteString(r.errw, "        ")
			r.errOpen = ev.ID
		}
		r.spinLocked("writing " + visible(ev.Name) + " input")
	case agent.ToolInputDelta:
		if !r.lesson || r.errOpen != ev.ID {
			return
		}
		r.stopSpin()
		// Each fragment is printed as it came, with a bar after it: the
		// cuts fall anywhere, even inside a key or a number.
		io.WriteString(r.errw, r.style.fragment(visible(ev.PartialJSON))+r.style.dim("│"))
	case agent.ToolCall:
		r.stopSpin()
		r.running++
		if ev.Name == "write_file" || ev.Name == "edit_file" {
			var in struct{ Path string }
			if json.Unmarshal(ev.Input, &in) == nil && in.Path != "" {
				r.edits[ev.ID] = in.Path
			}
		}
		label := r.label(ev.ID, ev.Name)
		if r.lesson {
			r.line(r.style.phase("act") + " " + r.style.tool(label) + r.style.dim(" assembled, valid JSON; running it: ") + compactJSON(ev.Input, 200))
		} else {
			r.line(r.style.tool("→ "+label) + " " + compactJSON(ev.Input, 100))
		}
		r.spinLocked("running " + visible(ev.Name))
	case agent.ToolDone:
		r.stopSpin()
		r.running = max(0, r.running-1)
		if p, ok := r.edits[ev.ID]; ok && !ev.IsError {
			r.changed[p] = true
		}
		delete(r.edits, ev.ID)
		label := r.label(ev.ID, ev.Name)
		content := shorten(ev.Content, 200)
		if content == "" {
			// A result without text, such as an image alone, is not
			// nothing; a blank would look like a glitch.
			content = "(no text)"
		}
		switch {
		case r.lesson && ev.IsError:
			r.line(r.style.phase("observe") + " " + r.style.tool(label) + " " + r.style.err("error: "+content) + r.style.dim(" (sent back as an is_error tool_result)"))
		case r.lesson:
			r.line(r.style.phase("observe") + " " + r.style.tool(label) + " → " + content + r.style.dim(" (sent back as its tool_result)"))
		case ev.IsError:
			r.line(r.style.err("✗ "+label+" error: ") + content)
		default:
			r.line(r.style.tool("← "+label) + " " + content)
		}
		if r.running > 0 {
			r.spinLocked("running tools")
		} else {
			r.spinLocked("thinking")
		}
	case agent.UsageUpdate:
		// The turn is complete: its text can no longer be discarded.
		switch {
		case !r.finalOnly:
			r.flush()
		case r.turnCalls:
			r.narrate(r.held.String())
			r.held.Reset()
		default:
			r.answer, r.held = r.held, r.answer
			r.held.Reset()
		}
		if note := serverToolNote(ev.Turn.ServerToolUse); note != "" {
			r.line(r.style.dim(note))
		}
		if r.lesson {
			r.stopSpin()
			r.line(r.style.dim(fmt.Sprintf("        usage: %d input tokens, %d output tokens this turn",
				ev.Turn.InputTokens+ev.Turn.CacheReadInputTokens+ev.Turn.CacheCreationInputTokens, ev.Turn.OutputTokens)))
		}
	case agent.Compacted:
		r.stopSpin()
		msg := fmt.Sprintf("compacted the history from about %d to %d tokens", ev.Before, ev.After)
		if len(ev.Steps) > 0 {
			msg += " (" + visible(strings.Join(ev.Steps, ", ")) + ")"
		}
		r.line(r.style.dim(msg))
	case agent.Retry:
		r.stopSpin()
		r.closeErrLine()
		msg := fmt.Sprintf("retrying the turn (attempt %d): %s", ev.Attempt, shorten(strings.TrimPrefix(ev.Error, "llm: "), 100))
		if ev.Discard {
			r.discard()
			msg += "; its partial output is discarded"
		}
		r.line(r.style.warn(msg))
		r.spinLocked("thinking")
	case agent.Nested:
		r.nested(ev, 1)
	case agent.Result:
		r.stopSpin()
		r.closeErrLine()
		// Text still held is a turn's that never completed (a run cut
		// short or failed mid-turn): it never reaches a pipe or a file.
		if r.held.Len() > 0 && ev.State != agent.Failed {
			r.line(r.style.warn("the turn in progress did not complete: its partial text is left out of stdout"))
		}
		r.held.Reset()
		r.writePieces(&r.answer)
		if r.midLine {
			io.WriteString(r.out, "\n")
			r.midLine = false
		}
		if r.lesson {
			r.line(r.style.phase("done") + r.style.dim(fmt.Sprintf(" %s after %s: %d input and %d output tokens",
				ev.State, plural(ev.Iterations, "model turn", "model turns"), ev.Usage.InputTokens+ev.Usage.CacheReadInputTokens+ev.Usage.CacheCreationInputTokens, ev.Usage.OutputTokens)))
		}
	}
}

// write writes text of the answer to stdout.
func (r *textRenderer) write(text string) {
	io.WriteString(r.out, text)
	if text != "" {
		r.midLine = !strings.HasSuffix(text, "\n")
	}
}

// flush writes the text held for the current turn.
func (r *textRenderer) flush() {
	if r.held.Len() == 0 {
		return
	}
	r.closeErrLine()
	r.writePieces(&r.held)
}

// writePieces writes text of the answer held in p to stdout, and empties p.
func (r *textRenderer) writePieces(p *pieces) {
	for _, b := range p.parts {
		r.out.Write(b)
	}
	if p.n > 0 {
		last := p.parts[len(p.parts)-1]
		r.midLine = last[len(last)-1] != '\n'
	}
	p.Reset()
}

// discard takes back the current turn's text: the held text off a
// terminal; on one, all the turn wrote, erased. When the start of the turn
// has scrolled off the screen, a struck-through line says that the text
// above it is void.
func (r *textRenderer) discard() {
	if r.screen == nil {
		r.held.Reset()
		return
	}
	if seq, ok := r.screen.erase(); ok {
		io.WriteString(r.rawOut, seq)
		r.midLine = false
		return
	}
	if r.midLine {
		io.WriteString(r.out, "\n")
	}
	io.WriteString(r.out, r.style.strike("the answer above was cut off and is being generated again")+"\n")
	r.midLine = false
}

// label returns the short name of call id, name#n, numbering the calls of
// the session in the order they appear.
func (r *textRenderer) label(id, name string) string {
	l, ok := r.labels[id]
	if !ok {
		r.ncalls++
		l = fmt.Sprintf("%s#%d", visible(name), r.ncalls)
		r.labels[id] = l
	}
	return l
}

func (r *textRenderer) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopSpin()
	r.closeErrLine()
}

func (r *textRenderer) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A note can come mid-turn (a retry's): the spinner goes on after it.
	spinning := r.spin != nil && r.spin.running
	r.stopSpin()
	r.line(r.style.warn(visible(fmt.Sprintf(format, args...))))
	if spinning {
		r.spinLocked(r.spin.label)
	}
}

func (r *textRenderer) pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopSpin()
	r.closeErrLine()
	r.endOutLine()
}

func (r *textRenderer) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopSpin()
}

// line writes s as a line of its own on stderr.
func (r *textRenderer) line(s string) {
	r.closeErrLine()
	r.endOutLine()
	io.WriteString(r.errw, s+"\n")
}

// endOutLine ends the answer's unfinished line when stdout and stderr
// share a screen, so that stderr's next line does not land in its middle.
func (r *textRenderer) endOutLine() {
	if r.midLine && r.sameScreen {
		io.WriteString(r.out, "\n")
		r.midLine = false
	}
}

// closeErrLine ends stderr's unfinished line of thinking or fragments.
func (r *textRenderer) closeErrLine() {
	if r.errOpen != "" {
		io.WriteString(r.errw, "\n")
		r.errOpen = ""
	}
}

// spinLocked starts the spinner, or changes its label. The spinner clears
// its line as it draws, so it never starts on an unfinished line of stderr,
// nor, on a shared screen, of the answer.
func (r *textRenderer) spinLocked(label string) {
	if r.spin == nil || r.errOpen != "" {
		return
	}
	r.endOutLine()
	r.spin.start(label)
}

func (r *textRenderer) stopSpin() {
	if r.spin != nil {
		r.spin.stop()
	}
}

// plural returns n and the noun for it: "1 model turn", "2 model turns".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// pieces holds text that grows by small writes, as a streamed answer does,
// in parts of at least pieceSize bytes that are never copied to grow: a
// strings.Builder holding a 500 KB answer allocates five times that, in
// ever larger buffers that none of the freed ones fits, and the process
// keeps the pages of every one of them.
type pieces struct {
	parts [][]byte
	n     int // the length of the text
}

// pieceSize is the least size of a part: large enough that a long answer
// takes few, small enough that a short one wastes little.
const pieceSize = 32 << 10

// WriteString appends s.
func (p *pieces) WriteString(s string) {
	p.n += len(s)
	for len(s) > 0 {
		if len(p.parts) == 0 || len(p.parts[len(p.parts)-1]) == cap(p.parts[len(p.parts)-1]) {
			p.parts = append(p.parts, make([]byte, 0, max(pieceSize, len(s))))
		}
		last := &p.parts[len(p.parts)-1]
		k := min(len(s), cap(*last)-len(*last))
		*last = append(*last, s[:k]...)
		s = s[k:]
	}
}

// Len returns the length of the text.
func (p *pieces) Len() int { return p.n }

// String returns the text as one string.
func (p *pieces) String() string {
	var b strings.Builder
	b.Grow(p.n)
	for _, part := range p.parts {
		b.Write(part)
	}
	return b.String()
}

// Reset empties p.
func (p *pieces) Reset() { p.parts, p.n = nil, 0 }
