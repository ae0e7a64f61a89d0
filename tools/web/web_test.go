package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFetch(t *testing.T) {
	mux := http.NewServeMux()
	page := func(ctype, body string, status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
		}
	}
	mux.Handle("/page", page("text/html; charset=utf-8",
		`<html><head><title>T</title><script>evil()</script></head><body><h1>Title</h1><p>Some <b>bold</b> and a <a href="/x">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`, 200))
	mux.Handle("/text", page("text/plain", "just text\n", 200))
	mux.Handle("/latin1", page("text/html; charset=iso-8859-1", "<p>caf\xe9</p>", 200))
	mux.Handle("/meta", page("text/html", "<html><head><meta charset=\"iso-8859-1\"></head><body><p>na\xefve</p></body></html>", 200))
	mux.Handle("/json", page("application/json", `{"a":1}`, 200))
	mux.Handle("/image", page("image/png", "\x89PNG\r\n\x1a\n", 200))
	mux.Handle("/missing", page("text/html", "<p>not here</p>", 404))
	mux.Handle("/big", page("text/plain", strings.Repeat("é", 1000), 200))
	mux.Handle("/huge", page("text/plain", strings.Repeat("a", 3000), 200))
	mux.Handle("/redirect", http.RedirectHandler("/text", http.StatusFound))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	// Another host (another port is another host to a URL): a redirect
	// there is not followed, since the call was approved for srv's URL.
	elsewhere := httptest.NewServer(http.RedirectHandler(srv.URL+"/text", http.StatusFound))
	defer elsewhere.Close()
	mux.Handle("/away", http.RedirectHandler(elsewhere.URL+"/secret", http.StatusFound))

	reg := tool.NewRegistry(tool.Config{})
	reg.Register(New(Config{HTTPClient: srv.Client(), MaxOutputBytes: 1001, MaxBodyBytes: 2500}))
	tests := []struct {
		name    string
		url     string
		want    string
		isError bool
	}{
		{"HTML to Markdown", srv.URL + "/page", "# Title\n\nSome **bold** and a [link](/x).\n\n- one\n- two", false},
		{"text", srv.URL + "/text", "just text\n", false},
		{"JSON", srv.URL + "/json", `{"a":1}`, false},
		{"Latin-1 by header", srv.URL + "/latin1", "café", false},
		{"Latin-1 by meta", srv.URL + "/meta", "naïve", false},
		{"redirect", srv.URL + "/redirect", "(redirected to " + srv.URL + "/text)\n\njust text\n", false},
		{"redirect to another host", srv.URL + "/away", srv.URL + "/away redirects to another host, " + elsewhere.URL +
			"/secret; not followed: fetch that URL with another call if you want it", true},
		{"output cut on a character boundary", srv.URL + "/big", strings.Repeat("é", 500) + "\n\n[cut: the page has 2000 bytes of text; only the first 1001 are shown]", false},
		{"body cut", srv.URL + "/huge", "", false},
		{"HTTP error", srv.URL + "/missing", "HTTP 404 Not Found from " + srv.URL + "/missing:\nnot here", true},
		{"binary refused", srv.URL + "/image", "refused: " + srv.URL + "/image is image/png, not text; web_fetch returns only web pages and text", true},
		{"file scheme refused", "file:///etc/passwd", `refused: "file:///etc/passwd" is not an http or https URL`, true},
		{"ftp refused", "ftp://example.com/x", `refused: "ftp://example.com/x" is not an http or https URL`, true},
		{"no host", "http:///x", `invalid URL "http:///x": no host`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := json.Marshal(Input{URL: tt.url})
			res := reg.Run(t.Context(), []llm.ToolUse{{ID: "toolu_1", Name: Name, Input: b}})[0]
			got := llm.TextOf(res.Content)
			if tt.name == "body cut" {
				if !strings.HasSuffix(got, "[cut: the page has 2500 bytes of text; only the first 1001 are shown]") {
					t.Errorf("got %q", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || res.IsError != tt.isError {
				t.Errorf("is_error %v, want %v; (-want +got):\n%s", res.IsError, tt.isError, diff)
			}
		})
	}
}

func TestNormalizeURL(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{"https://go.dev/doc", "https://go.dev/doc", ""},
		{"HTTPS://Go.DEV./doc", "https://go.dev/doc", ""},
		{"https://go.dev", "https://go.dev/", ""},
		{"https://go.dev:443/x", "https://go.dev/x", ""},
		{"http://go.dev:80/x", "http://go.dev/x", ""},
		{"https://go.dev:80/x", "https://go.dev:80/x", ""},
		{"http://go.dev:8080/x?q=1#frag", "http://go.dev:8080/x?q=1", ""},
		{"https://user:secret@go.dev/x", "https://go.dev/x", ""},
		{"https://go.dev/a/../b/./%64oc", "https://go.dev/b/doc", ""},
		{"https://bücher.example/", "https://xn--bcher-kva.example/", ""},
		{"http://127.0.0.1:80/", "http://127.0.0.1/", ""},
		{"http://[::1]:80/x", "http://[::1]/x", ""},
		{"http://[::1]:8080/x", "http://[::1]:8080/x", ""},
		{"file:///etc/passwd", "", `refused: "file:///etc/passwd" is not an http or https URL`},
		{"http:///x", "", `invalid URL "http:///x": no host`},
		{"https://user@:443/", "", `invalid URL "https://user@:443/": no host`},
		{"http://%zz/", "", `invalid URL "http://%zz/"`},
	}
	for _, tt := range tests {
		u, err := NormalizeURL(tt.in)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("NormalizeURL(%q) = %v, %v; want the error %q…", tt.in, u, err, tt.wantErr)
			}
		case err != nil || u.String() != tt.want:
			t.Errorf("NormalizeURL(%q) = %v, %v; want %s", tt.in, u, err, tt.want)
		}
	}
}

// TestRedirectDowngrade: a redirect from https to http is not followed,
// even on the same host, while one within https is.
func TestRedirectDowngrade(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/text", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("over " + map[bool]string{true: "https", false: "http"}[r.TLS != nil]))
	}))
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	plain := "http" + strings.TrimPrefix(srv.URL, "https") // the same host and port
	mux.Handle("/down", http.RedirectHandler(plain+"/text", http.StatusFound))
	mux.Handle("/same", http.RedirectHandler(srv.URL+"/text", http.StatusFound))

	reg := tool.NewRegistry(tool.Config{})
	reg.Register(New(Config{HTTPClient: srv.Client()}))
	for _, tt := range []struct{ url, want string }{
		{srv.URL + "/down", srv.URL + "/down redirects from https to http, " + plain + "/text; not followed, since the page would travel unencrypted"},
		{srv.URL + "/same", "(redirected to " + srv.URL + "/text)\n\nover https"},
	} {
		b, _ := json.Marshal(Input{URL: tt.url})
		res := reg.Run(t.Context(), []llm.ToolUse{{ID: "toolu_1", Name: Name, Input: b}})[0]
		if diff := cmp.Diff(tt.want, llm.TextOf(res.Content)); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tt.url, diff)
		}
	}
}
