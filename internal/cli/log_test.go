package cli

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestLoggerRedacts(t *testing.T) {
	const key, token = "sk-ant-KEY-abc", "tok-XYZ"
	h := http.Header{}
	h.Set("X-Api-Key", "some-other-key-VALUE")
	h.Set("Authorization", "Bearer another-VALUE")
	h.Set("Content-Type", "application/json")
	var buf bytes.Buffer
	log := newLogger(&buf, true, key, "", token)
	log.Debug("sending with "+key, "header", h, "x-api-key", "raw-VALUE", "auth", "Bearer "+token,
		"nested", struct{ K string }{key})
	log.Info("plain", "n", 3)
	out := buf.String()
	for _, secret := range []string{key, token, "VALUE"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"application/json", "n=3", redacted} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	buf.Reset()
	newLogger(&buf, false, key).Error("hidden")
	if buf.Len() != 0 {
		t.Errorf("a quiet logger wrote %q", buf.String())
	}
}

// TestLoggerRedactsOnlySecrets checks that a short key is redacted where it
// stands as a word, and not inside unrelated text such as a request id.
func TestLoggerRedactsOnlySecrets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []any
		want      string
		forbidden string
	}{
		{"request id", []any{"request_id", "req_anthropictest0000000001"}, "request_id=req_anthropictest0000000001", ""},
		{"word in a message", []any{"err", "the key test was refused"}, `err="the key [REDACTED] was refused"`, " test "},
		{"the whole value", []any{"value", "test"}, "value=[REDACTED]", "=test"},
		{"in a URL", []any{"url", "http://x/?key=test&a=1"}, "url=\"http://x/?key=[REDACTED]&a=1\"", "=test&"},
		{"a credential header", []any{"header", http.Header{"X-Api-Key": {"test"}, "Request-Id": {"req_test_1"}}},
			"header=\"map[Request-Id:[req_test_1] X-Api-Key:[[REDACTED]]]\"", ""},
		{"a word that contains it", []any{"word", "testing contest"}, "word=\"testing contest\"", ""},
		{"a long key, even inside a word", []any{"v", "x" + testKey + "y"}, "v=x[REDACTED]y", testKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			newLogger(&buf, true, "test", testKey).Debug("m", tc.args...)
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("log = %q, want it to hold %q", buf.String(), tc.want)
			}
			if tc.forbidden != "" && strings.Contains(buf.String(), tc.forbidden) {
				t.Errorf("log = %q holds %q", buf.String(), tc.forbidden)
			}
		})
	}
}

// TestVerboseRequestIDs runs the command with -v and a short key: the
// request ids it logs stay readable, and the key is never printed.
func TestVerboseRequestIDs(t *testing.T) {
	h := newHarness(t, text("ok"))
	h.env["ANTHROPIC_API_KEY"] = "test"
	r := h.run(strings.NewReader(""), "-v", "hi")
	r.check(t, 0)
	if !strings.Contains(r.stderr, "request_id=req_anthropictest0000000001") {
		t.Errorf("the request id is not logged whole:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "[REDACTED]0") {
		t.Errorf("the log mangles a request id:\n%s", r.stderr)
	}
}

// TestStrayHandlerNotice checks that the agent's warning about a tool still
// running after its run reaches stderr without -v, and that the agent's
// wording is the one the CLI listens for.
func TestStrayHandlerNotice(t *testing.T) {
	var stderr bytes.Buffer
	logger := slog.New(noticeHandler{newLogger(&stderr, false).Handler(), &notices{w: &stderr}})
	logger.Warn(strayHandlerMessage, "err", errors.New("tool: 1 call(s) still running: stuck (toolu_1)"))
	if want := "a tool ignored the end of its run and may still be running: tool: 1 call(s) still running: stuck (toolu_1)\n"; stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
	src, err := os.ReadFile("../../agent/loop.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte(strconv.Quote(strayHandlerMessage))) {
		t.Errorf("agent/loop.go no longer logs %q", strayHandlerMessage)
	}
}
