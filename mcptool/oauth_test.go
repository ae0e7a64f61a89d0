package mcptool

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/mcptest"
	"github.com/agentloop/agentloop/llm"
)

// browser returns an OpenURL that browses like a user who consents, and
// counts its calls.
func browser(n *atomic.Int32) func(context.Context, string) error {
	return func(ctx context.Context, u string) error {
		n.Add(1)
		return mcptest.Browse(ctx, u)
	}
}

// callWhoami connects to srv with oauth and calls its tool.
func callWhoami(t *testing.T, srv *mcptest.OAuthServer, oauth *OAuth) error {
	t.Helper()
	s, err := ConnectURL(t.Context(), srv.URL, &Options{OAuth: oauth})
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := s.call(t.Context(), "whoami", nil)
	if err != nil {
		return err
	}
	if out.IsError || llm.TextOf(out.Content) != "authorized" {
		t.Fatalf("whoami = %+v", out)
	}
	return nil
}

// TestOAuthAuthorizationCode runs the whole flow against a real
// OAuth-protected server: discovery, dynamic registration, the browser's
// consent with PKCE, the token saved with mode 0600 and reused by the next
// connection, refreshed when it expires, and a revoked one replaced by
// authorizing again.
func TestOAuthAuthorizationCode(t *testing.T) {
	srv := mcptest.NewOAuthServer(t)
	dir := filepath.Join(t.TempDir(), "tokens")
	var opened atomic.Int32
	oauth := &OAuth{OpenURL: browser(&opened), Store: DirStore(dir)}

	if err := callWhoami(t, srv, oauth); err != nil {
		t.Fatal(err)
	}
	if opened.Load() != 1 || srv.Count("register") != 1 || srv.Count("token:authorization_code") != 1 {
		t.Errorf("first connection: browser opened %d times, %d registrations, %d code exchanges; want 1 each",
			opened.Load(), srv.Count("register"), srv.Count("token:authorization_code"))
	}
	files, err := os.ReadDir(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("token directory: %v, %v", files, err)
	}
	for path, want := range map[string]fs.FileMode{dir: 0o700, filepath.Join(dir, files[0].Name()): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, st.Mode().Perm(), err, want)
		}
	}

	// The next run reuses the saved token: no browser.
	if err := callWhoami(t, srv, oauth); err != nil {
		t.Fatal(err)
	}
	if opened.Load() != 1 || srv.Count("authorize") != 1 {
		t.Errorf("second connection opened the browser (%d) or authorized again (%d)", opened.Load(), srv.Count("authorize"))
	}

	// An expired token is refreshed, still without a browser.
	srv.SetTokenLifetime(time.Second) // within oauth2's expiry margin: expired at once
	srv.RevokeAll()
	if err := callWhoami(t, srv, oauth); err != nil { // authorizes again: the token was revoked
		t.Fatal(err)
	}
	if opened.Load() != 2 {
		t.Errorf("after revocation the browser opened %d times in all, want 2", opened.Load())
	}
	refreshes := srv.Count("token:refresh_token")
	srv.SetTokenLifetime(time.Hour)
	if err := callWhoami(t, srv, oauth); err != nil {
		t.Fatal(err)
	}
	if srv.Count("token:refresh_token") == refreshes || opened.Load() != 2 {
		t.Errorf("an expired saved token was not refreshed (%d refreshes) or the browser opened (%d)",
			srv.Count("token:refresh_token"), opened.Load())
	}

	// An expired token that cannot be refreshed starts the flow afresh
	// instead of failing the connection.
	saved, err := loadToken(DirStore(dir), srv.URL)
	if err != nil || saved == nil {
		t.Fatalf("loadToken: %v, %v", saved, err)
	}
	saved.Token.RefreshToken, saved.Token.Expiry = "", time.Now().Add(-time.Hour)
	if err := saveToken(DirStore(dir), srv.URL, *saved); err != nil {
		t.Fatal(err)
	}
	if err := callWhoami(t, srv, oauth); err != nil {
		t.Fatal(err)
	}
	if opened.Load() != 3 {
		t.Errorf("an unrefreshable expired token: browser opened %d times in all, want 3", opened.Load())
	}
}

