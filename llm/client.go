package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Config configures a [Client]. The zero value works, without credentials,
// as a local fake server wants. This package reads no environment.
type Config struct {
	APIKey    string // authenticates requests; empty means none
	AuthToken string // an OAuth bearer token, used when APIKey is empty
	BaseURL   string // the API's base URL; empty means https://api.anthropic.com/
	// HTTPClient sends the requests. Nil means http.DefaultClient. Leave
	// its Timeout zero: a turn may stream for minutes; one silent for 90
	// seconds, not even a ping, is aborted as stalled.
	HTTPClient *http.Client
	// Logger receives a line per retry (Info) and per unknown event type
	// (Debug). Nil discards everything.
	Logger *slog.Logger
	// MaxAttempts is how many times a request is tried, the first included.
	// Zero means 3; 1 turns retries off. See [RetryWait].
	MaxAttempts int
	// Observe, when set, is told of each HTTP attempt of a [Client.Stream],
	// for tracing (package telemetry makes one). Before the attempt, it
	// returns the context the attempt runs under, which may carry a span,
	// and a function that sees each event the attempt yields, then, with a
	// nil event, how the attempt ended: nil if it ended well or its
	// consumer stopped reading. Default nil.
	Observe func(ctx context.Context, a Attempt) (context.Context, func(Event, error))
	// Platform, when set, sends the requests to a cloud platform, which
	// authenticates them its own way: APIKey and AuthToken are never sent
	// there, and BaseURL, if set, replaces the platform's endpoint. Nil
	// means the Anthropic API.
	Platform *Platform
}

// An Attempt is one HTTP attempt of a [Client.Stream], as Config.Observe
// sees it.
type Attempt struct {
	Request Request
	N       int           // 1 for the first attempt
	Retried error         // for N > 1: why the attempt before failed
	Wait    time.Duration // for N > 1: how long the client waited since
}

// A Client calls the Messages API. It is safe for concurrent use.
type Client struct {
	sdk         anthropic.Client
	log         *slog.Logger
	sleep       func(ctx context.Context, d time.Duration) error // sleepCtx, but a test's, which records the waits
	maxAttempts int
	observe     func(context.Context, Attempt) (context.Context, func(Event, error))
	platform    *Platform
	perRequest  []option.RequestOption // the platform's options, and BaseURL's after them
}

// idleTimeout is how long a stream may be silent; time between events the
// caller spends does not count.
const idleTimeout = 90 * time.Second

// New returns a Client for cfg.
func New(cfg Config) *Client {
	c := &Client{log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), maxAttempts: cmp.Or(max(cfg.MaxAttempts, 0), 3),
		observe: cfg.Observe, sleep: sleepCtx}
	// The SDK sends, authenticates and names the API version; its retries
	// are off, for this package's one policy.
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cmp.Or(cfg.HTTPClient, http.DefaultClient)), option.WithMaxRetries(0)}
	switch {
	case cfg.Platform != nil: // the Anthropic key never goes to another platform
		c.platform, c.perRequest = cfg.Platform, slices.Clone(cfg.Platform.Options)
	case cfg.APIKey != "":
		// The API documents x-api-key; SDK v2.15's option.WithAPIKey sends
		// a bearer token instead.
		opts = append(opts, option.WithHeader("x-api-key", cfg.APIKey))
	case cfg.AuthToken != "":
		opts = append(opts, option.WithAuthToken(cfg.AuthToken))
	}
	if cfg.BaseURL != "" { // after a platform's options, to replace its endpoint
		c.perRequest = append(c.perRequest, option.WithBaseURL(cfg.BaseURL))
	}
	c.sdk = anthropic.NewClient(opts...)
	return c
}

// Stream sends req and returns the model's turn as a stream of events,
// ending with [MessageStop] or with an error. It is single-use; stopping
// the range early closes the connection.
//
// Transient failures (see [IsRetryable]) are retried as long as nothing has
// been yielded, for which MessageStart is held back until the first content
// event. After that an error ends the stream, and IsRetryable tells the
// caller whether to ask for the whole turn again.
func (c *Client) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	var used atomic.Bool
	return func(yield func(Event, error) bool) {
		if used.Swap(true) {
			yield(nil, errors.New("llm: a Stream can be ranged over only once"))
			return
		}
		req, body, err := c.platform.adapt(req, false)
		if err != nil {
			yield(nil, err)
			return
		}
		yielded := false
		err = c.retry(ctx, &yielded, func(ctx context.Context, a Attempt) error {
			if c.observe == nil {
				return c.streamOnce(ctx, body, req.beta(), &yielded, yield)
			}
			a.Request = req
			ctx, seen := c.observe(ctx, a)
			err := c.streamOnce(ctx, body, req.beta(), &yielded, func(ev Event, err error) bool {
				seen(ev, nil)
				return yield(ev, err)
			})
			seen(nil, err)
			return err
		})
		if err != nil {
			yield(nil, err)
		}
	}
}

