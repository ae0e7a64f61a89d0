package durable

import (
	"bytes"
	"encoding/json"

	"github.com/agentloop/agentloop/tool"
)

// This file mirrors decisions of package agent that it does not export, so
// that a durable run decides exactly as an in-process one. Each piece names
// what it mirrors; when agent exports them, these copies go.

// Texts of the results the loop writes itself. They mirror agent/act.go's
// repeatingText, cutOffText, finalText and invalidText, and agent/loop.go's
// interruptedText.
const (
	repeatingText = "not run: you called this tool with this same input %d times in a row, " +
		"so you are repeating yourself. Use the results you already have, or try something different."
	cutOffText = "not run: your output hit max_tokens while you were writing this call, " +
		"so its input was cut off. Call the tool again with a shorter input, or split the work into smaller calls."
	finalText       = "not run: the iteration limit was reached; answer with what you have."
	invalidText     = "not run: your input for this call is not valid JSON: %.200q. Call the tool again with a JSON object."
	interruptedText = "[interrupted]"
)

// see records call and returns how many times in a row it has now come,
// comparing inputs without insignificant whitespace. It mirrors
// agent/act.go's repeats.see.
func (rp *Repeat) see(call tool.Call) int {
	var buf bytes.Buffer
	input := string(call.Input)
	if json.Compact(&buf, call.Input) == nil {
		input = buf.String()
	}
	if call.Name == rp.Name && input == rp.Input {
		rp.N++
	} else {
		*rp = Repeat{Name: call.Name, Input: input, N: 1}
	}
	return rp.N
}
