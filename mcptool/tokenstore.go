package mcptool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/oauth2"
)

// A TokenStore keeps the OAuth tokens of servers between runs, keyed by
// the server's URL. Its methods may be called from several goroutines.
type TokenStore interface {
	// Load returns the token saved for key, or nil and no error if none
	// is.
	Load(key string) (*SavedToken, error)
	// Save saves t for key, replacing what was there.
	Save(key string, t *SavedToken) error
}

// A SavedToken is a token and what refreshing it takes.
type SavedToken struct {
	// Server is the server's URL, the store's key.
	Server string `json:"server"`
	// ClientID and ClientSecret are the client the token was issued to.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// TokenURL is the token endpoint that refreshes it.
	TokenURL string `json:"token_url"`
	// AuthStyle is how the client authenticates there, an
	// oauth2.AuthStyle.
	AuthStyle int `json:"auth_style,omitempty"`
	// Scopes are the scopes requested.
	Scopes []string `json:"scopes,omitempty"`
	// Token is the token itself: access token, refresh token and expiry.
	Token *oauth2.Token `json:"token"`
}

// config returns the OAuth configuration that refreshes t.
func (t *SavedToken) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     t.ClientID,
		ClientSecret: t.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: t.TokenURL, AuthStyle: oauth2.AuthStyle(t.AuthStyle)},
		Scopes:       t.Scopes,
	}
}

// DirStore is a TokenStore that keeps each server's token in a file of
// its own in the directory, readable by the user alone (mode 0600, in a
// directory of mode 0700). The directory is made when first needed.
type DirStore string

// file returns the file for key: a hash, since a URL is not a file name.
func (d DirStore) file(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(string(d), hex.EncodeToString(sum[:12])+".json")
}

// Load implements TokenStore. A file that cannot be read as a token is an
// error naming the file.
func (d DirStore) Load(key string) (*SavedToken, error) {
	path := d.file(key)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var t SavedToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if t.Server != key {
		return nil, nil // a hash collision, in theory
	}
	return &t, nil
}

// Save implements TokenStore. It writes a new file and renames it into
// place, so a crash leaves the old token or the new one, never half of
// one.
func (d DirStore) Save(key string, t *SavedToken) error {
	rec := *t
	rec.Server = key
	b, err := json.MarshalIndent(&rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(string(d), ".token-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), d.file(key))
}
