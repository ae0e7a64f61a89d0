package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// This file is server-side context management, as the platform docs'
// context editing and compaction pages give it: the stream builder for a
// compaction block, the checks the API makes of context_management and
// compaction, and what a compaction leaves of the prompt.

// Compaction starts a compaction block as the API streams one, {"type":
// "compaction","content":null}, then sends its summary in one
// compaction_delta. Stop("compaction") after it is the reply of a
// compaction that pauses (pause_after_compaction, or a compaction request);
// otherwise the turn goes on after it, from the summary.
//
// usage, if given, is the compaction iteration's input, output, cache
// creation and cache read tokens, reported in message_delta's
// usage.iterations before the message iteration, whose counts are those of
// Usage and Stop. As the API does, the top-level usage counts only the
// message iteration: the compaction is billed on top.
func (s *Stream) Compaction(summary string, usage ...int) *Stream {
	s.Block(Block{Type: "compaction", Raw: json.RawMessage(`{"type":"compaction","content":null}`)})
	delta, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}{"compaction_delta", summary})
	s.mu.Lock()
	defer s.mu.Unlock()
	copy(s.compact[:], usage)
	s.addLocked(item{kind: kDelta, index: s.nextIdx - 1, a: string(delta)})
	return s
}

// appendIterations appends the usage.iterations of a stream that
// compacted, given the message iteration's output, or nothing.
func (s *Stream) appendIterations(b []byte, output int) []byte {
	if s.compact == [4]int{} {
		return b
	}
	c := s.compact
	b = fmt.Appendf(b, `,"iterations":[{"type":"compaction","input_tokens":%d,"output_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d}`,
		c[0], c[1], c[2], c[3])
	return fmt.Appendf(b, `,{"type":"message","input_tokens":%d,"output_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d}]`,
		s.inTok, output, s.cacheW, s.cacheR)
}

// contextManagement is a request's context_management, as the checks
// need it.
type contextManagement struct {
	Edits []struct {
		Type    string `json:"type"`
		Trigger *struct {
			Type  string `json:"type"`
			Value int    `json:"value"`
		} `json:"trigger"`
	} `json:"edits"`
}

// The API's default compaction trigger, and the smallest it accepts.
const (
	defaultCompactionTrigger = 150_000
	minCompactionTrigger     = 50_000
)

// compactionTrigger returns the input tokens at which the request's
// compact_20260112 edit compacts, or 0 when the request asks for no
// compaction at a threshold.
func compactionTrigger(cm *contextManagement) int {
	if cm == nil {
		return 0
	}
	for _, e := range cm.Edits {
		if e.Type == "compact_20260112" {
			if e.Trigger != nil {
				return e.Trigger.Value
			}
			return defaultCompactionTrigger
		}
	}
	return 0
}

// prompt returns the messages the model reads: as the API does, it drops
// every block before the last compaction block, which then opens the
// prompt in its assistant message, whose Text is of the blocks kept.
func prompt(msgs []Message) []Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		for j := len(msgs[i].Content) - 1; j >= 0; j-- {
			if msgs[i].Content[j].Type == "compaction" {
				m := msgs[i]
				m.Content = m.Content[j:]
				m.Text = textOf(m.Content) // the dropped blocks' text is not read either
				return append([]Message{m}, msgs[i+1:]...)
			}
		}
	}
	return msgs
}

// contextManagement decodes the request's context_management and whether
// it has a compaction parameter (and of which type).
func (r *Request) contextManagement() (*contextManagement, string, error) {
	set, err := r.settings()
	if err != nil {
		return nil, "", err
	}
	var cm *contextManagement
	if err := json.Unmarshal(cmpOr(set.ContextManagement, "null"), &cm); err != nil {
		return nil, "", err
	}
	var c *struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(cmpOr(set.Compaction, "null"), &c); err != nil {
		return nil, "", err
	}
	typ := ""
	if c != nil {
		typ = cmpOr(c.Type, "(none)")
	}
	return cm, typ, nil
}

func cmpOr[S ~string | ~[]byte](s S, def string) S {
	if len(s) == 0 {
		return S(def)
	}
	return s
}

// betas returns the request's anthropic-beta values.
func (r *Request) betas() []string {
	var out []string
	for _, v := range r.Header.Values("Anthropic-Beta") {
		for b := range strings.SplitSeq(v, ",") {
			out = append(out, strings.TrimSpace(b))
		}
	}
	if set, err := r.settings(); err == nil {
		out = append(out, set.Betas...) // a platform's, in the body
	}
	return out
}

// checkContextManagement answers the 400 the API gives a request whose
// context_management or compaction it cannot take, or returns nil: each
// edit needs its beta header (context-management-2025-06-27 for the
// clearing edits, compact-2026-01-12 for compact_20260112,
// compact-2026-09-04 for compaction), a compaction trigger is in input
// tokens and at least 50,000, clear_thinking comes first, and compaction
// cannot be combined with context_management.
func checkContextManagement(r *Request) Reply {
	cm, compaction, err := r.contextManagement()
	if err != nil || cm == nil && compaction == "" {
		return nil // a body that does not decode is CheckRequest's to report
	}
	bad := func(format string, args ...any) Reply {
		return HTTPError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: fmt.Sprintf(format, args...)}
	}
	betas := r.betas()
	need := func(beta, what string) Reply {
		if !slices.Contains(betas, beta) {
			return bad("%s requires the anthropic-beta header %s", what, beta)
		}
		return nil
	}
	if compaction != "" {
		if cm != nil {
			return bad("compaction: cannot be combined with context_management")
		}
		if compaction != "summarize" {
			return bad("compaction.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'summarize'", compaction)
		}
		return need("compact-2026-09-04", "compaction")
	}
	for i, e := range cm.Edits {
		at := "context_management.edits." + strconv.Itoa(i)
		var reply Reply
		switch e.Type {
		case "clear_tool_uses_20250919":
			reply = need("context-management-2025-06-27", at)
		case "clear_thinking_20251015":
			reply = need("context-management-2025-06-27", at)
			if i > 0 && reply == nil {
				reply = bad("%s: clear_thinking_20251015 must be the first edit", at)
			}
		case "compact_20260112":
			reply = need("compact-2026-01-12", at)
			if t := e.Trigger; reply == nil && t != nil && (t.Type != "input_tokens" || t.Value < minCompactionTrigger) {
				reply = bad("%s.trigger: must be input_tokens of at least %d, got %s %d", at, minCompactionTrigger, t.Type, t.Value)
			}
		default:
			reply = bad("%s.type: unknown context management edit %q", at, e.Type)
		}
		if reply != nil {
			return reply
		}
	}
	return nil
}
