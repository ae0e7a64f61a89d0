package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuth configures how [ConnectURL] obtains authorization from a server
// that requires it, as the MCP authorization specification describes:
// discovery of the protected resource and its authorization server,
// client registration, then a grant. The zero value runs the
// authorization-code flow with PKCE, registering the client dynamically,
// but cannot show the authorization URL to anyone: set OpenURL.
type OAuth struct {
	// ClientID and ClientSecret are a client registered with the
	// authorization server beforehand. Empty means registering one: with
	// ClientMetadataURL when the server supports client ID metadata
	// documents, else dynamically.
	ClientID, ClientSecret string
	// ClientMetadataURL is the https URL of this client's metadata
	// document, used as its client ID where the server supports that.
	// Empty means none.
	ClientMetadataURL string
	// Grant is the OAuth grant: "" or "authorization_code" for a user's
	// consent in a browser, "client_credentials" for a machine client
	// (ClientID with ClientSecret, or with PrivateKeyPEM for a signed JWT
	// assertion), or "jwt_bearer" for enterprise-managed cross-app
	// access through IdP.
	Grant string
	// PrivateKeyPEM is the PKCS #8 key that signs the client's JWT
	// assertion, for the client_credentials grant with private_key_jwt.
	PrivateKeyPEM string
	// IdP is the enterprise identity provider of the jwt_bearer grant.
	IdP *IdP
	// RedirectPort is the loopback port the authorization-code flow
	// listens on for the redirect. 0 means any free port.
	RedirectPort int
	// OpenURL shows the user the authorization URL, by opening a browser
	// or printing it. The flow then waits for the browser's redirect to
	// the loopback address, at most 5 minutes. Nil fails any flow that
	// needs the user.
	OpenURL func(ctx context.Context, url string) error
	// Store keeps the authorization code's tokens between runs, so that
	// the user authorizes once. (The machine grants need no keeping: they
	// get a new token unaided.) Nil keeps them only for the connection's
	// life.
	Store TokenStore
	// Refused, when set, is told that the server refused the token from
	// Store (revoked, or expired past refreshing), just before the grant
	// runs again; a program tells its user why they are asked again.
	Refused func()
}

// IdP is an enterprise identity provider for cross-app access (the
// jwt_bearer grant): the user's ID token from it is exchanged there for an
// identity assertion grant, which the MCP server's authorization server
// takes in exchange for an access token.
type IdP struct {
	// Issuer is the IdP's issuer URL, where its metadata is found.
	Issuer string
	// TokenEndpoint overrides the token endpoint found in the metadata.
	TokenEndpoint string
	// ClientID and ClientSecret are this client's registration at the
	// IdP. The secret may be empty.
	ClientID, ClientSecret string
	// IDToken is the user's OpenID Connect ID token from the IdP.
	IDToken string
}

// ErrAuthorization marks a failure to obtain authorization from a server:
// an authorization server that is down or refuses, a user who does not
// consent in time, or no way to ask the user.
var ErrAuthorization = errors.New("authorization failed")

// browserWait bounds how long the authorization-code flow waits for the
// user to consent in the browser.
const browserWait = 5 * time.Minute

// oauthHandler is the auth.OAuthHandler of one connection: the grant
// o.Grant names, with tokens loaded from and saved to o.Store.
type oauthHandler struct {
	o       *OAuth
	key     string // the server's URL: the store's key
	client  *http.Client
	logger  *slog.Logger
	grant   auth.OAuthHandler
	stored  bool          // the first token came from the store
	pausing func() func() // pauses the handshake's stall timer; set by connect
	mu      sync.Mutex
	tokens  oauth2.TokenSource // set by grants other than the authorization code
}