// TestOAuthFailures checks the ways authorization fails: each is an error
// naming the server, marked ErrAuthorization where a flow ran.
func TestOAuthFailures(t *testing.T) {
	srv := mcptest.NewOAuthServer(t)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	// An MCP server whose authorization server is not running.
	guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"resource":"` + "http://" + r.Host + `/mcp","authorization_servers":["` + downURL + `"]}`))
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer guarded.Close()
	for _, tc := range []struct {
		name  string
		url   string
		opts  *Options
		auth  bool // errors.Is ErrAuthorization
		wants []string
	}{
		{"no OAuth configured", srv.URL, nil, false, []string{srv.URL, "requires authorization"}},
		{"nobody to ask", srv.URL, &Options{OAuth: &OAuth{}}, true, []string{srv.URL, "no way to ask"}},
		{"the user does not consent", srv.URL, &Options{OAuth: &OAuth{OpenURL: func(context.Context, string) error {
			return errors.New("the user closed the browser")
		}}}, true, []string{"the user closed the browser"}},
		{"authorization server down", guarded.URL + "/mcp", &Options{OAuth: &OAuth{OpenURL: mcptest.Browse}}, true,
			[]string{guarded.URL, downURL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConnectURL(t.Context(), tc.url, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrAuthorization) != tc.auth {
				t.Errorf("errors.Is(err, ErrAuthorization) = %v, want %v: %v", !tc.auth, tc.auth, err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}

// TestHandshakeTimeout checks that a server that never answers the
// handshake fails within the timeout, with an error naming it.
func TestHandshakeTimeout(t *testing.T) {
	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete { // the client ending the session it never had
			return
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer hang.Close()
	defer close(done)
	t.Run("http", func(t *testing.T) {
		_, err := ConnectURL(t.Context(), hang.URL, &Options{HandshakeTimeout: 100 * time.Millisecond})
		if !errors.Is(err, ErrHandshakeTimeout) || !strings.Contains(err.Error(), hang.URL) {
			t.Errorf("err = %v, want ErrHandshakeTimeout naming %s", err, hang.URL)
		}
	})
	t.Run("command", func(t *testing.T) {
		_, err := ConnectCommand(t.Context(), helperCommand(t, "mute"), &Options{HandshakeTimeout: 100 * time.Millisecond})
		if !errors.Is(err, ErrHandshakeTimeout) || !strings.Contains(err.Error(), "start server") {
			t.Errorf("err = %v, want ErrHandshakeTimeout naming the command", err)
		}
	})
}

// TestOAuthIssuerMismatch checks that authorization server metadata whose
// issuer is not the server it came from is refused (RFC 8414) when the
// resource names its authorization server: only a 2025-03-26 server, with
// no protected resource metadata, gets the old leniency.
func TestOAuthIssuerMismatch(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"issuer":"https://elsewhere.example","authorization_endpoint":"https://elsewhere.example/a",` +
			`"token_endpoint":"https://elsewhere.example/t","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`))
	}))
	defer as.Close()
	guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"resource":"http://` + r.Host + `/mcp","authorization_servers":["` + as.URL + `"]}`))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer guarded.Close()
	var opened atomic.Int32
	_, err := ConnectURL(t.Context(), guarded.URL+"/mcp", &Options{OAuth: &OAuth{OpenURL: browser(&opened)}})
	if !errors.Is(err, ErrAuthorization) || !strings.Contains(err.Error(), "does not match") || opened.Load() != 0 {
		t.Errorf("err = %v (browser opened %d times), want the issuer mismatch refused", err, opened.Load())
	}
}
