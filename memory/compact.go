package memory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// ErrCannotCompact means Compact could not bring the history under
// Config.ContextLimit within its steps: typically the newest turn alone is
// too large.
var ErrCannotCompact = errors.New("memory: cannot compact the history under the context limit")

// summaryPrompt is the system prompt of the summarisation call.
//
//go:embed summary_prompt.md
var summaryPrompt string

// Bounds of compaction: the summary call's max_tokens, and the steps one
// Compact takes, so that a history that cannot shrink fails with
// [ErrCannotCompact] instead of looping.
const (
	summaryMaxTokens   = 4096
	maxCompactionSteps = 6
)

// Texts compaction writes into the history.
const (
	clearedResult = "[tool result cleared to save context]"
	clearedImage  = "[image removed to save context]"
	summaryHeader = "[This conversation was compacted to fit the context window. Summary of the earlier part:]\n\n"
	cutHeader     = "[Earlier turns of this conversation were removed to fit the context window.]"
)

// Compaction reports what one [History.Compact] call did.
type Compaction struct {
	// Before and After are the token counts around the compaction.
	Before, After int
	// Steps says what each step did, such as "cleared 12 tool results".
	Steps []string
	// Usage is the usage of the summarisation calls.
	Usage llm.Usage
}

// Compact shrinks the history below 60% of Config.ContextLimit, in
// escalating steps, counting again after each and stopping as soon as it is below:
//
//  1. Clear old tool results: outside the newest Config.KeepRecent turns,
//     tool result contents and images become a short placeholder. The
//     pairs stay, and no model call is needed.
//  2. Summarise the older part with m: one call, no tools, a dedicated
//     prompt, on a transcript of the turns before the newest KeepRecent.
//     The summary, which keeps the original task and the key facts,
//     replaces them as the first (user) message. If still too large it
//     summarises again, keeping fewer turns.
//  3. Only if the history is still over Config.ContextLimit: a hard cut
//     that drops the oldest turns, keeping the summary or the start of the
//     original task in a note.
//
// Every cut falls before an assistant message, so it is between complete
// turns: no tool_use loses its result and the first message stays a user
// message. A nil m skips step 2. A failed summary call falls through to
// step 3, except for a cancelled ctx. After six steps,
// or when nothing more can be removed, Compact returns an error wrapping
// [ErrCannotCompact] if the history is still over the limit.
func (h *History) Compact(ctx context.Context, m llm.Model) (Compaction, error) {
	c := Compaction{Before: h.Tokens()}
	if fixes := h.Repair(); fixes != nil {
		c.Steps = append(c.Steps, "repaired: "+strings.Join(fixes, ", "))
	}
	limit := h.cfg.ContextLimit
	target := max(1, limit*6/10)
	tokens := h.recount(ctx)
	steps := 0

	if tokens > target && steps < maxCompactionSteps {
		if n, imgs := h.clearOld(h.cfg.KeepRecent); n+imgs > 0 {
			steps++
			c.Steps = append(c.Steps, fmt.Sprintf("cleared %d tool results and %d images", n, imgs))
			tokens = h.recount(ctx)
		}
	}

	keep := h.cfg.KeepRecent
	for m != nil && tokens > target && steps < maxCompactionSteps {
		n, u, err := h.summarise(ctx, m, keep)
		c.Usage = c.Usage.Add(u)
		if err != nil {
			if ctx.Err() != nil {
				c.After = h.Tokens()
				return c, err
			}
			h.cfg.Logger.Warn("memory: summary failed", "err", err)
			c.Steps = append(c.Steps, "summary failed: "+err.Error())
			break
		}
		if n == 0 {
			if keep == 1 {
				break
			}
			keep = max(1, keep/2)
			continue
		}
		steps++
		c.Steps = append(c.Steps, fmt.Sprintf("summarised %d messages", n))
		tokens = h.recount(ctx)
		keep = max(1, keep/2) // if still too large, the next summary takes more
	}

	if tokens > limit && steps < maxCompactionSteps {
		if n := h.hardCut(target, limit); n > 0 {
			steps++
			c.Steps = append(c.Steps, fmt.Sprintf("dropped %d messages", n))
			tokens = h.recount(ctx)
		}
	}

	c.After = tokens
	h.cfg.Logger.Info("memory: compacted", "before", c.Before, "after", c.After, "steps", c.Steps)
	if tokens > limit {
		return c, fmt.Errorf("%w: %d tokens after %d steps, limit %d", ErrCannotCompact, tokens, steps, limit)
	}
	return c, nil
}

// cutIndex returns the index of the keep-th assistant message from the end:
// the first message compaction keeps. It returns 0 when there is no such
// message after the first.
func (h *History) cutIndex(keep int) int {
	seen := 0
	for i := len(h.entries) - 1; i >= 1; i-- {
		if h.entries[i].msg.Role == llm.Assistant {
			seen++
			if seen == keep {
				return i
			}
		}
	}
	return 0
}