// newOAuthHandler returns the handler for the server at serverURL.
func newOAuthHandler(o *OAuth, serverURL string, client *http.Client, logger *slog.Logger) (*oauthHandler, error) {
	client, err := legacyIssuerClient(client, serverURL)
	if err != nil {
		return nil, err
	}
	h := &oauthHandler{o: o, key: serverURL, client: client, logger: logger}
	// Only the authorization code needs its token saved: the machine
	// grants get a new one without anybody's help.
	var initial oauth2.TokenSource
	if o.Store != nil && (o.Grant == "" || o.Grant == "authorization_code") {
		saved, err := loadToken(o.Store, serverURL)
		if err != nil {
			logger.Warn("mcp: cannot read the saved OAuth token; authorizing afresh", "err", err)
		} else if saved != nil && saved.Token != nil {
			h.stored = true
			initial = savedSource{h.persist(saved.config(), saved.Token, saved)}
		}
	}
	switch o.Grant {
	case "", "authorization_code":
		port := o.RedirectPort
		if port == 0 {
			// Take a free port now: the redirect URI must be known before
			// registration. The flow listens on it again when it runs.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, fmt.Errorf("loopback redirect: %w", err)
			}
			port = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
		redirect := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
		cfg := &auth.AuthorizationCodeHandlerConfig{
			RedirectURL: redirect,
			AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				return h.fetchCode(ctx, port, a.URL)
			},
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{redirect},
				ClientName:              "agentloop",
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			}},
			RequestRefreshToken: true,
			Client:              client,
			NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
				return h.persist(c, t, nil), nil
			},
			InitialTokenSource: initial,
		}
		if o.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
		}
		if o.ClientID != "" {
			cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
			if o.ClientSecret != "" {
				cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
			}
		}
		g, err := auth.NewAuthorizationCodeHandler(cfg)
		if err != nil {
			return nil, err
		}
		h.grant = g
	case "client_credentials":
		if o.ClientID == "" || (o.ClientSecret == "") == (o.PrivateKeyPEM == "") {
			return nil, errors.New("the client_credentials grant needs a client ID, and a client secret or a private key (one of them)")
		}
	case "jwt_bearer":
		if o.ClientID == "" || o.IdP == nil || o.IdP.Issuer == "" || o.IdP.ClientID == "" || o.IdP.IDToken == "" {
			return nil, errors.New("the jwt_bearer grant needs a client ID and an IdP with its issuer, client ID and ID token")
		}
	default:
		return nil, fmt.Errorf("unknown OAuth grant %q: want authorization_code, client_credentials or jwt_bearer", o.Grant)
	}
	return h, nil
}

// TokenSource implements auth.OAuthHandler.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if h.grant != nil {
		return h.grant.TokenSource(ctx)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tokens, nil
}

// Authorize implements auth.OAuthHandler: the transport calls it when the
// server answers 401 or 403.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.mu.Lock()
	refused := h.stored && resp.StatusCode == http.StatusUnauthorized
	h.stored = false
	h.mu.Unlock()
	if refused {
		h.logger.Warn("mcp: the server refused the saved OAuth token (revoked or expired); authorizing again")
		if h.o.Refused != nil {
			h.o.Refused()
		}
	}
	var err error
	if h.grant != nil {
		err = h.grant.Authorize(ctx, req, resp)
	} else {
		err = h.machineGrant(ctx, req, resp)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAuthorization, err)
	}
	return nil
}

// fetchCode runs the user's part of the authorization-code flow: it
// listens on the loopback port, shows the user url, and waits for the
// browser to bring the code back.
func (h *oauthHandler) fetchCode(ctx context.Context, port int, url string) (*auth.AuthorizationResult, error) {
	if h.o.OpenURL == nil {
		return nil, errors.New("the server needs a user's authorization, and there is no way to ask one")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, fmt.Errorf("loopback redirect: %w", err)
	}
	type result struct {
		res *auth.AuthorizationResult
		err error
	}
	got := make(chan result, 1)
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			q := r.URL.Query()
			var res result
			if e := q.Get("error"); e != "" {
				res.err = fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
				http.Error(w, "Authorization failed: "+e+". You can close this window.", http.StatusBadRequest)
			} else {
				res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
				_, _ = w.Write([]byte("agentloop is authorized. You can close this window.\n"))
			}
			select {
			case got <- res:
			default: // a second redirect; the first one counts
			}
		}),
	}
	go srv.Serve(ln)
	defer srv.Close()

	// The user takes their time: the handshake's stall timer waits.
	if h.pausing != nil {
		defer h.pausing()()
	}
	ctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	if err := h.o.OpenURL(ctx, url); err != nil {
		return nil, err
	}
	select {
	case r := <-got:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no authorization came back from the browser: %w", context.Cause(ctx))
	}
}

