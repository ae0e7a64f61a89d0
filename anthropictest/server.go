package anthropictest

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// A Server is a fake Anthropic Messages API listening on loopback. Each
// POST /v1/messages is recorded and answered by the next queued Reply, in
// order. When the queue is empty the server answers 500 api_error, with a
// message saying no reply was scripted for that request and
// x-should-retry: false, so that a client fails fast instead of retrying.
//
// POST /v1/messages/count_tokens is answered {"input_tokens":N}, with N from
// CountTokens, which sees each of those requests. They are not recorded in
// Requests and never take a reply from the queue, so a client that counts
// tokens between turns does not shift the script or Requests.
//
// Any other method or path gets 404 not_found_error and is neither recorded
// nor counted.
//
// A Server is safe for concurrent use.
type Server struct {
	// URL is the base URL to give a client, http://127.0.0.1:port, with no
	// trailing /v1: the SDK adds "/v1/messages" itself.
	URL string

	// CountTokens computes the input_tokens answered to a count_tokens
	// request from the request, numbered from 1 apart from Requests; a test
	// that checks what its client counted records them there. Set it before
	// the requests it should answer; it may be called from several
	// goroutines at once. If nil, the default, the count is len(Body)/4, at
	// least 1: about what the real count is for English text and JSON, and
	// enough for tests that only need a plausible number.
	CountTokens func(r *Request) int

	// Lenient turns strict mode off (see the package doc): the server then
	// answers every request from the script, whatever it breaks. Set it
	// before the first request, for a test that breaks the current models'
	// rules on purpose.
	Lenient bool

	// Local makes the server answer as a local model server's
	// Anthropic-compatible API does (Ollama 0.14 and later, llama.cpp's
	// llama-server, vLLM), for a test of a client of one: count_tokens
	// is not served (404), and a request with a top-level field beyond
	// the Messages API's core (context_management, output_config,
	// container…) gets a 400 naming it (local.go). Set it before the
	// first request.
	Local bool

	// Buffered lets the server write each unpaced stream in large writes
	// instead of flushing after each event as the API does. Benchmarks
	// want it: per-event flushes measure the loopback, not the client's
	// parser. Paced events are still flushed one by one. Set it before the
	// requests it should serve.
	Buffered bool

	ts        *httptest.Server
	done      chan struct{} // closed by Close, to end stalls and pacing
	closeOnce sync.Once

	mu      sync.Mutex
	queue   []Reply
	reqs    []*Request
	counts  int                // count_tokens requests so far
	issued  map[string][]issue // signed thinking blocks streamed, by signature
	threads map[string]*held   // threads held, by the id of their last response (thread.go)

	hooks hooks
}

// hooks let the package's tests observe the server without sleeping.
type hooks struct {
	// after, if set, replaces a timer for pacing, so tests can check the
	// delays without waiting for them.
	after func(time.Duration) <-chan time.Time
	// served, if set, is called when a reply has finished being served.
	served func(n int)
}

// NewServer starts a Server on 127.0.0.1 that answers with replies, in
// order. Close it when done, typically with t.Cleanup(srv.Close).
func NewServer(replies ...Reply) *Server { return newServer(hooks{}, replies...) }

func newServer(h hooks, replies ...Reply) *Server {
	s := &Server{done: make(chan struct{}), hooks: h}
	s.queue = append(s.queue, replies...)
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.ts.URL
	return s
}

// Close ends every stalled or paced reply, then shuts the server down and
// waits for its handlers to return.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.ts.Close()
}

// Enqueue appends replies to the queue, to answer the requests that follow
// those already scripted: a test that learns what to answer only as it
// runs, such as one whose worker process is restarted, scripts as it goes.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Requests returns every request to POST /v1/messages so far, in arrival
// order. The slice is a copy; the Requests are shared and must not be
// modified.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// estimateTokens is the default count: about four bytes a token.
func estimateTokens(r *Request) int { return max(1, len(r.Body)/4) }

// pending reports how many scripted replies have not been used yet, for
// this package's tests of the queue. A Repeat reply counts as one.
func (s *Server) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if rt, ok := platformRoute(r); ok { // platform.go
		s.servePlatform(w, r, rt)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens" && !s.Local {
		s.serveCount(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		c := &call{id: "req_anthropictest_notfound"}
		HTTPError{Status: http.StatusNotFound,
			Message: fmt.Sprintf("anthropictest: only POST /v1/messages and /v1/messages/count_tokens are served, not %s %s", r.Method, r.URL.Path)}.serve(w, c)
		return
	}
	if req := read(r); req != nil {
		s.serveMessages(w, r, req)
	}
}

