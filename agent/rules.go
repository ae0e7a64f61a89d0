package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// This file holds the loop's own rules: the texts it answers calls with
// itself (startCall decides which), repeat detection, what it keeps of a
// cut or interrupted turn. They read nothing from the world, so that a
// workflow replaying the loop decides alike.

var (
	errEmptyPrompt = errors.New("agent: the prompt is empty")
	// A turn out of context window is, to the loop, a prompt too long: it
	// compacts and asks again.
	errContextWindow = fmt.Errorf("agent: stop_reason model_context_window_exceeded: %w", llm.ErrPromptTooLong)
)

// Texts of the results and turns the loop writes itself, rather than a
// tool or the model.
const (
	// cutOff answers a call whose input max_tokens cut off.
	cutOff = "not run: your output hit max_tokens while you were writing this call, " +
		"so its input was cut off. Call the tool again with a shorter input, or split the work into smaller calls."
	// finalNotRun answers a call of the last, tool-less turn at the iteration limit.
	finalNotRun = "not run: the iteration limit was reached; answer with what you have."
	// interrupted ends the assistant turn of a run cut short.
	interrupted = "[interrupted]"

	repeating = "not run: you called this tool with this same input %d times in a row, " +
		"so you are repeating yourself. Use the results you already have, or try something different."
	invalid = "not run: your input for this call is not valid JSON: %.200q. Call the tool again with a JSON object."
)

// DefaultMaxIterations is [Config].MaxIterations when it is zero.
const DefaultMaxIterations = 20

// shown is a tool result's content as ToolDone shows it: its text blocks,
// a line apart so that two blocks do not run together, then "[image]" for
// each image, so that an image-only result is not a blank.
func shown(content []llm.Block) string {
	var texts, parts []string
	for _, b := range content {
		switch b := b.(type) {
		case llm.Text:
			texts = append(texts, b.Text)
		case llm.Image:
			parts = append(parts, "[image]")
		}
	}
	if s := strings.Join(texts, "\n"); s != "" {
		parts = append([]string{s}, parts...)
	}
	return strings.Join(parts, " ")
}

// repeats is the last tool call and how many times in a row it came. It
// holds the input it was given, not a copy.
type repeats struct {
	name  string
	input json.RawMessage
	n     int
}

// see records call and returns how many times in a row it has now come,
// comparing inputs without insignificant whitespace.
func (rp *repeats) see(call llm.ToolUse) int {
	if rp.n > 0 && call.Name == rp.name && sameJSON(call.Input, rp.input) {
		rp.n++
	} else {
		*rp = repeats{name: call.Name, input: call.Input, n: 1}
	}
	return rp.n
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

// cut appends to t the blocks max_tokens cut off, as the loop keeps them:
// text as it is, a tool_use with input {} (never run, but answered with
// cutOff, so that the model writes the call again, shorter); others are
// dropped.
func (r *run) cut(t *turn, incomplete []llm.Block) {
	for _, b := range incomplete {
		switch b := b.(type) {
		case llm.Text:
			t.msg.Content = append(t.msg.Content, b)
		case llm.ToolUse:
			b.Input = json.RawMessage("{}")
			t.msg.Content = append(t.msg.Content, b)
			t.calls = append(t.calls, r.notRun(b, cutOff))
		}
	}
}

// thinks reports whether a request thinks, so that context editing may
// clear old thinking: as configured, or always, on a model whose thinking
// cannot be off. A model that thinks by default but may be turned off
// counts as not thinking when nothing asks it to, since clear_thinking
// without thinking is a 400.
func thinks(model llm.ModelInfo, th *llm.ThinkingConfig) bool {
	return th != nil && (th.Adaptive || th.BudgetTokens > 0) || !slices.Contains(model.Thinking, "disabled")
}

// interrupt ends the history of a run cut short with the answer shown so
// far, marked interrupted, so that the next prompt follows a complete
// exchange; unless the last message already answers the user's.
func interrupt(h *memory.History, shown string) {
	if msgs := h.Messages(); len(msgs) == 0 || msgs[len(msgs)-1].Role != llm.User {
		return
	}
	var blocks []llm.Block
	if !apirules.IsBlank(shown) {
		blocks = append(blocks, llm.Text{Text: shown})
	}
	h.AppendAssistant(llm.Message{Role: llm.Assistant, Content: append(blocks, llm.Text{Text: interrupted})}, llm.Usage{})
}

// serverCompaction returns the compaction the API did while it wrote msg,
// if it did. h, which msg has not joined yet, gives the count before (it
// keeps the compaction block in place of what it summarises), and usage,
// the turn's after the compaction, what the model reads now.
func serverCompaction(h *memory.History, msg llm.Message, usage llm.Usage) (memory.Compaction, bool) {
	for _, b := range msg.Content {
		if rb, ok := b.(llm.RawBlock); ok && rb.Type == apirules.CompactionBlock {
			return memory.Compaction{Before: h.Tokens(), After: int(usage.Context()), Steps: []string{"on the server"}}, true
		}
	}
	return memory.Compaction{}, false
}