// persist returns a token source that starts from t, refreshes with c, and
// saves every new token to the store.
func (h *oauthHandler) persist(c *oauth2.Config, t *oauth2.Token, saved *savedToken) oauth2.TokenSource {
	// Refreshes outlive the request that started the flow, so they get a
	// context of their own that carries the HTTP client.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	p := &persisting{src: c.TokenSource(ctx, t), store: h.o.Store, key: h.key, logger: h.logger}
	rec := savedToken{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.Endpoint.TokenURL,
		AuthStyle: int(c.Endpoint.AuthStyle), Scopes: c.Scopes}
	p.rec = rec
	if saved == nil {
		p.save(t)
	} else {
		p.last = t.AccessToken
	}
	return p
}

// savedSource is the token source of a saved token. When the token has
// expired and cannot be refreshed (no refresh token, or the refresh
// fails), it reports invalid_grant: the transport then sends the request
// without a token, and the server's 401 starts the grant afresh, where a
// refresh that failed would fail the request.
type savedSource struct{ src oauth2.TokenSource }

func (s savedSource) Token() (*oauth2.Token, error) {
	t, err := s.src.Token()
	if err != nil {
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.ErrorCode == "invalid_grant" {
			return nil, err
		}
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the saved token cannot be refreshed: " + err.Error()}
	}
	return t, nil
}

// persisting is a token source that saves each new token.
type persisting struct {
	src    oauth2.TokenSource
	store  TokenStore
	key    string
	logger *slog.Logger

	mu   sync.Mutex
	rec  savedToken
	last string // the access token last saved
}

func (p *persisting) Token() (*oauth2.Token, error) {
	t, err := p.src.Token()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.AccessToken != p.last {
		p.save(t)
	}
	return t, nil
}

func (p *persisting) save(t *oauth2.Token) {
	p.last = t.AccessToken
	if p.store == nil {
		return
	}
	rec := p.rec
	rec.Token = t
	if err := saveToken(p.store, p.key, rec); err != nil {
		p.logger.Warn("mcp: cannot save the OAuth token; the next run will authorize again", "err", err)
	}
}

// legacyIssuerClient returns c for the authorization requests of the
// server at serverURL, made to accept what a server of the 2025-03-26
// specification may serve: with no protected resource metadata, its origin
// is the authorization base URL, and the authorization server metadata
// found there may name another issuer (that version did not apply RFC
// 8414's issuer check). Such metadata, from the server's own origin and
// only once the server has no protected resource metadata, is read with the
// origin as its issuer. Everything else passes unchanged, so a server of a
// later version gets the issuer check.
func legacyIssuerClient(c *http.Client, serverURL string) (*http.Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	return wrapTransport(c, func(next http.RoundTripper) http.RoundTripper {
		return &legacyIssuer{next: next, origin: u.Scheme + "://" + u.Host}
	}), nil
}

type legacyIssuer struct {
	next   http.RoundTripper
	origin string

	mu    sync.Mutex
	noPRM bool // the origin's root protected resource metadata is not found
}

func (l *legacyIssuer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || req.URL.Scheme+"://"+req.URL.Host != l.origin {
		return resp, err
	}
	switch req.URL.Path {
	case "/.well-known/oauth-protected-resource":
		l.mu.Lock()
		l.noPRM = resp.StatusCode == http.StatusNotFound
		l.mu.Unlock()
	case "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration":
		l.mu.Lock()
		legacy := l.noPRM
		l.mu.Unlock()
		if !legacy || resp.StatusCode != http.StatusOK {
			return resp, nil
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var meta map[string]any
		if json.Unmarshal(body, &meta) == nil {
			meta["issuer"] = l.origin
			if b, err := json.Marshal(meta); err == nil {
				body = b
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	}
	return resp, nil
}
