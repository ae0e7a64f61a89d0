package memory

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// ErrCannotCompact means Compact could not bring the history under
// Config.ContextLimit: typically the newest turn alone is too large.
var ErrCannotCompact = errors.New("memory: cannot compact the history under the context limit")

// summaryPrompt is the system prompt of the summarisation call.
//
//go:embed summary_prompt.md
var summaryPrompt string

const (
	summaryMaxTokens   = 4096 // the summary call's max_tokens
	maxCompactionSteps = 6    // so that a history that cannot shrink fails instead of looping
	// maxResultChars caps each tool result in a summary's transcript: one
	// huge result must not crowd out the rest of the conversation.
	maxResultChars = 4000

	// Texts compaction and repair write into the history. serverNote opens
	// a history the server compacted, which must still open with a user
	// message; the API drops it, as all before the block.
	clearedResult     = "[tool result cleared to save context]"
	clearedImage      = "[image removed to save context]"
	summaryHeader     = "[This conversation was compacted to fit the context window. Summary of the earlier part:]\n\n"
	cutHeader         = "[Earlier turns of this conversation were removed to fit the context window.]"
	serverNote        = "[Earlier turns were compacted on the server; the compaction block that follows holds their summary.]"
	interruptedResult = "not executed: interrupted" // answers a tool call that never got a result
)

// Compaction reports what one [History.Compact] call did.
type Compaction struct {
	Before int       `json:"before"`          // the token count before compacting
	After  int       `json:"after"`           // the token count after
	Steps  []string  `json:"steps,omitempty"` // what each step did, such as "summarised 12 messages"
	Usage  llm.Usage `json:"usage,omitzero"`  // of the summarisation calls
}

// Compact shrinks the history below 60% of Config.ContextLimit, in
// escalating steps, counting again after each and stopping once below:
//
//  1. Outside the newest Config.KeepRecent turns, tool result contents and
//     images become a short placeholder; no model call is needed.
//  2. In "server" mode, on a model with [llm.ModelInfo].ServerCompaction,
//     m's server summarises the whole history; failing that, or elsewhere,
//     m summarises the turns before the newest KeepRecent, in one call
//     without tools, and the summary, which keeps the original task and the
//     key facts, replaces them as the first (user) message. If still too
//     large, it summarises again, keeping fewer turns. A nil m skips this.
//  3. Only if still over Config.ContextLimit, a hard cut drops the oldest
//     turns, keeping the summary (the server's: its note and block) or the
//     start of the original task.
//
// Every cut falls before an assistant turn, between complete turns, so that
// no tool_use loses its result in a history [History.Repair] left valid, as
// the agent's is at each request. A failed summary call falls through to
// step 3, unless ctx is done; no summary starts after six steps, lest a
// history that does not shrink loop. If still over the limit after step 3,
// the error wraps [ErrCannotCompact]. With Config.Compaction "off" it
// changes nothing and returns that error at once.
func (h *History) Compact(ctx context.Context, m llm.Model) (Compaction, error) {
	c := Compaction{Before: h.Tokens()}
	if h.strategy() == "off" {
		return c, fmt.Errorf("%w: compaction is off", ErrCannotCompact)
	}
	limit, target := h.cfg.ContextLimit, max(1, h.cfg.ContextLimit*6/10)
	c.After = h.recount(ctx) // and again after each step that did something
	did := func(format string, args ...any) {
		c.Steps = append(c.Steps, fmt.Sprintf(format, args...))
		c.After = h.recount(ctx)
	}

	if c.After > target {
		if n, imgs := h.clearOld(h.cfg.KeepRecent); n+imgs > 0 {
			did("cleared %d tool results and %d images", n, imgs)
		}
	}

	// The server's summary, where model and mode allow it; the client's is the fallback.
	if m != nil && c.After > target && h.model.ServerCompaction && h.strategy() == "server" {
		n, u, err := h.serverSummary(ctx, m)
		c.Usage = c.Usage.Add(u)
		if err != nil {
			c.Steps = append(c.Steps, "server compaction failed: "+err.Error())
		} else if n > 0 {
			did("summarised %d messages on the server", n)
		}
	}

	// Each summary keeps fewer turns: if still too large, the next takes more.
	for keep := h.cfg.KeepRecent; m != nil && c.After > target && len(c.Steps) < maxCompactionSteps; keep = max(1, keep/2) {
		n, u, err := h.summarise(ctx, m, keep)
		c.Usage = c.Usage.Add(u)
		if err != nil {
			if ctx.Err() != nil {
				return c, err
			}
			c.Steps = append(c.Steps, "summary failed: "+err.Error())
			break
		}
		if n > 0 {
			did("summarised %d messages", n)
		} else if keep == 1 {
			break
		}
	}

	if c.After > limit {
		if n := h.hardCut(target, limit); n > 0 {
			did("dropped %d messages", n)
		}
	}

	if c.After > limit {
		return c, fmt.Errorf("%w: %d tokens after %d steps, limit %d", ErrCannotCompact, c.After, len(c.Steps), limit)
	}
	return c, nil
}