// serveMessages answers req, a Messages request, from the script.
func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request, req *Request) {
	// A context_management the API would refuse is refused, and so is a
	// request that breaks its model's rules (strict.go); neither uses a
	// scripted reply (compaction.go).
	reply := checkContextManagement(req)
	if refused := refuseLocal(req); s.Local && refused != nil {
		reply = refused
	}
	if reply == nil {
		reply = s.openThread(req) // before strict mode, which checks a thread's whole conversation
	}
	if e := s.checkStrict(req, false); reply == nil && e != nil {
		reply = *e
	}
	s.mu.Lock()
	req.N = len(s.reqs) + 1
	s.reqs = append(s.reqs, req)
	if reply == nil && len(s.queue) > 0 {
		reply = s.queue[0]
		if _, again := reply.(*repeat); !again {
			s.queue[0] = nil
			s.queue = s.queue[1:]
		}
	}
	s.mu.Unlock()

	model, stream, threaded := defaultModel, false, false
	if set, err := req.settings(); err == nil {
		model, stream, threaded = cmp.Or(set.Model, model), set.Stream, set.Thread.Type != ""
	}
	c := &call{
		req:      req,
		id:       reqID(req.N),
		msgID:    msgID(req.N),
		model:    model,
		stream:   stream,
		threaded: threaded,
		ctx:      r.Context().Done(),
		done:     s.done,
		after:    s.hooks.after,
		srv:      s,
	}
	if s.hooks.served != nil {
		defer s.hooks.served(req.N)
	}
	if reply == nil {
		reply = HTTPError{Message: fmt.Sprintf("anthropictest: no reply was scripted for request %d", req.N), ShouldRetry: "false"}
	}
	reply.serve(w, c)
	if threaded && !c.settled {
		s.settleThread(req, c, nil) // no whole Message: nothing to hold
	}
}

// read reads r and its body, or returns nil if the client went away
// mid-body.
func read(r *http.Request) *Request {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil
	}
	return &Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
}

// serveCount answers a count_tokens request as the API does: 200
// application/json, a request-id header, and {"input_tokens":N}.
func (s *Server) serveCount(w http.ResponseWriter, r *http.Request) {
	if req := read(r); req != nil {
		s.count(w, req)
	}
}

// count answers req, a count_tokens request.
func (s *Server) count(w http.ResponseWriter, req *Request) {
	s.mu.Lock()
	s.counts++
	req.N = s.counts
	s.mu.Unlock()
	if e := s.checkStrict(req, true); e != nil {
		e.serve(w, &call{req: req, id: fmt.Sprintf("req_anthropictest_count%010d", req.N)})
		return
	}
	count := s.CountTokens
	if count == nil {
		count = estimateTokens
	}
	out := fmt.Appendf(nil, `{"input_tokens":%d}`, count(req))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Request-Id", fmt.Sprintf("req_anthropictest_count%010d", req.N))
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// A call is one request being answered: what a Reply needs from the server.
type call struct {
	req      *Request
	id       string          // the request-id header
	msgID    string          // the id of the message a Stream replies with
	model    string          // the model it names: the one requested
	stream   bool            // the request asked for a stream, not a Message
	threaded bool            // the request has a thread field (thread.go)
	settled  bool            // settleThread has run
	ctx      <-chan struct{} // closed when the client goes away
	done     <-chan struct{} // closed when the server closes
	after    func(time.Duration) <-chan time.Time
	srv      *Server // records the thinking blocks streamed, for strict mode
}

// wait waits d and reports whether the reply should go on.
func (c *call) wait(d time.Duration) bool {
	var tick <-chan time.Time
	if c.after != nil {
		tick = c.after(d)
	} else {
		t := time.NewTimer(d)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-tick:
		return true
	case <-c.ctx:
		return false
	case <-c.done:
		return false
	}
}

// stall waits for the client to go away or the server to close.
func (c *call) stall() {
	select {
	case <-c.ctx:
	case <-c.done:
	}
}

func writeStreamHeader(w http.ResponseWriter, c *call) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Request-Id", c.id)
	setRateLimits(h, c)
	w.WriteHeader(http.StatusOK)
}

// Rate limits the fake reports, a tier's: requests, input and output
// tokens a minute.
const (
	requestsLimit     = 4000
	inputTokensLimit  = 2_000_000
	outputTokensLimit = 400_000
)

// setRateLimits sets the anthropic-ratelimit-* headers the API sends with
// each reply: each limit, what remains of it (one request fewer for each
// request so far, the tokens untouched) and when it is whole again (RFC
// 3339), now, as a bucket this full is.
func setRateLimits(h http.Header, c *call) {
	reset := time.Now().UTC().Format(time.RFC3339)
	n := c.req.N
	for _, l := range []struct {
		name             string
		limit, remaining int
	}{
		{"requests", requestsLimit, max(0, requestsLimit-n)},
		{"input-tokens", inputTokensLimit, inputTokensLimit},
		{"output-tokens", outputTokensLimit, outputTokensLimit},
		{"tokens", inputTokensLimit + outputTokensLimit, inputTokensLimit + outputTokensLimit},
	} {
		h.Set("Anthropic-Ratelimit-"+l.name+"-Limit", strconv.Itoa(l.limit))
		h.Set("Anthropic-Ratelimit-"+l.name+"-Remaining", strconv.Itoa(l.remaining))
		h.Set("Anthropic-Ratelimit-"+l.name+"-Reset", reset)
	}
}

// resetConn takes the connection from net/http and closes it with linger 0,
// so the kernel sends RST instead of FIN: the client sees "connection reset
// by peer" mid-body, as when a proxy drops the stream.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}
