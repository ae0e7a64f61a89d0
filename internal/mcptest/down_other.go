//go:build !unix

package mcptest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// DownURL returns the URL of a loopback port where no server listens: the
// port of a server that was closed. (On Unix it stays bound, so that no
// other test can start a server on it.)
func DownURL(tb testing.TB) string {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	return down.URL
}
