package mcptool

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// machineGrant obtains a token without a user: the client_credentials
// grant, or the jwt_bearer grant of cross-app access.
func (h *oauthHandler) machineGrant(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	prm, asm, scopes, err := discover(ctx, req, resp, h.client)
	if err != nil {
		return err
	}
	var src oauth2.TokenSource
	switch h.o.Grant {
	case "client_credentials":
		src, err = h.clientCredentials(prm, asm, scopes)
	case "jwt_bearer":
		src, err = h.crossApp(ctx, prm, asm, scopes)
	}
	if err != nil {
		return err
	}
	// Fetch the token now, so that a refusal is reported as such rather
	// than as the next request's failure.
	src = oauth2.ReuseTokenSource(nil, src)
	if _, err := src.Token(); err != nil {
		return fmt.Errorf("token request to %s: %w", asm.TokenEndpoint, err)
	}
	h.mu.Lock()
	h.tokens = src
	h.mu.Unlock()
	return nil
}

// discover finds the server's protected resource metadata (from the
// challenge's resource_metadata, else the well-known paths) and its
// authorization server's metadata, falling back as the 2025-03-26
// specification does, and the scopes to request.
func discover(ctx context.Context, req *http.Request, resp *http.Response, client *http.Client) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, []string, error) {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("WWW-Authenticate: %w", err)
	}
	var metaURL string
	var scopes []string
	for _, c := range challenges {
		if c.Params["resource_metadata"] != "" && metaURL == "" {
			metaURL = c.Params["resource_metadata"]
		}
		if c.Scheme == "bearer" && c.Params["scope"] != "" && scopes == nil {
			scopes = strings.Fields(c.Params["scope"])
		}
	}
	server := req.URL.String()
	u := *req.URL
	u.RawQuery, u.Fragment = "", ""
	type candidate struct{ meta, resource string }
	var candidates []candidate
	if metaURL != "" {
		candidates = append(candidates, candidate{metaURL, server})
	}
	path := u.Path
	u.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(path, "/")
	candidates = append(candidates, candidate{u.String(), server})
	u.Path = "/.well-known/oauth-protected-resource"
	root := *req.URL
	root.Path, root.RawQuery = "", ""
	candidates = append(candidates, candidate{u.String(), root.String()})
	var prm *oauthex.ProtectedResourceMetadata
	for _, c := range candidates {
		if p, err := oauthex.GetProtectedResourceMetadata(ctx, c.meta, c.resource, client); err == nil && p != nil {
			prm = p
			break
		}
	}
	if prm == nil {
		// 2025-03-26: the server's origin is the authorization server.
		prm = &oauthex.ProtectedResourceMetadata{Resource: server, AuthorizationServers: []string{root.String()}}
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, nil, nil, errors.New("the protected resource metadata names no authorization server")
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, client)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("authorization server %s: %w", issuer, err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: issuer, AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint: issuer + "/token", RegistrationEndpoint: issuer + "/register"}
	}
	if scopes == nil {
		scopes = prm.ScopesSupported
	}
	return prm, asm, scopes, nil
}

// clientCredentials returns the token source of the client_credentials
// grant, authenticating with the secret (basic or post, as the server
// supports) or with a JWT signed by the private key.
func (h *oauthHandler) clientCredentials(prm *oauthex.ProtectedResourceMetadata, asm *oauthex.AuthServerMeta, scopes []string) (oauth2.TokenSource, error) {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	cfg := &clientcredentials.Config{
		ClientID:       h.o.ClientID,
		TokenURL:       asm.TokenEndpoint,
		Scopes:         scopes,
		EndpointParams: url.Values{"resource": {prm.Resource}},
	}
	if h.o.ClientSecret != "" {
		cfg.ClientSecret = h.o.ClientSecret
		cfg.AuthStyle = authStyle(asm.TokenEndpointAuthMethodsSupported)
		return cfg.TokenSource(ctx), nil
	}
	key, err := parsePrivateKey(h.o.PrivateKeyPEM)
	if err != nil {
		return nil, err
	}
	cfg.AuthStyle = oauth2.AuthStyleInParams
	// Each token request gets a fresh assertion: one is valid for minutes.
	return tokenFunc(func() (*oauth2.Token, error) {
		assertion, err := signJWT(key, map[string]any{
			"iss": h.o.ClientID, "sub": h.o.ClientID, "aud": asm.Issuer,
			"iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix(), "jti": rand.Text(),
		}, "")
		if err != nil {
			return nil, err
		}
		c := *cfg
		c.EndpointParams = url.Values{
			"resource":              {prm.Resource},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion":      {assertion},
		}
		return c.Token(ctx)
	}), nil
}

