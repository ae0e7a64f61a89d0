package agent

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// A pending call is a tool call started while its turn streams. res and
// took (start to finish, not to collection) are set before done closes.
type pending struct {
	call tool.Call
	done chan struct{}
	res  llm.ToolResult
	took time.Duration
}

// result waits for the call to finish and returns its result.
func (p *pending) result() llm.ToolResult {
	<-p.done
	return p.res
}

// Texts of the results the loop writes itself, rather than a tool.
const (
	repeatingText = "not run: you called this tool with this same input %d times in a row, " +
		"so you are repeating yourself. Use the results you already have, or try something different."
	cutOffText = "not run: your output hit max_tokens while you were writing this call, " +
		"so its input was cut off. Call the tool again with a shorter input, or split the work into smaller calls."
	finalText   = "not run: the iteration limit was reached; answer with what you have."
	invalidText = "not run: your input for this call is not valid JSON: %.200q. Call the tool again with a JSON object."
)

// startCall reports the call of tu and starts it under the turn's ctx,
// unless the turn is the final, tool-less one, the input is not JSON, or
// the repeat check or Approve stops it. The checks run on the goroutine
// reading the stream, to see calls in order and let Approve ask a person.
// rep is the turn's copy of the repeat state, kept only if the turn is.
func (r *run) startCall(ctx context.Context, rep *repeats, tu llm.ToolUse, final bool) *pending {
	call := tool.Call{ID: tu.ID, Name: tu.Name, Input: tu.Input}
	r.emit(ToolCall{ID: call.ID, Name: call.Name, Input: call.Input})
	if final {
		return notRun(call, finalText)
	}
	if raw, bad := llm.InvalidInput(llm.ToolUse{Input: call.Input}); bad {
		return notRun(call, fmt.Sprintf(invalidText, raw))
	}
	if n := rep.see(call); r.cfg.RepeatLimit > 0 && n >= r.cfg.RepeatLimit {
		return notRun(call, fmt.Sprintf(repeatingText, n))
	}
	if r.cfg.Approve != nil {
		if err := r.cfg.Approve(ctx, call); err != nil {
			return notRun(call, "denied: "+err.Error())
		}
	}
	ctx, span := r.otel.StartTool(ctx, call.Name, call.ID, call.Input) // otel hook: the execute_tool span
	p := &pending{call: call, done: make(chan struct{})}
	began, wait := time.Now(), r.cfg.Registry.Start(ctx, call)
	// Waiting here times the call, not the stream; wait returns once ctx ends.
	go func() {
		p.res = wait()
		p.took = time.Since(began)
		r.otel.EndTool(span, p.res.IsError, llm.TextOf(p.res.Content)) // otel hook
		close(p.done)
	}()
	return p
}

// notRun returns a call that was not run, whose is_error result says why.
func notRun(call tool.Call, why string) *pending {
	p := &pending{call: call, done: make(chan struct{}),
		res: llm.ToolResult{ToolUseID: call.ID, Content: []llm.Block{llm.Text{Text: why}}, IsError: true}}
	close(p.done)
	return p
}

// repeats is the last tool call, and how many times in a row it came, for
// [Config.RepeatLimit]. It holds the input the history holds, not a copy.
type repeats struct {
	call tool.Call
	n    int
}

// see records call and returns how many times in a row it has now come.
func (rp *repeats) see(call tool.Call) int {
	if rp.n > 0 && call.Name == rp.call.Name && sameJSON(call.Input, rp.call.Input) {
		rp.n++
	} else {
		*rp = repeats{call: call, n: 1}
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

// act appends turn t and the results of its calls, in tool_use order, to
// the history.
func (r *run) act(t *turn) {
	defer t.cancel()
	h := r.cfg.History
	h.AppendAssistant(t.msg, t.usage)
	r.repeats = t.repeats
	results := make([]llm.ToolResult, len(t.calls))
	for i, p := range t.calls {
		results[i] = p.result()
		r.traceNotRun(p) // otel hook
		r.emit(ToolDone{
			ID:       p.call.ID,
			Name:     p.call.Name,
			Content:  shownText(results[i].Content),
			IsError:  results[i].IsError,
			Duration: p.took,
		})
	}
	h.AppendToolResults(results)
}

// shownText is a result as [ToolDone] shows it: its text, then "[image]"
// for each image, so that an image-only result is not a blank.
func shownText(content []llm.Block) string {
	s := llm.TextOf(content)
	for _, b := range content {
		if _, ok := b.(llm.Image); ok {
			s += " [image]"
		}
	}
	return strings.TrimPrefix(s, " ")
}

// discard cancels the calls t started and waits for them to return.
func (t *turn) discard() {
	t.cancel()
	for _, p := range t.calls {
		p.result()
	}
}
