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