// streamOnce makes one attempt at a streamed turn.
func (c *Client) streamOnce(ctx context.Context, body body, beta string, yielded *bool, yield func(Event, error) bool) error {
	var opts []option.RequestOption
	if beta != "" {
		opts = append(opts, option.WithHeaderAdd("anthropic-beta", beta))
	}
	return c.exchange(ctx, "v1/messages", body, opts, func(resp *http.Response, idle *time.Timer) error {
		// From here the idle timer runs only in reads: the consumer's time
		// between events is not the server's silence.
		idle.Stop()
		dec := newDecoder(&idleReader{r: resp.Body, t: idle}, resp.Header, c.log)
		var pending Event // a MessageStart not yet yielded
		for {
			ev, err := dec.next()
			if err != nil {
				return err
			}
			if _, ok := ev.(MessageStart); ok && !*yielded {
				pending = ev
				continue
			}
			*yielded = true
			if pending != nil && !yield(pending, nil) || !yield(ev, nil) {
				return nil // the consumer stopped
			}
			pending = nil
			if _, ok := ev.(MessageStop); ok {
				return nil
			}
		}
	})
}

// exchange posts body to path through the SDK and gives the response to
// read, while an idle timer cancels the attempt if the server sends nothing
// for idleTimeout. Its error names the cause: the caller's context, or the
// idle timer.
func (c *Client) exchange(ctx context.Context, path string, body body, opts []option.RequestOption,
	read func(*http.Response, *time.Timer) error) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(idleTimeout, func() { cancel(errIdleTimeout) })
	defer idle.Stop()
	var resp *http.Response
	err := c.sdk.Post(actx, path, http.NoBody, &resp, slices.Concat(opts, []option.RequestOption{body.send()}, c.perRequest)...)
	switch {
	case err == nil:
		defer resp.Body.Close()
		if err = read(resp, idle); err == nil {
			return err
		}
	case resp != nil && resp.StatusCode >= 400:
		// The SDK's error needs a well-formed body; ours is built from the
		// bytes it leaves on resp.Body.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		err = newAPIError(resp.StatusCode, resp.Header, body)
	default: // unless the cause was ctx or the idle timer, as below
		err = fmt.Errorf("%w: %w", errConnection, err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if context.Cause(actx) == errIdleTimeout {
		return fmt.Errorf("%w: nothing received for %v", errIdleTimeout, idleTimeout)
	}
	return err
}

// idleReader arms the idle timer for each read, a buffer fill: cheap.
type idleReader struct {
	r io.Reader
	t *time.Timer
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.t.Reset(idleTimeout)
	n, err := r.r.Read(p)
	r.t.Stop()
	return n, err
}

// retry runs attempt until it succeeds, fails for good, or the attempts
// run out; once *committed, an error is returned, not retried. An attempt
// is an exchange, which returns ctx's error once ctx is done: not retryable.
func (c *Client) retry(ctx context.Context, committed *bool, attempt func(context.Context, Attempt) error) error {
	for a := (Attempt{N: 1}); ; {
		err := attempt(ctx, a)
		if err == nil || *committed || !IsRetryable(err) || a.N >= c.maxAttempts {
			return err
		}
		wait, ok := RetryDelay(a.N, err)
		if !ok {
			c.log.Info("llm: server asks to wait longer than a minute; giving up", "err", err)
			return err
		}
		c.log.Info("llm: retrying", "attempt", a.N+1, "of", c.maxAttempts, "wait", wait, "err", err)
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
		a = Attempt{N: a.N + 1, Retried: err, Wait: wait}
	}
}

// maxRetryWait is the longest retry-after worth waiting for.
const maxRetryWait = time.Minute

// RetryWait waits before retry number attempt (1 for the first) of a
// request that failed with err, by the module's one schedule: the server's
// retry-after, else 0.5 s doubling to 8 s, less up to a quarter of jitter so
// that clients do not come back in step. It returns err at once if the
// server asks to wait over a minute, and ctx's error if ctx ends first.
func RetryWait(ctx context.Context, attempt int, err error) error {
	d, ok := RetryDelay(attempt, err)
	if !ok {
		return err
	}
	return sleepCtx(ctx, d)
}

// RetryDelay is how long [RetryWait] waits, jitter included, for a caller
// that keeps its own timers (a Temporal workflow, and Client's retries):
// false when the server asks to wait over a minute.
func RetryDelay(attempt int, err error) (time.Duration, bool) {
	if ae, ok := errors.AsType[*APIError](err); ok && ae.RetryAfter > 0 {
		return ae.RetryAfter, ae.RetryAfter <= maxRetryWait
	}
	d := 500 * time.Millisecond << min(max(attempt-1, 0), 4) // to 8 s, the shift capped before it can overflow
	return d - time.Duration(rand.Int64N(int64(d/4))), true
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// CountTokens returns the input tokens req would use, by the API's
// count_tokens endpoint, retrying as Stream does. An answer slower than 90
// seconds fails as a stalled stream. Extra, MaxTokens and Container are not
// sent.
func (c *Client) CountTokens(ctx context.Context, req Request) (int, error) {
	_, body, err := c.platform.adapt(req, true)
	if err != nil {
		return 0, err
	}
	var n int
	err = c.retry(ctx, new(false), func(ctx context.Context, _ Attempt) error {
		// The answer is small: the timer covers the whole exchange.
		return c.exchange(ctx, "v1/messages/count_tokens", body, nil, func(resp *http.Response, _ *time.Timer) error {
			answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if err != nil {
				return fmt.Errorf("%w: reading count_tokens response: %w", errConnection, err)
			}
			var w struct {
				InputTokens *int `json:"input_tokens"`
			}
			if err := json.Unmarshal(answer, &w); err != nil || w.InputTokens == nil {
				return malformed("count_tokens response", answer, err)
			}
			n = *w.InputTokens
			return nil
		})
	})
	return n, err
}

// A Platform serves Claude's Messages API somewhere other than the
// Anthropic API: Amazon Bedrock, Google Vertex AI or Microsoft Foundry.
// Packages llm/bedrock, llm/vertex and llm/foundry make one from the SDK's
// own packages, which route, sign and authenticate each request, so that a
// program that uses none of them compiles none of their cloud libraries.
// With [Config].Platform set, everything else works as on the Anthropic
// API: streaming, retries, errors, telemetry.
type Platform struct {
	Name string // the platform's name in errors, such as "Amazon Bedrock"
	// Options are the SDK's request options that adapt a request to the
	// platform (its URL, body, signature or credentials), applied to each
	// request after the body is in place, as the SDK's platform middleware
	// needs. They are the one place SDK types reach llm's API.
	Options []option.RequestOption
	// Model returns the platform's id for the model a Request names, an
	// error if the platform is not known to serve it. Nil sends the name
	// as it is.
	Model func(model string) (string, error)
	// NoCountTokens is set for a platform without a count_tokens route:
	// [Client.CountTokens] then fails at once with [errors.ErrUnsupported],
	// and memory keeps its estimate.
	NoCountTokens bool
	// NoSummarize is set for a platform without compaction on demand
	// (beta compact-2026-09-04): a [Request].Summarize then fails with
	// [errors.ErrUnsupported] before it is sent, and the client's own
	// compaction stays the fallback.
	NoSummarize bool
}

// adapt returns req as the platform takes it (its model id) and its body,
// for count_tokens if count: the one preparation of every request.
func (p *Platform) adapt(req Request, count bool) (Request, body, error) {
	var err error
	switch {
	case p == nil:
	case count && p.NoCountTokens:
		err = fmt.Errorf("llm: %s has no count_tokens route: %w", p.Name, errors.ErrUnsupported)
	case req.Summarize && p.NoSummarize:
		err = fmt.Errorf("llm: %s does not take compaction on demand (beta %s): %w", p.Name, summarizeBeta, errors.ErrUnsupported)
	case p.Model != nil:
		req.Model, err = p.Model(req.Model)
	}
	if err != nil {
		return req, nil, err
	}
	b, err := encodeRequest(req, count)
	return req, b, err
}
