package memory

import (
	"errors"
	"regexp"
	"strconv"

	"github.com/agentloop/agentloop/llm"
)

// tooLongRE reads the count in the API's "prompt is too long: 215439
// tokens > 200000 maximum".
var tooLongRE = regexp.MustCompile(`(\d+) tokens > (\d+)`)

// MarkOverflow records that the API found the history too long for the
// context window: err is the error that said so (one matching
// [llm.ErrPromptTooLong], or a stop_reason of
// model_context_window_exceeded). The count an API error reports, or else
// the context window, becomes the exact count, so that the next
// [History.Compact] does real work even when the estimate was too low.
func (h *History) MarkOverflow(err error) {
	if len(h.entries) == 0 {
		return
	}
	n := 0
	if ae, ok := errors.AsType[*llm.APIError](err); ok {
		if m := tooLongRE.FindStringSubmatch(ae.Message); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
	}
	if n > 0 {
		h.learn(n)
	} else {
		n = max(h.Tokens(), h.cfg.ContextWindow)
	}
	h.entries[len(h.entries)-1].exact = max(n, h.cfg.ContextLimit+1)
}
