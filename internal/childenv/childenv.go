// Package childenv says what environment a process started on the user's
// behalf gets: only what a program needs to find its tools and its home,
// never the API keys and credentials this process holds, under names that
// are portable. mcptool starts MCP servers with it; the CLI checks the
// variables a user adds (--mcp-env, a .mcp.json's env) by it before it
// starts anything.
package childenv

import (
	"fmt"
	"os"
	"strings"
)

// Default returns the variables a child inherits from this process: those
// of names that are set. The official TypeScript and Python MCP SDKs pass
// the same ones.
func Default() []string {
	var env []string
	for _, name := range names {
		v, ok := os.LookupEnv(name)
		// A value starting "()" is a bash exported function, which is
		// code, not configuration; the official SDKs skip it too.
		if !ok || strings.HasPrefix(v, "()") {
			continue
		}
		env = append(env, name+"="+v)
	}
	return env
}

// Check reports the first entry of env that is not NAME=VALUE with a
// portable name (letters, digits and underscores, not starting with a
// digit). The error shows the name only: a value may be a secret.
func Check(env []string) error {
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !ValidName(name) {
			return fmt.Errorf("environment entry %q is not NAME=VALUE", name)
		}
	}
	return nil
}

// ValidName reports whether name is a portable environment variable
// name: letters, digits and underscores, not starting with a digit. Check
// holds each entry's name to it; the CLI checks with it the names it is
// given without a value (a bare --mcp-env, a .mcp.json's env keys).
func ValidName(name string) bool {
	if name == "" || '0' <= name[0] && name[0] <= '9' {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
