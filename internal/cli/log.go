package cli

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// newLogger returns the -v debug log, or a discarding one when verbose is
// false. Whatever the layers below log, it never prints a secret: the
// values of credential attributes and headers are redacted whatever they
// hold, and each of secrets (the configured key and token) is redacted
// wherever it stands as a word of its own, in the message and every
// attribute. Only as a word: a short key such as "test" must not turn a
// request id like req_anthropictest01 into nonsense.
func newLogger(w io.Writer, verbose bool, secrets ...string) *slog.Logger {
	if !verbose {
		return slog.New(slog.DiscardHandler)
	}
	var keep []string
	for _, s := range secrets {
		if s != "" {
			keep = append(keep, s)
		}
	}
	r := redactor{secrets: keep}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level:       slog.LevelDebug,
		ReplaceAttr: r.replace,
	}))
}

// redactor scrubs secrets from log attributes, and from a transcript.
type redactor struct {
	secrets []string
	// inWords scrubs a short secret inside a word too, as a transcript
	// must: it outlives the run, and what a word held is not worth a key.
	inWords bool
}

const redacted = "[REDACTED]"

// longSecret is the length from which a secret is redacted even inside a
// word. API keys and tokens are far longer.
const longSecret = 20

// credentialKeys are attribute keys and header names whose values are
// never logged, whatever they hold.
var credentialKeys = []string{"authorization", "x-api-key", "api_key", "apikey", "auth_token", "token", "cookie", "proxy-authorization"}

func isCredentialKey(key string) bool {
	key = strings.ToLower(key)
	for _, k := range credentialKeys {
		if key == k || strings.HasSuffix(key, "."+k) {
			return true
		}
	}
	return false
}

func (r redactor) replace(groups []string, a slog.Attr) slog.Attr {
	if isCredentialKey(a.Key) {
		return slog.String(a.Key, redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := r.scrub(v.String()); s != v.String() {
			return slog.String(a.Key, s)
		}
	case slog.KindAny:
		if h, ok := v.Any().(http.Header); ok {
			return slog.String(a.Key, r.scrub(fmt.Sprint(redactHeader(h))))
		}
		// Values such as errors and structs print their contents; the
		// printed text is what is checked.
		s := fmt.Sprint(v.Any())
		if t := r.scrub(s); t != s {
			return slog.String(a.Key, t)
		}
	}
	return a
}

// redactHeader returns h with the values of credential headers replaced.
func redactHeader(h http.Header) http.Header {
	out := h.Clone()
	for name := range out {
		if isCredentialKey(name) {
			out[name] = []string{redacted}
		}
	}
	return out
}

// scrub replaces each secret in s where it stands as a word: not preceded
// or followed by a letter, digit, '-' or '_', the characters keys are made
// of. A secret as long as a real key is replaced wherever it is, since no
// unrelated text holds it by chance, and so is any with inWords.
func (r redactor) scrub(s string) string {
	for _, secret := range r.secrets {
		if len(secret) >= longSecret || r.inWords {
			s = strings.ReplaceAll(s, secret, redacted)
			continue
		}
		var b strings.Builder
		rest := s
		for {
			i := strings.Index(rest, secret)
			if i < 0 {
				break
			}
			end := i + len(secret)
			whole := (i == 0 || !keyChar(rest[i-1])) && (end == len(rest) || !keyChar(rest[end]))
			b.WriteString(rest[:i])
			if whole {
				b.WriteString(redacted)
			} else {
				b.WriteString(secret)
			}
			rest = rest[end:]
		}
		if b.Len() > 0 {
			b.WriteString(rest)
			s = b.String()
		}
	}
	return s
}

func keyChar(c byte) bool {
	return c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// loggingTransport logs each HTTP exchange for -v: method, URL, status,
// request id and time taken. It never logs headers or bodies, which hold
// the key and the conversation.
type loggingTransport struct {
	next http.RoundTripper
	log  *slog.Logger
}

func (t loggingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	t.log.Debug("http request", "method", req.Method, "url", req.URL.Redacted())
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.log.Debug("http error", "method", req.Method, "url", req.URL.Redacted(), "err", err, "after", time.Since(start))
		return nil, err
	}
	t.log.Debug("http response", "status", resp.StatusCode, "request_id", resp.Header.Get("Request-Id"),
		"content_type", resp.Header.Get("Content-Type"), "after", time.Since(start))
	return resp, nil
}

// httpClient returns the HTTP client for the API: the default one, with
// each exchange logged when verbose.
func httpClient(log *slog.Logger, verbose bool) *http.Client {
	if !verbose {
		return nil // llm's default
	}
	return &http.Client{Transport: loggingTransport{next: http.DefaultTransport, log: log}}
}

// logModel wraps the model for -v: a line per model call and per finished
// turn, with sizes and usage but not the content.
func logModel(log *slog.Logger) func(llm.Model) llm.Model {
	return func(m llm.Model) llm.Model {
		return llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
			return func(yield func(llm.Event, error) bool) {
				log.Debug("model call", "model", req.Model, "messages", len(req.Messages), "tools", len(req.Tools),
					"max_tokens", req.MaxTokens, "thinking", req.Thinking != nil, "cache", req.Cache)
				start := time.Now()
				for ev, err := range m.Stream(ctx, req) {
					switch ev := ev.(type) {
					case llm.MessageStart:
						log.Debug("model turn started", "id", ev.ID, "model", ev.Model, "after", time.Since(start))
					case llm.MessageDelta:
						log.Debug("model turn stopped", "stop_reason", ev.StopReason, "input_tokens", ev.Usage.InputTokens,
							"output_tokens", ev.Usage.OutputTokens, "cache_read", ev.Usage.CacheReadInputTokens,
							"cache_write", ev.Usage.CacheCreationInputTokens, "after", time.Since(start))
					}
					if err != nil {
						log.Debug("model stream error", "err", err, "after", time.Since(start))
					}
					if !yield(ev, err) {
						return
					}
				}
			}
		})
	}
}

