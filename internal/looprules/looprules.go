// Package looprules is the one statement of the agent loop's own rules, as
// package apirules is of the API's: which tool calls the loop answers
// itself rather than runs, the texts it answers them with, when a call
// repeats the one before, what a turn's stop reason means, and how the
// next request is built from the history. Package agent applies them in
// process and package durable in a Temporal workflow, so that both loops
// decide alike. Nothing here reads the clock or does I/O of its own (Prepare
// logs and compacts only through what it is given), so a workflow may replay it.
package looprules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// Errors both loops end a run or a turn with. A turn out of context window
// is, to the loop, a prompt too long: it compacts and asks again.
var (
	ErrEmptyPrompt   = errors.New("agent: the prompt is empty")
	ErrContextWindow = fmt.Errorf("agent: stop_reason model_context_window_exceeded: %w", llm.ErrPromptTooLong)
)

// Texts of the results and turns the loop writes itself, rather than a tool
// or the model.
const (
	// CutOff answers a call whose input max_tokens cut off.
	CutOff = "not run: your output hit max_tokens while you were writing this call, " +
		"so its input was cut off. Call the tool again with a shorter input, or split the work into smaller calls."
	// Final answers a call of the last, tool-less turn at the iteration limit.
	Final = "not run: the iteration limit was reached; answer with what you have."
	// Interrupted ends the assistant turn of a run cut short.
	Interrupted = "[interrupted]"

	repeating = "not run: you called this tool with this same input %d times in a row, " +
		"so you are repeating yourself. Use the results you already have, or try something different."
	invalid = "not run: your input for this call is not valid JSON: %.200q. Call the tool again with a JSON object."
)

// Check returns why the loop answers call itself instead of running it, in
// the order the loop checks: the final turn's calls, input that is not
// JSON, then a call that came limit times in a row (limit ≤ 0: never). It
// records call in rep, unless an earlier check stopped it. ok is false for a
// call to run.
func Check(rep *Repeats, limit int, call llm.ToolUse, final bool) (why string, ok bool) {
	if final {
		return Final, true
	}
	if raw, bad := apirules.InvalidInput(call.Input); bad {
		return fmt.Sprintf(invalid, raw), true
	}
	if n := rep.See(call); limit > 0 && n >= limit {
		return fmt.Sprintf(repeating, n), true
	}
	return "", false
}

// NotRun is the is_error result of a call the loop did not run, saying why.
func NotRun(id, why string) llm.ToolResult {
	return llm.ToolResult{ToolUseID: id, Content: []llm.Block{llm.Text{Text: why}}, IsError: true}
}

// Shown is a tool result's content as a run's ToolDone event shows it: its
// text blocks, a line apart so that two blocks do not run together, then
// "[image]" for each image, so that an image-only result is not a blank.
func Shown(content []llm.Block) string {
	var texts []string
	for _, b := range content {
		if t, ok := b.(llm.Text); ok {
			texts = append(texts, t.Text)
		}
	}
	s := strings.Join(texts, "\n")
	for _, b := range content {
		if _, ok := b.(llm.Image); ok {
			if s != "" {
				s += " "
			}
			s += "[image]"
		}
	}
	return s
}

// Repeats is the last tool call and how many times in a row it came. It
// holds the input it was given, not a copy, and its JSON form carries it
// across a durable run's continue-as-new.
type Repeats struct {
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	N     int             `json:"n,omitempty"`
}

// See records call and returns how many times in a row it has now come,
// comparing inputs without insignificant whitespace.
func (rp *Repeats) See(call llm.ToolUse) int {
	if rp.N > 0 && call.Name == rp.Name && sameJSON(call.Input, rp.Input) {
		rp.N++
	} else {
		*rp = Repeats{Name: call.Name, Input: call.Input, N: 1}
	}
	return rp.N
}

// sameJSON reports whether JSON texts a and b are equal but for whitespace
// outside strings. It stops at the first difference, so that a big input
// (a written file's) costs next to nothing unless it is a repeat.
func sameJSON(a, b []byte) bool {
	inString, escaped := false, false
	for {
		if !inString {
			a, b = bytes.TrimLeft(a, " \t\r\n"), bytes.TrimLeft(b, " \t\r\n")
		}
		switch {
		case len(a) == 0 || len(b) == 0:
			return len(a) == len(b)
		case a[0] != b[0]:
			return false
		case escaped:
			escaped = false
		case a[0] == '\\':
			escaped = inString
		case a[0] == '"':
			inString = !inString
		}
		a, b = a[1:], b[1:]
	}
}

// Cut appends to msg the blocks max_tokens cut off, as the loop keeps
// them: text as it is, a tool_use with input {} (never run, but answered
// with [CutOff], so that the model writes the call again, shorter); others
// are dropped. It returns the cut calls.
func Cut(msg llm.Message, incomplete []llm.Block) (llm.Message, []llm.ToolUse) {
	var cut []llm.ToolUse
	for _, b := range incomplete {
		switch b := b.(type) {
		case llm.Text:
			msg.Content = append(msg.Content, b)
		case llm.ToolUse:
			b.Input = json.RawMessage("{}")
			msg.Content = append(msg.Content, b)
			cut = append(cut, b)
		}
	}
	return msg, cut
}

// An Outcome is what a turn's stop reason tells the loop to do.
type Outcome int

// The outcomes of [Stop].
const (
	// Act: answer the turn's tool calls, then go on.
	Act Outcome = iota
	// Resume: pause_turn or compaction; send the turn back as it is, to
	// go on.
	Resume
	// Finish: the turn is the answer.
	Finish
	// Truncate: max_tokens cut the answer off; the run ends.
	Truncate
	// Refuse: the model refused; the run ends and the exchange is taken back.
	Refuse
)

// Stop returns what a turn that stopped for stop, with tool calls to
// answer or without, tells the loop to do. Whatever the stop reason
// (tool_use, or max_tokens cutting a later block), answered calls keep the
// history valid and the model going; only a refusal ends the run first.
// known is false for a stop reason this version does not know, which the
// loop treats as end_turn, with a warning.
func Stop(stop llm.StopReason, calls bool) (o Outcome, known bool) {
	switch {
	case stop == llm.Refusal:
		return Refuse, true
	case calls:
		return Act, true
	}
	switch stop {
	case llm.PauseTurn, llm.CompactionStop: // after a compaction, from the summary
		return Resume, true
	case llm.MaxTokens:
		return Truncate, true
	case llm.EndTurn, llm.StopSequence, llm.ToolUseStop: // tool_use: only server tools ran
		return Finish, true
	}
	return Finish, false
}
