package main

import (
	"bytes"
	"net/http"
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
