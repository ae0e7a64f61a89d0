// Package mcptest starts, for this module's tests, a real MCP server over
// streamable HTTP that requires OAuth, with its authorization server, both
// on loopback. The MCP server is the go-sdk's, guarded by the go-sdk's auth
// package (bearer tokens, protected resource metadata); the authorization
// server is a small one written here that speaks the real protocol:
// metadata, dynamic client registration, the authorization code with PKCE
// S256 and the resource parameter, and refresh tokens.
//
//	srv := mcptest.NewOAuthServer(t)
//	// connect to srv.URL; a browser is a GET of the authorization URL
//	// that follows the redirects
package mcptest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// An OAuthServer is an MCP server that requires OAuth, and its
// authorization server. Its methods are safe for concurrent use.
type OAuthServer struct {
	// URL is the MCP endpoint.
	URL string
	// AuthURL is the authorization server's issuer URL.
	AuthURL string

	mcp, as *httptest.Server

	mu       sync.Mutex
	codes    map[string]codeGrant // code → what it was issued for
	tokens   map[string]bool      // valid access tokens
	refresh  map[string]string    // refresh token → client
	clients  map[string]bool
	counts   map[string]int // requests by endpoint: "authorize", "token:authorization_code", ...
	lifetime time.Duration
}

type codeGrant struct {
	client, challenge, redirect, resource string
}

// NewOAuthServer starts the servers; they stop when tb's test ends. The
// MCP server has one tool, whoami, which answers "authorized".
func NewOAuthServer(tb testing.TB) *OAuthServer {
	s := &OAuthServer{
		codes: map[string]codeGrant{}, tokens: map[string]bool{}, refresh: map[string]string{},
		clients: map[string]bool{}, counts: map[string]int{}, lifetime: time.Hour,
	}
	s.as = httptest.NewServer(http.HandlerFunc(s.serveAS))
	tb.Cleanup(s.as.Close)
	s.AuthURL = s.as.URL

	server := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Says whether the call was authorized."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, nil, nil
		})
	mux := http.NewServeMux()
	s.mcp = httptest.NewUnstartedServer(mux)
	s.mcp.Start()
	tb.Cleanup(s.mcp.Close)
	s.URL = s.mcp.URL + "/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             s.URL,
		AuthorizationServers: []string{s.AuthURL},
		ScopesSupported:      []string{"read"},
	}))
	guard := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.mcp.URL + "/.well-known/oauth-protected-resource/mcp",
		Scopes:              []string{"read"},
	})
	mux.Handle("/mcp", guard(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	return s
}

// SetTokenLifetime sets the lifetime of the access tokens issued from
// now on.
func (s *OAuthServer) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lifetime = d
}

// RevokeAll revokes every access and refresh token issued so far, as a
// user who signs the client out would.
func (s *OAuthServer) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]bool{}
	s.refresh = map[string]string{}
}

// Count returns how many requests an endpoint has had: "register",
// "authorize", or "token:" and the grant type.
func (s *OAuthServer) Count(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[endpoint]
}

func (s *OAuthServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tokens[token] {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: []string{"read"}, Expiration: time.Now().Add(time.Hour)}, nil
}

func (s *OAuthServer) serveAS(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                s.AuthURL,
			"authorization_endpoint":                s.AuthURL + "/authorize",
			"token_endpoint":                        s.AuthURL + "/token",
			"registration_endpoint":                 s.AuthURL + "/register",
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
			"scopes_supported":                      []string{"read", "offline_access"},
		})
	case "/register":
		s.count("register")
		var meta struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_client_metadata"})
			return
		}
		id := "client-" + rand.Text()
		s.mu.Lock()
		s.clients[id] = true
		s.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
	case "/authorize":
		s.count("authorize")
		q := r.URL.Query()
		s.mu.Lock()
		known := s.clients[q.Get("client_id")]
		s.mu.Unlock()
		switch {
		case !known:
			http.Error(w, "unknown client", http.StatusBadRequest)
			return
		case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
			http.Error(w, "PKCE S256 is required", http.StatusBadRequest)
			return
		case q.Get("resource") != s.URL:
			http.Error(w, "the resource parameter must name the MCP server", http.StatusBadRequest)
			return
		}
		code := rand.Text()
		s.mu.Lock()
		s.codes[code] = codeGrant{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource")}
		s.mu.Unlock()
		u, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		v := u.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		u.RawQuery = v.Encode()
		// The user consented: the browser goes back to the client.
		http.Redirect(w, r, u.String(), http.StatusFound)
	case "/token":
		if err := r.ParseForm(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request"})
			return
		}
		grant := r.PostForm.Get("grant_type")
		s.count("token:" + grant)
		s.mu.Lock()
		defer s.mu.Unlock()
		switch grant {
		case "authorization_code":
			g, ok := s.codes[r.PostForm.Get("code")]
			delete(s.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || r.PostForm.Get("redirect_uri") != g.redirect ||
				r.PostForm.Get("resource") != g.resource {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
				return
			}
			s.issueLocked(w, g.client)
		case "refresh_token":
			client, ok := s.refresh[r.PostForm.Get("refresh_token")]
			delete(s.refresh, r.PostForm.Get("refresh_token"))
			if !ok {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
				return
			}
			s.issueLocked(w, client)
		default:
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
		}
	default:
		http.NotFound(w, r)
	}
}

func (s *OAuthServer) issueLocked(w http.ResponseWriter, client string) {
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	s.tokens[access] = true
	s.refresh[refresh] = client
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(s.lifetime / time.Second), "scope": "read",
	})
}

func (s *OAuthServer) count(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[endpoint]++
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		panic(fmt.Sprintf("mcptest: %v", err))
	}
}

// Browse is what a browser does with an authorization URL once the user
// consents: it fetches it and follows the redirects, the last of which
// reaches the client's loopback redirect URI.
func Browse(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("browser: %s: %s", resp.Request.URL.Redacted(), resp.Status)
	}
	return nil
}
