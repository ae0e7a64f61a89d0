package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindUp(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, "x", "marker")
	if err := os.MkdirAll(want, 0o755); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	if got, ok := findUp("marker"); ok {
		t.Errorf("findUp(marker) = %q from a sibling's subtree, want not found", got)
	}
	if got, ok := findUp(filepath.Join("x", "marker")); !ok || got != want {
		t.Errorf("findUp(x/marker) = %q, %v; want %q, true", got, ok, want)
	}
	if _, ok := findUp("no-such-thing-anywhere-above"); ok {
		t.Error("findUp found a path that does not exist")
	}
}

// TestEverythingServerOnPath checks that the server is found on PATH when
// no .ci/node_modules is above the working directory.
func TestEverythingServerOnPath(t *testing.T) {
	bin := t.TempDir()
	exe := filepath.Join(bin, "mcp-server-everything")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Chdir(t.TempDir())
	if _, ok := findUp(filepath.Join(".ci", "node_modules")); ok {
		t.Skip("a .ci/node_modules is above the temporary directory")
	}
	got := EverythingServer(t)
	if len(got) != 2 || got[0] != exe || got[1] != "stdio" {
		t.Errorf("EverythingServer = %q, want [%s stdio]", got, exe)
	}
}
