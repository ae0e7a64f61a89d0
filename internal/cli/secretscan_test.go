package cli

import (
	"strings"
	"testing"
)

// TestSecretScan: a secret is found however the writes split it, in
// either of its forms, and a near miss is not.
func TestSecretScan(t *testing.T) {
	const key = `sk-ant-0123456789"abcdef` // its JSON form escapes the quote
	tests := []struct {
		name   string
		writes []string
		want   bool
	}{
		{"whole in one write", []string{"xx" + key + "yy"}, true},
		{"split across two", []string{"xx" + key[:7], key[7:] + "yy"}, true},
		{"a byte at a time", strings.Split("a"+key+"b", ""), true},
		{"across three, the middle short", []string{"x" + key[:3], key[3:5], key[5:]}, true},
		{"the JSON form", []string{`{"text":"sk-ant-0123456789\"ab`, `cdef"}`}, true},
		{"at the end of a long write, after a short one", []string{"z", strings.Repeat("y", 100) + key}, true},
		{"split after a long write", []string{strings.Repeat("y", 100) + key[:7], key[7:]}, true},
		{"a near miss", []string{key[:len(key)-1], "X" + key[1:]}, false},
		{"none", []string{"nothing here"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := secretScan{found: make([]bool, 2)}
			s.forms = append(s.forms, []byte(key), []byte(`sk-ant-0123456789\"abcdef`), nil, nil) // the second secret is too short
			for _, w := range tt.writes {
				if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if s.found[0] != tt.want || s.found[1] {
				t.Errorf("found = %v, want [%v false]", s.found, tt.want)
			}
		})
	}
}
