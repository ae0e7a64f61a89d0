package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/google/go-cmp/cmp"
)

// memServer answers the n-th request with the n-th reply, from memory: the
// reply writes the response body, in a goroutine of its own, while the
// client reads it. A nil reply never sends headers. Unlike a loopback
// server it works inside a testing/synctest bubble, where the idle timer
// and the retry waits run on the bubble's fake clock: a 90-second timeout
// takes no time and always fires at exactly 90 seconds.
type memServer struct {
	mu      sync.Mutex
	replies []func(ctx context.Context, w io.Writer)
	n       int
}

func (m *memServer) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	i := m.n
	m.n++
	m.mu.Unlock()
	if i >= len(m.replies) {
		return nil, errors.New("memServer: unexpected request")
	}
	ctx := r.Context()
	reply := m.replies[i]
	if reply == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	pr, pw := io.Pipe()
	go func() {
		reply(ctx, pw)
		pw.Close()
	}()
	go func() {
		// As net/http does, a cancelled request breaks its body, unless
		// the body has already ended.
		<-ctx.Done()
		pw.CloseWithError(ctx.Err())
	}()
	return &http.Response{
		StatusCode: http.StatusOK, Request: r, ContentLength: -1,
		Header: http.Header{"Content-Type": {"text/event-stream"}, "Request-Id": {"req_mem"}},
		Body:   pr,
	}, nil
}

// send is a reply that writes each body in turn, waiting pace before each
// (on the fake clock), and then, if stall is set, sends nothing more until
// the client goes away.
func send(pace time.Duration, stall bool, bodies ...[]byte) func(context.Context, io.Writer) {
	return func(ctx context.Context, w io.Writer) {
		for _, b := range bodies {
			if pace > 0 {
				select {
				case <-time.After(pace):
				case <-ctx.Done():
					return
				}
			}
			if _, err := w.Write(b); err != nil {
				return
			}
		}
		if stall {
			<-ctx.Done()
		}
	}
}

// sleepingClient returns a client for cfg that records its retry waits,
// which it sleeps: on a fake clock, they take no time.
func sleepingClient(cfg Config) (*Client, *[]time.Duration) {
	c := New(cfg)
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return sleepCtx(ctx, d)
	}
	return c, &waits
}

// TestIdleTimeout checks, on a fake clock, that a stream is aborted after
// exactly the idle timeout of silence from the server, before or after its
// headers, and never because the server is slow but steady or because the
// consumer takes its time between events.
func TestIdleTimeout(t *testing.T) {
	S := anthropictest.NewStream
	hello := S().Text("Hello").Stop("end_turn").Bytes()
	// The same stream cut into its events, to be paced one by one.
	helloEvents := func() [][]byte {
		var evs [][]byte
		for rest := hello; len(rest) > 0; {
			i := 0
			for i+1 < len(rest) && !(rest[i] == '\n' && rest[i+1] == '\n') {
				i++
			}
			evs = append(evs, rest[:i+2])
			rest = rest[i+2:]
		}
		return evs
	}()
	const idle = idleTimeout
	tests := []struct {
		name     string
		cfg      Config
		replies  []func(context.Context, io.Writer)
		consumer time.Duration // how long the consumer takes over each event
		wantText string
		wantErr  error
		// wantElapsed is the time taken but the retries' waits, which are
		// jittered: waits holds how long each was at most.
		wantElapsed time.Duration
		waits       []time.Duration
	}{
		{name: "stall mid-block",
			replies: []func(context.Context, io.Writer){send(0, true, S().Text("Hel").EndWithoutStop().Bytes())},
			wantErr: errIdleTimeout, wantElapsed: idle},
		{name: "no headers, retried",
			replies:  []func(context.Context, io.Writer){nil, send(0, false, hello)},
			wantText: "Hello", wantElapsed: idle, waits: []time.Duration{500 * time.Millisecond}},
		{name: "stall after message_start, retried",
			replies:  []func(context.Context, io.Writer){send(0, true, S().EndWithoutStop().Bytes()), send(0, false, hello)},
			wantText: "Hello", wantElapsed: idle, waits: []time.Duration{500 * time.Millisecond}},
		{name: "every attempt stalls", cfg: Config{MaxAttempts: 2},
			replies: []func(context.Context, io.Writer){nil, nil},
			wantErr: errIdleTimeout, wantElapsed: 2 * idle, waits: []time.Duration{500 * time.Millisecond}},
		{name: "slow but steady server",
			replies:  []func(context.Context, io.Writer){send(idle-time.Millisecond, false, helloEvents...)},
			wantText: "Hello", wantElapsed: time.Duration(len(helloEvents)) * (idle - time.Millisecond)},
		{name: "slow consumer", consumer: 3 * idle,
			replies:  []func(context.Context, io.Writer){send(0, false, helloEvents...)},
			wantText: "Hello", wantElapsed: 6 * 3 * idle}, // six events reach the consumer
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tt.cfg
				cfg.BaseURL = "http://anthropic.invalid"
				cfg.HTTPClient = &http.Client{Transport: &memServer{replies: tt.replies}}
				c, waits := sleepingClient(cfg)
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				start := time.Now()
				var a Assembler
				var err error
				for ev, e := range c.Stream(ctx, testReq) {
					if err = e; err != nil {
						break
					}
					a.Add(ev)
					if tt.consumer > 0 {
						<-time.After(tt.consumer)
					}
				}
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if got := TextOf(a.Turn().Message.Content); got != tt.wantText {
					t.Errorf("text = %q, want %q", got, tt.wantText)
				}
				if err != nil && IsRetryable(err) != errors.Is(err, errIdleTimeout) {
					t.Errorf("IsRetryable(%v) = %v", err, IsRetryable(err))
				}
				if diff := cmp.Diff(tt.waits, *waits, lessJitter); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
				for _, w := range *waits {
					tt.wantElapsed += w
				}
				if diff := cmp.Diff(tt.wantElapsed, time.Since(start)); diff != "" {
					t.Errorf("elapsed on the fake clock (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestCountTokensIdleTimeout checks that a count_tokens call whose server
// never answers ends with errIdleTimeout after its retries, rather than
// hanging for as long as the caller's context allows.
func TestCountTokensIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, waits := sleepingClient(Config{BaseURL: "http://anthropic.invalid",
			HTTPClient: &http.Client{Transport: &memServer{replies: make([]func(context.Context, io.Writer), 3)}}})
		start := time.Now()
		_, err := c.CountTokens(t.Context(), testReq)
		if !errors.Is(err, errIdleTimeout) {
			t.Fatalf("err = %v, want errIdleTimeout", err)
		}
		// Three attempts of 90 s, with 0.5 s and 1 s of backoff between.
		if diff := cmp.Diff([]time.Duration{500 * time.Millisecond, time.Second}, *waits, lessJitter); diff != "" {
			t.Fatalf("waits (-want +got):\n%s", diff)
		}
		if got, want := time.Since(start), 3*idleTimeout+(*waits)[0]+(*waits)[1]; got != want {
			t.Errorf("gave up after %v on the fake clock, want %v", got, want)
		}
	})
}
