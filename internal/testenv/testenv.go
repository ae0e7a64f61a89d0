// Package testenv finds what this module's tests read from outside its
// packages: the shared recorded streams, which are read in place and never
// copied into the repository, and the reference MCP server that .ci/run
// installs. A test that needs one and does not find it skips, saying why
// and how to get it.
//
//	dir := testenv.Fixtures(t) // shared/fixtures/anthropic-sse, or t.Skip
//
// It is internal because it serves only this module's tests.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FindFixtures returns the directory shared/fixtures/anthropic-sse, found by
// walking up from the working directory (a test's is its package's), and
// whether it was found. Benchmarks and fuzz seeds use it to take the
// recordings when they are there and go on without them when not.
func FindFixtures() (string, bool) {
	return findUp(filepath.Join("shared", "fixtures", "anthropic-sse"))
}

// Fixtures is FindFixtures for a test that needs the recordings: it skips
// tb, saying why, when they are absent.
func Fixtures(tb testing.TB) string {
	tb.Helper()
	dir, ok := FindFixtures()
	if !ok {
		tb.Skip("no shared/fixtures/anthropic-sse above the package directory; skipping the recorded-stream test")
	}
	return dir
}

// EverythingServer returns the command and arguments that start the
// reference MCP server @modelcontextprotocol/server-everything over stdio:
// the one .ci/run installs under <repo>/.ci/node_modules, found by walking
// up from the working directory, else mcp-server-everything on PATH. When
// there is neither it skips tb, giving the command that installs it: the
// tests never fetch anything themselves, since they run offline.
func EverythingServer(tb testing.TB) []string {
	tb.Helper()
	bin, ok := findUp(filepath.Join(".ci", "node_modules", ".bin", "mcp-server-everything"))
	if !ok {
		var err error
		bin, err = exec.LookPath("mcp-server-everything")
		ok = err == nil
	}
	if !ok {
		tb.Skip("mcp-server-everything is not installed; from the repository root: " +
			"npm install --prefix .ci @modelcontextprotocol/server-everything@2026.8.31 (the version .ci/run pins; .ci/run installs it too)")
	}
	return []string{bin, "stdio"}
}

// findUp returns the first dir/rel that exists, for dir the working
// directory and each of its parents.
func findUp(rel string) (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