// assistantBefore returns the index of the n-th assistant turn (a run of
// assistant messages, which the API merges) that starts before message i,
// or 0 if there is none after the first: for i = len, n = keep, the first
// message compaction keeps.
func (h *History) assistantBefore(i, n int) int {
	for i--; i >= 1; i-- {
		if h.entries[i].Message.Role == llm.Assistant && h.entries[i-1].Message.Role == llm.User {
			if n--; n == 0 {
				return i
			}
		}
	}
	return 0
}

// clearOld replaces tool result contents and images before the newest keep
// turns with placeholders, and reports how many of each it cleared. Only
// user messages hold them, in a repaired history.
func (h *History) clearOld(keep int) (results, images int) {
	end, first := h.assistantBefore(len(h.entries), keep), len(h.entries) // first: the first message changed
	for i := range h.entries[:end] {
		e := &h.entries[i]
		content, changed := slices.Clone(e.Message.Content), false
		for j, b := range content {
			switch b := b.(type) {
			case llm.ToolResult:
				if len(b.Content) == 1 && llm.TextOf(b.Content) == clearedResult {
					continue
				}
				// A new map, not added to: a checkpoint may share the old one.
				orig := map[string][]llm.Block{b.ToolUseID: b.Content}
				maps.Copy(orig, e.original)
				e.original = orig
				b.Content = []llm.Block{llm.Text{Text: clearedResult}}
				content[j], changed = b, true
				results++
			case llm.Image:
				content[j], changed = llm.Text{Text: clearedImage}, true
				images++
			}
		}
		if changed {
			e.Message = llm.Message{Role: e.Message.Role, Content: content}
			first = min(first, i)
		}
	}
	h.rewrote(first)
	return results, images
}

// summarise replaces the messages before the newest keep turns with a
// summary written by m, and returns how many messages it replaced (zero
// when there is nothing worth summarising) and the call's usage.
func (h *History) summarise(ctx context.Context, m llm.Model, keep int) (int, llm.Usage, error) {
	end := h.assistantBefore(len(h.entries), keep)
	// The transcript must fit the summariser's window, reply and prompt aside, with a 10% margin.
	budget := int(0.9 * (float64(h.cfg.ContextWindow-summaryMaxTokens)*h.ratio - float64(len(summaryPrompt))))
	text := transcript(h.entries[:end])
	for ; end > 0 && len(text) > budget; text = transcript(h.entries[:end]) {
		end = h.assistantBefore(end, 1)
	}
	if end < 2 { // nothing before the first kept turn but its request
		return 0, llm.Usage{}, nil
	}
	reply, u, err := collect(ctx, m, llm.Request{Model: h.cfg.Model, MaxTokens: summaryMaxTokens, System: summaryPrompt,
		Messages: []llm.Message{userText("<transcript>\n" + text + "</transcript>\n\nWrite the summary of this transcript now.")}})
	summary := llm.TextOf(reply.Content)
	switch {
	case err != nil:
		return 0, u, fmt.Errorf("memory: summarise: %w", err)
	case apirules.IsBlank(summary):
		return 0, u, errors.New("memory: summarise: the model returned no text")
	}
	e := entry{Entry: Entry{Message: userText(summaryHeader + strings.TrimSpace(summary)), Usage: u, Model: h.cfg.Model, Summary: true}}
	h.entries = append([]entry{e}, h.entries[end:]...)
	h.rewrote(0)
	return end, u, nil
}

