package mcptool

import (
	"fmt"
	"os"
	"strings"
)

// defaultEnv returns the variables a server started by this package
// inherits from this process, those of defaultEnvNames that are set: what
// a program needs to find its tools and its home, and nothing that holds a
// secret. The official TypeScript and Python SDKs pass the same ones.
func defaultEnv() []string {
	var env []string
	for _, name := range defaultEnvNames {
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

// CheckEnv reports the first entry of env, a list for [Options.Env], that
// is not NAME=VALUE with a portable name (letters, digits and underscores,
// not starting with a digit). The error shows the name only: a value may
// be a secret.
func CheckEnv(env []string) error {
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(name) {
			return fmt.Errorf("environment entry %q is not NAME=VALUE", name)
		}
	}
	return nil
}

// validEnvName reports whether name is a portable environment variable
// name: letters, digits and underscores, not starting with a digit.
func validEnvName(name string) bool {
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
