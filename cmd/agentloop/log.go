package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// newLogger returns the -v debug log, or a discarding one when verbose is
// false. Whatever the layers below log, it never prints a secret: every
// attribute is checked, the message included, and any value that contains
// one of secrets, or whose key names a credential header, is redacted.
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

// redactor scrubs secrets from log attributes.
type redactor struct{ secrets []string }

const redacted = "[REDACTED]"

// credentialKeys are attribute keys whose values are never logged, whatever
// they hold.
var credentialKeys = []string{"authorization", "x-api-key", "api_key", "apikey", "auth_token", "token", "cookie"}

func (r redactor) replace(groups []string, a slog.Attr) slog.Attr {
	key := strings.ToLower(a.Key)
	for _, k := range credentialKeys {
		if key == k || strings.HasSuffix(key, "."+k) {
			return slog.String(a.Key, redacted)
		}
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := r.scrub(v.String()); s != v.String() {
			return slog.String(a.Key, s)
		}
	case slog.KindAny:
		// Values such as an http.Header print their contents; scrub that
		// text, since a header map can hold the key under any name.
		s := fmt.Sprint(v.Any())
		if t := r.scrub(s); t != s || headerLike(s) {
			return slog.String(a.Key, scrubHeaders(t))
		}
	}
	return a
}

func (r redactor) scrub(s string) string {
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}

// headerLike reports whether s looks like a printed header map holding a
// credential.
func headerLike(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "x-api-key") || strings.Contains(l, "authorization")
}

// scrubHeaders blanks the values of credential headers in a printed
// http.Header (map[Authorization:[Bearer x] X-Api-Key:[y]]).
func scrubHeaders(s string) string {
	for _, name := range []string{"Authorization:[", "X-Api-Key:["} {
		i := strings.Index(s, name)
		if i < 0 {
			continue
		}
		start := i + len(name)
		end := strings.IndexByte(s[start:], ']')
		if end < 0 {
			s = s[:start] + redacted
			continue
		}
		s = s[:start] + redacted + s[start+end:]
	}
	return s
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
