package llm

import (
	"errors"
	"net/http"
	"strings"
	"time"
)

// DefaultMaxRetryWait is the longest retry-after a retry waits for unless
// configured otherwise: a server asking for more is not worth waiting on,
// so the error is returned instead. The client and the agent loop share it.
const DefaultMaxRetryWait = 60 * time.Second

// ErrPromptTooLong is matched, with errors.Is, by an [*APIError] saying
// that the request does not fit the model's context window: a 413
// request_too_large, or the API's 400 "prompt is too long". Either way the
// cure is to shrink the history and send again. A [Model] of another kind
// wraps it to say the same.
var ErrPromptTooLong = errors.New("llm: prompt is too long for the context window")

// Is reports whether target is [ErrPromptTooLong] and e says so. The API
// has no error code for it, so this is the one place that reads the API's
// message to classify an error.
func (e *APIError) Is(target error) bool {
	return target == ErrPromptTooLong && (e.StatusCode == http.StatusRequestEntityTooLarge ||
		e.Type == "request_too_large" || strings.Contains(strings.ToLower(e.Message), "prompt is too long"))
}
