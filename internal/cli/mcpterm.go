package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/mcptool"
)

// terminal asks the user on behalf of MCP servers: consent to a
// repository's .mcp.json, elicitation forms and sampling requests. One
// question is asked at a time.
type terminal struct {
	in  io.Reader
	out io.Writer
	mu  sync.Mutex
}

// readLine reads one line a byte at a time, so that nothing after it is
// taken from the REPL that reads the same input. ok is false at the end
// of the input.
func (t *terminal) readLine() (string, bool) {
	var b []byte
	one := make([]byte, 1)
	for {
		n, err := t.in.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				return strings.TrimRight(string(b), "\r"), true
			}
			b = append(b, one[0])
		}
		if err != nil {
			return string(b), len(b) > 0
		}
	}
}

// confirm asks a yes/no question; no is the default.
func (t *terminal) confirm(question string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.confirmLocked(question)
}

func (t *terminal) confirmLocked(question string) bool {
	fmt.Fprintf(t.out, "%s [y/N] ", question)
	line, _ := t.readLine()
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// elicit asks the user to fill in a server's form: each field shows its
// default, which an empty answer takes.
func (t *terminal) elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.Mode == "url" {
		fmt.Fprintf(t.out, "\nMCP server %s asks you to open %s: %s\n", server, p.URL, p.Message)
		if t.confirmLocked("Open it?") {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	fmt.Fprintf(t.out, "\nMCP server %s asks: %s\n", server, p.Message)
	form, err := mcptool.Form(p)
	if err != nil {
		fmt.Fprintf(t.out, "  declined: %v\n", err)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if !t.confirmLocked("Answer it? (no declines)") {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	names := make([]string, 0, len(form.Properties))
	for n := range form.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	content := map[string]any{}
	for _, name := range names {
		f := cmp.Or(form.Properties[name], &jsonschema.Schema{})
		var def any
		if f.Default != nil && json.Unmarshal(f.Default, &def) != nil {
			def = nil
		}
		required := slices.Contains(form.Required, name)
		for {
			if ctx.Err() != nil {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			fmt.Fprintf(t.out, "  %s", name)
			if f.Description != "" {
				fmt.Fprintf(t.out, " (%s)", f.Description)
			}
			if len(f.Enum) > 0 {
				fmt.Fprintf(t.out, " one of %v", f.Enum)
			} else if f.Type != "" {
				fmt.Fprintf(t.out, " [%s]", f.Type)
			}
			if def != nil {
				fmt.Fprintf(t.out, " default %s", f.Default)
			}
			fmt.Fprint(t.out, ": ")
			line, ok := t.readLine()
			if !ok {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			line = strings.TrimSpace(line)
			if line == "" {
				if def != nil {
					content[name] = def
					break
				}
				if !required {
					break
				}
				fmt.Fprintln(t.out, "  this field is required")
				continue
			}
			v, err := fieldValue(f, line)
			if err != nil {
				fmt.Fprintf(t.out, "  %v\n", err)
				continue
			}
			content[name] = v
			break
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// fieldValue parses an answer as the field's type.
func fieldValue(f *jsonschema.Schema, s string) (any, error) {
	if len(f.Enum) > 0 {
		for _, e := range f.Enum {
			if fmt.Sprint(e) == s {
				return e, nil
			}
		}
		return nil, fmt.Errorf("want one of %v", f.Enum)
	}
	switch f.Type {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("want yes or no")
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a whole number")
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("want a number")
		}
		return n, nil
	}
	return s, nil
}

// errDeclined is the reason a server gets for a sampling request the user
// declined.
var errDeclined = errors.New("declined by the user")

// approveSampling asks the user whether a server may use the model.
//
//lint:ignore SA1019 sampling is deprecated from MCP 2026-07-28, but servers of the earlier versions still use it.
func (t *terminal) approveSampling(ctx context.Context, server string, p *mcp.CreateMessageParams) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := ""
	if n := len(p.Messages); n > 0 {
		if tc, ok := p.Messages[n-1].Content.(*mcp.TextContent); ok {
			last = tc.Text
		}
	}
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	fmt.Fprintf(t.out, "\nMCP server %s asks to use the model (up to %d tokens): %q\n", server, p.MaxTokens, last)
	if t.confirmLocked("Allow it?") {
		return nil
	}
	return errDeclined
}

// newBrowserCommand returns the command that opens a browser, with only
// env for its environment.
func newBrowserCommand(words, env []string) *exec.Cmd {
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Env = env
	return cmd
}
