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
// the server's URL. What it keeps is opaque to it: JSON this package
// writes, holding the token and what refreshing it takes (the client's
// secret among them), and reads back. Its methods may be called from
// several goroutines.
type TokenStore interface {
	// Load returns what Save saved for key, or nil and no error if
	// nothing is.
	Load(key string) ([]byte, error)
	// Save saves data for key, replacing what was there.
	Save(key string, data []byte) error
}

// savedToken is what a TokenStore keeps for a server: a token and what
// refreshing it takes.
type savedToken struct {
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

// loadToken returns the token s keeps for key, or nil if it keeps none.
func loadToken(s TokenStore, key string) (*savedToken, error) {
	data, err := s.Load(key)
	if err != nil || data == nil {
		return nil, err
	}
	var t savedToken
	if err := json.Unmarshal(data, &t); err != nil {
		// The key, not the store's file: the caller authorizes afresh,
		// and saving the new token replaces what could not be read.
		return nil, fmt.Errorf("mcptool: the OAuth token saved for %s cannot be read: %w", key, err)
	}
	if t.Server != key {
		return nil, nil // a store that mixed up its keys, such as a hash collision
	}
	return &t, nil
}

// saveToken saves t in s, for key.
func saveToken(s TokenStore, key string, t savedToken) error {
	t.Server = key
	data, err := json.MarshalIndent(&t, "", "  ")
	if err != nil {
		return err
	}
	return s.Save(key, data)
}

// config returns the OAuth configuration that refreshes t.
func (t *savedToken) config() *oauth2.Config {
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

// Load implements TokenStore.
func (d DirStore) Load(key string) ([]byte, error) {
	b, err := os.ReadFile(d.file(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Save implements TokenStore. It writes a new file and renames it into
// place, so a crash leaves the old token or the new one, never half of
// one.
func (d DirStore) Save(key string, data []byte) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(string(d), ".token-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), d.file(key))
}