// crossApp runs enterprise-managed authorization: the user's ID token is
// exchanged at the IdP for an identity assertion grant (RFC 8693), which
// the MCP server's authorization server exchanges for an access token
// (RFC 7523).
func (h *oauthHandler) crossApp(ctx context.Context, prm *oauthex.ProtectedResourceMetadata, asm *oauthex.AuthServerMeta, scopes []string) (oauth2.TokenSource, error) {
	idp := h.o.IdP
	endpoint := idp.TokenEndpoint
	if endpoint == "" {
		meta, err := auth.GetAuthServerMetadata(ctx, idp.Issuer, h.client)
		if err != nil || meta == nil {
			return nil, fmt.Errorf("identity provider %s: no metadata (%v)", idp.Issuer, err)
		}
		endpoint = meta.TokenEndpoint
	}
	creds := &oauthex.ClientCredentials{ClientID: idp.ClientID}
	if idp.ClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: idp.ClientSecret}
	}
	grant, err := oauthex.ExchangeToken(ctx, endpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           asm.Issuer,
		Resource:           prm.Resource,
		Scope:              scopes,
		SubjectToken:       idp.IDToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, creds, h.client)
	if err != nil {
		return nil, fmt.Errorf("token exchange at the identity provider: %w", err)
	}
	cfg := &clientcredentials.Config{
		ClientID:     h.o.ClientID,
		ClientSecret: h.o.ClientSecret,
		TokenURL:     asm.TokenEndpoint,
		AuthStyle:    authStyle(asm.TokenEndpointAuthMethodsSupported),
		Scopes:       scopes,
		// The package lets grant_type be replaced: this is the JWT bearer
		// grant, not client_credentials.
		EndpointParams: url.Values{
			"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"},
			"assertion":  {grant.AccessToken},
		},
	}
	return cfg.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, h.client)), nil
}

// tokenFunc is a token source from a function.
type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// authStyle picks how the client authenticates at the token endpoint
// from the methods the server supports: client_secret_basic by default,
// as RFC 8414 says, else client_secret_post.
func authStyle(supported []string) oauth2.AuthStyle {
	for _, m := range supported {
		if m == "client_secret_basic" {
			return oauth2.AuthStyleInHeader
		}
	}
	for _, m := range supported {
		if m == "client_secret_post" {
			return oauth2.AuthStyleInParams
		}
	}
	return oauth2.AuthStyleInHeader
}

// parsePrivateKey reads a PKCS #8 (or SEC 1 EC, or PKCS #1 RSA) PEM key.
func parsePrivateKey(pemText string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("the private key is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("private key of type %T cannot sign", k)
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("the private key is not PKCS #8, SEC 1 or PKCS #1")
}

// signJWT signs claims as a compact JWT with key: ES256 for a P-256 key,
// RS256 for an RSA key.
func signJWT(key crypto.Signer, claims map[string]any, typ string) (string, error) {
	header := map[string]string{}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve.Params().BitSize != 256 {
			return "", errors.New("an EC private key must be P-256 (ES256)")
		}
		header["alg"] = "ES256"
	case *rsa.PrivateKey:
		header["alg"] = "RS256"
	default:
		return "", fmt.Errorf("private key of type %T is not supported", key)
	}
	if typ != "" {
		header["typ"] = typ
	} else {
		header["typ"] = "JWT"
	}
	hb, _ := json.Marshal(header)
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(hb) + "." + enc.EncodeToString(cb)
	digest := sha256.Sum256([]byte(signing))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			return "", err
		}
		// JWS wants r and s as fixed 32-byte big-endian halves, not DER.
		sig = append(pad32(r), pad32(s)...)
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
		if err != nil {
			return "", err
		}
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

func pad32(n *big.Int) []byte {
	b := make([]byte, 32)
	return n.FillBytes(b)
}
