package llm

import (
	"context"
	"errors"
	"iter"
	"math/rand/v2"
	"time"
)

// A Model streams one model turn. [*Client] satisfies it; a fake for tests
// is a [ModelFunc] that yields scripted events. It is defined here, once,
// because every layer above llm (the loop, compaction's summary call)
// needs the same thing.
type Model interface {
	Stream(ctx context.Context, req Request) iter.Seq2[Event, error]
}

// ModelFunc adapts a function to the [Model] interface, which keeps a
// middleware or a test fake a few lines long.
type ModelFunc func(ctx context.Context, req Request) iter.Seq2[Event, error]

// Stream calls f(ctx, req).
func (f ModelFunc) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	return f(ctx, req)
}

// DefaultMaxTokens is the output cap of a turn whose max_tokens is not set,
// here and in every layer above: one default for the whole module.
const DefaultMaxTokens = 8192

// Backoff returns the wait before retry number attempt (1 for the first
// retry) of a request that failed with err. It is the module's one retry
// schedule: the server's retry-after when it sent one, else 0.5 s doubling
// to at most 8 s, less up to a quarter of jitter so that many clients do
// not come back in step. Whether a retry-after is too long to wait for is
// the caller's decision (see [Config.MaxAttempts]).
func Backoff(attempt int, err error) time.Duration {
	return backoff(attempt, err, rand.Int64N)
}

// backoff is Backoff with the jitter source given, so that tests can pin it.
func backoff(attempt int, err error, jitter func(n int64) int64) time.Duration {
	if ae, ok := errors.AsType[*APIError](err); ok && ae.RetryAfter > 0 {
		return ae.RetryAfter
	}
	d := 8 * time.Second
	if attempt < 5 {
		d = 500 * time.Millisecond << max(attempt-1, 0) // capped before the shift can overflow
	}
	return d - time.Duration(jitter(int64(d/4)))
}