// hardCut drops the oldest turns, keeping the most that fit target (or, if
// none does, only the newest turn as long as that fits limit), behind an
// earlier summary, or the server's note and its compaction block, or else a
// note quoting the start of the original task. It returns how many messages
// it dropped.
func (h *History) hardCut(target, limit int) int {
	if len(h.entries) < 2 {
		return 0
	}
	head, old := h.entries[:1], h.entries[0].Summary // old: the old head is the new one
	if c := h.entries[1].Message.Content; len(c) > 0 && isCompaction(c[0]) {
		// The note speaks of the block: the two stay together, marked or not
		// (serverCompacted marks the note), the block without the rest of its turn.
		block := entry{Entry: Entry{Message: llm.Message{Role: llm.Assistant, Content: c[:1:1]}}}
		head, old = []entry{h.entries[0], measured(block)}, true
	} else if !old {
		note := cutHeader
		if task := llm.TextOf(head[0].Message.Content); !apirules.IsBlank(task) {
			note += "\n\nThe conversation began with this request:\n\n" + llm.Truncate(task, 2000)
		}
		head = []entry{measured(entry{Entry: Entry{Message: userText(note)}})}
	}
	headTokens, best := h.estimate(h.prefixChars, head), 0
	for k := h.assistantBefore(len(h.entries), 1); k > 0; k = h.assistantBefore(k, 1) {
		n := headTokens + h.estimate(0, h.entries[k:])
		if n > target && best != 0 || n > limit {
			break
		}
		best = k
	}
	if best == 0 || old && best <= len(head) {
		return 0
	}
	h.entries = append(head[:len(head):len(head)], h.entries[best:]...) // a copy: a checkpoint may share the old
	h.rewrote(0)
	if old {
		return best - len(head)
	}
	return best
}

func isCompaction(b llm.Block) bool {
	r, ok := b.(llm.RawBlock)
	return ok && r.Type == apirules.CompactionBlock
}

func userText(text string) llm.Message {
	return llm.Message{Role: llm.User, Content: []llm.Block{llm.Text{Text: text}}}
}

func collect(ctx context.Context, m llm.Model, req llm.Request) (llm.Message, llm.Usage, error) {
	var asm llm.Assembler
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return llm.Message{}, asm.Turn().Usage, err
		}
		asm.Add(ev)
	}
	if t := asm.Turn(); t.Done {
		return t.Message, t.Usage, nil
	}
	return llm.Message{}, asm.Turn().Usage, llm.ErrIncompleteStream
}

