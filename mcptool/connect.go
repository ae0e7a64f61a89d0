package mcptool

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ErrHandshakeTimeout marks a server that did not complete the MCP
// handshake within [Options.HandshakeTimeout].
var ErrHandshakeTimeout = errors.New("handshake timed out")

// stallTimer cancels a handshake's context when the time runs out, with a
// pause for the user's part of an authorization.
type stallTimer struct {
	d      time.Duration
	cancel context.CancelFunc

	mu      sync.Mutex
	t       *time.Timer
	paused  int
	didFire bool
}

func newStallTimer(ctx context.Context, d time.Duration) (context.Context, *stallTimer) {
	ctx, cancel := context.WithCancel(ctx)
	st := &stallTimer{d: d, cancel: cancel}
	st.t = time.AfterFunc(d, st.fire)
	return ctx, st
}

func (st *stallTimer) fire() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.paused > 0 {
		return
	}
	st.didFire = true
	st.cancel()
}

// pause stops the clock until the function it returns is called; the
// clock then starts afresh.
func (st *stallTimer) pause() func() {
	st.mu.Lock()
	st.paused++
	st.t.Stop()
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.paused--; st.paused == 0 && !st.didFire {
			st.t.Reset(st.d)
		}
	}
}

func (st *stallTimer) fired() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.didFire
}

// stop ends the timer and releases the handshake's context, which bounds
// only the handshake: the connection does not keep it.
func (st *stallTimer) stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.t.Stop()
	st.paused++ // no reset after this
	st.cancel()
}

// serverClient returns the client for requests to the server: c with
// header added to every request, and each 401 or 403 answer counted in
// refused, so that a failure can say that the server wants authorization.
func serverClient(c *http.Client, header http.Header, refused *atomic.Bool) *http.Client {
	return wrapTransport(c, func(next http.RoundTripper) http.RoundTripper {
		return serverTransport{next: next, header: header, refused: refused}
	})
}

// wrapTransport returns a copy of c (nil meaning http.DefaultClient) whose
// transport is wrap of c's own, so that the caller's client settings hold.
func wrapTransport(c *http.Client, wrap func(next http.RoundTripper) http.RoundTripper) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc := *c
	cc.Transport = wrap(next)
	return &cc
}

type serverTransport struct {
	next    http.RoundTripper
	header  http.Header
	refused *atomic.Bool
}

func (t serverTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.header {
			req.Header.Del(k)
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		t.refused.Store(true)
	}
	return resp, err
}
