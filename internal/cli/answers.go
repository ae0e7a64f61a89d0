package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// This file remembers what the user answered about a repository's files
// that would run commands: .mcp.json (mcpconfig.go) and
// .claude/settings.json (settings.go).

// answerKey is the key of the remembered answer about the file at path
// with content b: the SHA-256 of its absolute path, a NUL and its content,
// so that an answer holds for this version of this file alone.
func answerKey(path string, b []byte) string {
	abs, _ := filepath.Abs(path)
	sum := sha256.Sum256(append([]byte(abs+"\x00"), b...))
	return hex.EncodeToString(sum[:])
}

// readAnswers reads the remembered answers about the repository's files
// that would run commands (.mcp.json, .claude/settings.json): for a file's
// answerKey, whether the user agreed to it. A missing or unreadable file
// is no answers.
func readAnswers(path string) map[string]bool {
	answers := map[string]bool{}
	if path != "" {
		if b, err := os.ReadFile(path); err == nil {
			_ = json.Unmarshal(b, &answers)
		}
	}
	return answers
}

// writeAnswers saves answers at path, readable by the user alone, by a
// rename, so that a crash leaves the old file or the new one.
func writeAnswers(path string, answers map[string]bool) error {
	if path == "" {
		return errors.New("there is no user config directory to keep it in")
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".mcp-json-answers-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
