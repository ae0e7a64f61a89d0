package mcptool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"
)

// TestDirStore checks a DirStore's round trip and what it does with files
// it did not write: nothing saved is no token, a file that is not JSON is an
// error naming the server, and a token saved under another key is not
// returned.
func TestDirStore(t *testing.T) {
	dir := DirStore(filepath.Join(t.TempDir(), "tokens"))
	const key = "https://mcp.example.com/mcp"
	if got, err := loadToken(dir, key); got != nil || err != nil {
		t.Fatalf("loadToken before any save = %v, %v; want nil, nil", got, err)
	}
	want := savedToken{ClientID: "c", TokenURL: "https://as.example.com/token", Scopes: []string{"read"},
		Token: &oauth2.Token{AccessToken: "a", RefreshToken: "r"}}
	if err := saveToken(dir, key, want); err != nil {
		t.Fatal(err)
	}
	got, err := loadToken(dir, key)
	want.Server = key
	if err != nil || got == nil {
		t.Fatalf("loadToken = %v, %v", got, err)
	}
	if diff := cmp.Diff(want, *got, cmp.AllowUnexported(oauth2.Token{})); diff != "" {
		t.Errorf("loadToken (-want +got):\n%s", diff)
	}
	if st, err := os.Stat(dir.file(key)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}

	// Another key's data in this key's file: a collision of the file names.
	other, _ := os.ReadFile(dir.file(key))
	if err := os.WriteFile(dir.file("https://other.example.com"), other, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := loadToken(dir, "https://other.example.com"); got != nil || err != nil {
		t.Errorf("loadToken of another server's token = %v, %v; want nil, nil", got, err)
	}

	if err := os.WriteFile(dir.file(key), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	const wantErr = "mcptool: the OAuth token saved for " + key + " cannot be read: "
	if got, err := loadToken(dir, key); got != nil || err == nil || !strings.HasPrefix(err.Error(), wantErr) {
		t.Errorf("loadToken of a corrupt file = %v, %v; want an error starting %q", got, err, wantErr)
	}
}