// retryMessage is the message of the llm client's log line for a retry,
// with the attributes attempt, of, wait and err (see llm.Config.Logger).
const retryMessage = "llm: retrying"

// notices shows the one-line notices the log carries even without -v:
// the llm client's retries, each of which a waiting user should see. They
// go through the renderer once there is one, so that they never land on
// the spinner or in the middle of the answer.
type notices struct {
	mu   sync.Mutex
	w    io.Writer                        // until show is set
	show func(format string, args ...any) // the renderer's note
}

func (n *notices) note(line string) {
	n.mu.Lock()
	show := n.show
	n.mu.Unlock()
	if show != nil {
		show("%s", line)
		return
	}
	fmt.Fprintln(n.w, line)
}

// setShow sends the notices to show from now on.
func (n *notices) setShow(show func(format string, args ...any)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.show = show
}

// strayHandlerMessage is the agent's warning that a tool handler was still
// running when its run ended.
const strayHandlerMessage = "agent: a tool handler ignored its cancelled context"

// noticeHandler is a slog.Handler that turns the records notices shows
// into one short line each, and passes every record on to the -v log.
type noticeHandler struct {
	slog.Handler
	n *notices
}

func (h noticeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.Handler.Enabled(ctx, l)
}

func (h noticeHandler) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case retryMessage:
		h.n.note(retryLine(r))
	case strayHandlerMessage:
		// The run has ended, but a tool it started is still running: a
		// person must hear of it without -v.
		var cause string
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				cause = a.Value.String()
			}
			return true
		})
		h.n.note("a tool ignored the end of its run and may still be running: " + shorten(cause, 200))
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h noticeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return noticeHandler{h.Handler.WithAttrs(as), h.n}
}

func (h noticeHandler) WithGroup(name string) slog.Handler {
	return noticeHandler{h.Handler.WithGroup(name), h.n}
}

// retryLine says what a retry record says: the attempt, the wait and why.
func retryLine(r slog.Record) string {
	var attempt, of int64
	var wait time.Duration
	var cause string
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch a.Key {
		case "attempt":
			attempt = v.Int64()
		case "of":
			of = v.Int64()
		case "wait":
			wait = v.Duration()
		case "err":
			if err, ok := v.Any().(error); ok {
				cause = describeError(err).Error()
			} else {
				cause = v.String()
			}
		}
		return true
	})
	return fmt.Sprintf("retrying in %v (attempt %d of %d): %s", wait.Round(time.Millisecond), attempt, of, shorten(cause, 160))
}
