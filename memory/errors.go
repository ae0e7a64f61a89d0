package memory

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// IsPromptTooLong reports whether err says the request did not fit the
// model's context window: the API's 400 "prompt is too long", or a 413
// request_too_large. Either way the cure is [History.Compact] and one retry.
func IsPromptTooLong(err error) bool {
	if err == nil {
		return false
	}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode == http.StatusRequestEntityTooLarge || ae.Type == "request_too_large" ||
			strings.Contains(strings.ToLower(ae.Message), "prompt is too long")
	}
	// Other clients' errors: match the API's words in the text.
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "prompt is too long") || strings.Contains(s, "request_too_large") ||
		strings.Contains(s, "model_context_window_exceeded")
}

// tooLongRE matches the API's "prompt is too long: 215439 tokens > 200000
// maximum".
var tooLongRE = regexp.MustCompile(`(\d+) tokens > (\d+)`)

// MarkOverflow records that the API found the history too long for the
// context window: after a 400 "prompt is too long" (pass its error) or a
// stop_reason of model_context_window_exceeded (pass nil). The count the
// error reports, or else the context window, becomes the exact count, so
// that the next [History.Compact] does real work even when the estimate
// was too low.
func (h *History) MarkOverflow(err error) {
	if len(h.entries) == 0 {
		return
	}
	n := 0
	if err != nil {
		if m := tooLongRE.FindStringSubmatch(err.Error()); m != nil {
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