// transcript renders es as plain text for the summarisation call, which
// then needs neither tool definitions (the API refuses tool blocks without
// them, and with them the model may call a tool instead of summarising) nor
// the pairing, thinking and server-tool rules. Tool results that compaction
// cleared are rendered from the originals it kept; thinking, the model's
// scratch work, not a fact of the session, is left out.
func transcript(es []entry) string {
	var b strings.Builder
	for _, e := range es {
		head := "[" + string(e.Message.Role) + "]\n"
		if e.Summary {
			head = "[earlier summary]\n"
		}
		b.WriteString(head)
		for _, blk := range e.Message.Content {
			writeBlock(&b, blk, e.original)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func writeBlock(b *strings.Builder, blk llm.Block, original map[string][]llm.Block) {
	switch blk := blk.(type) {
	case llm.Text:
		b.WriteString(blk.Text + "\n")
	case llm.ToolUse:
		fmt.Fprintf(b, "[tool call %s %s: %s]\n", blk.ID, blk.Name, llm.Truncate(string(blk.Input), maxResultChars))
	case llm.ToolResult:
		content, ok := original[blk.ToolUseID]
		if !ok {
			content = blk.Content
		}
		var body strings.Builder // the result's own text, to truncate
		for _, c := range content {
			writeBlock(&body, c, nil)
		}
		fmt.Fprintf(b, "[tool %s %s]\n%s\n", map[bool]string{false: "result", true: "error"}[blk.IsError], blk.ToolUseID,
			llm.Truncate(strings.TrimSpace(body.String()), maxResultChars))
	case llm.Image:
		fmt.Fprintf(b, "[image %s]\n", blk.MediaType)
	case llm.RawBlock:
		var c struct{ Content string }
		if blk.Type == apirules.CompactionBlock && json.Unmarshal(blk.JSON, &c) == nil {
			// The server's summary of what came before: the summary needs it whole.
			fmt.Fprintf(b, "[summary of the earlier turns]\n%s\n", c.Content)
			return
		}
		fmt.Fprintf(b, "[%s block: %s]\n", blk.Type, llm.Truncate(string(blk.JSON), 1000))
	}
}

// strategy returns the compaction strategy in effect: "server", "client"
// or "off" (see [Config].Compaction).
func (h *History) strategy() string {
	if h.cfg.Compaction == "" && h.model.ServerCompaction {
		return "server"
	}
	return cmp.Or(h.cfg.Compaction, "client")
}

// ContextManagement returns the context management edits of the next
// request, or none. Context editing is the first, cheapest step: past half of
// Config.ContextLimit the API clears old tool results (and, with thinking
// on, old turns' thinking) from what the model reads, at least a tenth of
// the limit at a time, so that the prompt cache it breaks is worth it. In
// "server" mode the API then compacts at 80% of the limit (50,000 tokens at
// least; [History.AppendAssistant] keeps the block), [History.Compact] the
// fallback at ContextLimit.
func (h *History) ContextManagement(thinking bool) []llm.ContextEdit {
	mode, limit := h.strategy(), h.cfg.ContextLimit
	var edits []llm.ContextEdit
	inputTokens := func(n int) *llm.EditLimit { return &llm.EditLimit{Type: "input_tokens", Value: n} }
	// An explicit "client" asks for the client's own compaction alone.
	if mode == "server" || h.cfg.Compaction == "" && h.model.ContextEditing {
		if thinking && h.Tokens() > limit/2 { // below, thinking stays, and the cache with it
			edits = append(edits, llm.ContextEdit{Type: llm.ClearThinking, Keep: &llm.EditLimit{Type: "thinking_turns", Value: 1}}) // first, as the API wants
		}
		edits = append(edits, llm.ContextEdit{Type: llm.ClearToolUses, Trigger: inputTokens(max(1, limit/2)),
			Keep: &llm.EditLimit{Type: "tool_uses", Value: h.cfg.KeepRecent}, ClearAtLeast: inputTokens(max(1, limit/10))})
	}
	if mode == "server" {
		edits = append(edits, llm.ContextEdit{Type: llm.Compact, Trigger: inputTokens(max(50_000, limit*8/10))})
	}
	return edits
}

// serverCompacted applies a compaction block in msg, a turn to append, as
// the API does: the block, kept byte for byte, replaces every message and
// block before it, so that the history and its session file keep, and
// count, what the model still reads. It reports whether msg held one.
func (h *History) serverCompacted(msg llm.Message) (llm.Message, bool) {
	for k := len(msg.Content) - 1; k >= 0; k-- {
		if r, ok := msg.Content[k].(llm.RawBlock); ok && r.Type == apirules.CompactionBlock { // it may be nil
			msg.Content = msg.Content[k:]
			h.entries = append(h.entries[:0:0], measured(entry{Entry: Entry{Message: userText(serverNote), Summary: true}}))
			return msg, true
		}
	}
	return msg, false
}

// serverSummary has the server summarise the whole history: its compaction
// block (kept as serverCompacted keeps one) replaces every message. It
// returns how many.
func (h *History) serverSummary(ctx context.Context, m llm.Model) (int, llm.Usage, error) {
	req := h.request()
	req.Cache, req.Summarize = true, true // no context_management: the API refuses both
	reply, u, err := collect(ctx, m, req)
	if err != nil {
		return 0, u, fmt.Errorf("memory: server compaction: %w", err)
	}
	n := len(h.entries)
	if reply, ok := h.serverCompacted(reply); ok {
		// No exact count: u's input is the history before the compaction.
		h.push(entry{Entry: Entry{Message: reply, Usage: u, Model: h.cfg.Model}})
		return n, u, nil
	}
	return 0, u, fmt.Errorf("memory: server compaction: the reply holds no compaction block")
}