// clearOld replaces tool result contents and images before the newest keep
// turns with placeholders, and reports how many of each it cleared.
func (h *History) clearOld(keep int) (results, images int) {
	end := h.cutIndex(keep)
	first := -1
	for i := range h.entries[:end] {
		e := &h.entries[i]
		if e.msg.Role != llm.User {
			continue
		}
		content, changed := slices.Clone(e.msg.Content), false
		for j, b := range content {
			switch b := b.(type) {
			case llm.ToolResult:
				if len(b.Content) == 1 && llm.TextOf(b.Content) == clearedResult {
					continue
				}
				// Copied, not added to: a checkpoint may share the map.
				if e.original = maps.Clone(e.original); e.original == nil {
					e.original = map[string][]llm.Block{}
				}
				e.original[b.ToolUseID] = b.Content
				b.Content = []llm.Block{llm.Text{Text: clearedResult}}
				content[j], changed = b, true
				results++
			case llm.Image:
				content[j], changed = llm.Text{Text: clearedImage}, true
				images++
			}
		}
		if changed {
			e.msg = llm.Message{Role: llm.User, Content: content}
			e.chars, e.imageTokens = measure(e.msg)
			if first < 0 {
				first = i
			}
		}
	}
	if first >= 0 {
		h.changed(first)
	}
	return results, images
}

// summarise replaces the messages before the newest keep turns with a
// summary written by m, and returns how many messages it replaced (zero
// when there is nothing worth summarising) and the call's usage.
func (h *History) summarise(ctx context.Context, m llm.Model, keep int) (int, llm.Usage, error) {
	end := h.cutIndex(keep)
	// The transcript must fit the summariser's own window, with a 10%
	// margin for the estimate.
	promptTokens := int(float64(len(summaryPrompt)) / h.ratio)
	budget := int(float64(h.cfg.ContextWindow-summaryMaxTokens-promptTokens) * 0.9 * h.ratio)
	for end > 0 && transcriptLen(h.entries[:end]) > budget {
		end = h.prevAssistant(end)
	}
	if end < 2 { // nothing before the first kept turn but its request
		return 0, llm.Usage{}, nil
	}
	req := llm.Request{
		Model:     h.cfg.SummaryModel,
		MaxTokens: summaryMaxTokens,
		System:    summaryPrompt,
		Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{
			Text: "<transcript>\n" + transcript(h.entries[:end]) + "</transcript>\n\nWrite the summary of this transcript now.",
		}}}},
	}
	summary, u, err := collectText(ctx, m, req)
	if err != nil {
		return 0, u, fmt.Errorf("memory: summarise: %w", err)
	}
	if apirules.IsBlank(summary) {
		return 0, u, errors.New("memory: summarise: the model returned no text")
	}
	e := entry{msg: llm.Message{Role: llm.User, Content: []llm.Block{llm.Text{Text: summaryHeader + strings.TrimSpace(summary)}}},
		usage: u, model: h.cfg.SummaryModel, summary: true}
	e.chars, e.imageTokens = measure(e.msg)
	h.entries = append([]entry{e}, h.entries[end:]...)
	h.changed(0)
	return end, u, nil
}

// prevAssistant returns the index of the last assistant message before i,
// or 0.
func (h *History) prevAssistant(i int) int {
	for j := i - 1; j >= 1; j-- {
		if h.entries[j].msg.Role == llm.Assistant {
			return j
		}
	}
	return 0
}

// hardCut drops the oldest turns, keeping the most that fit target (or, if
// none does, only the newest turn as long as that fits limit), behind a
// note. It returns how many messages it dropped.
func (h *History) hardCut(target, limit int) int {
	head := h.cutHead()
	headTokens := h.estimate([]entry{head}, true)
	best := 0
	for k := len(h.entries) - 1; k >= 1; k-- {
		if h.entries[k].msg.Role != llm.Assistant {
			continue
		}
		n := headTokens + h.estimate(h.entries[k:], false)
		if n > target && best != 0 || n > limit {
			break
		}
		best = k
	}
	if best == 0 || head.summary && best == 1 {
		return 0
	}
	dropped := best
	if head.summary {
		dropped-- // the old head is the new head
	}
	h.entries = append([]entry{head}, h.entries[best:]...)
	h.changed(0)
	return dropped
}

// cutHead returns the first message after a hard cut: an earlier summary
// when there is one, else a note quoting the start of the original task.
func (h *History) cutHead() entry {
	if len(h.entries) > 0 && h.entries[0].summary {
		return h.entries[0]
	}
	note := cutHeader
	if len(h.entries) > 0 {
		if task := llm.TextOf(h.entries[0].msg.Content); !apirules.IsBlank(task) {
			note += "\n\nThe conversation began with this request:\n\n" + truncate(task, 2000)
		}
	}
	e := entry{msg: llm.Message{Role: llm.User, Content: []llm.Block{llm.Text{Text: note}}}}
	e.chars, e.imageTokens = measure(e.msg)
	return e
}

// collectText runs one call and returns its text and usage.
func collectText(ctx context.Context, m llm.Model, req llm.Request) (string, llm.Usage, error) {
	var asm llm.Assembler
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return "", asm.Usage(), err
		}
		asm.Add(ev)
	}
	if !asm.Done() {
		return "", asm.Usage(), llm.ErrIncompleteStream
	}
	return llm.TextOf(asm.Message().Content), asm.Usage(), nil
}

// truncate cuts s to about n bytes, on a rune boundary, saying how much
// it cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… [%d more bytes]", len(s)-n)
}
