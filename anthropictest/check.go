package anthropictest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
)

// A Violation is one way a request breaks a rule of the Messages API.
type Violation struct {
	// Rule names the rule, such as "tool-unanswered" (see CheckRequest).
	Rule string
	// Path locates the offending part in the API's notation, such as
	// "messages.2.content.0".
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error returns "path: message [rule]".
func (v *Violation) Error() string { return v.Path + ": " + v.Msg + " [" + v.Rule + "]" }

// A CheckError lists every Violation of a request, in message order.
type CheckError struct {
	Violations []*Violation
}

// Error lists every violation, one per line.
func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "anthropictest: request breaks the Messages API's rules (%d):", len(e.Violations))
	for _, v := range e.Violations {
		b.WriteString("\n\t")
		b.WriteString(v.Error())
	}
	return b.String()
}

// Unwrap returns the violations, for errors.As.
func (e *CheckError) Unwrap() []error {
	errs := make([]error, len(e.Violations))
	for i, v := range e.Violations {
		errs[i] = v
	}
	return errs
}

// CheckRequest reports whether body, a Messages API request, obeys the
// API's rules. It returns nil if it does and a *CheckError listing every
// violation if not, so a test can assert that what its client sent would
// not come back as a 400.
//
// The request itself must decode ("json"), name a model and a positive
// max_tokens ("required"), and hold messages ("no-messages"). Its messages are held to the same rules that
// package memory keeps its history within: roles ("role", "first-user"),
// content ("empty-content", "empty-text", "trailing-whitespace",
// "block-role"), tool calls ("tool-use-id", "tool-input",
// "tool-unanswered", "tool-result-first", "tool-result-once",
// "tool-result-orphan") and thinking ("thinking-signature").
// Consecutive messages of one role are allowed, because the API merges
// them into one turn; the tool rules apply to the merged turns.
func CheckRequest(body []byte) error {
	var vs []*Violation
	add := func(rule, path, format string, args ...any) {
		vs = append(vs, &Violation{Rule: rule, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	var p Params
	if err := json.Unmarshal(body, &p); err != nil {
		add("json", "body", "does not decode: %v", err)
		return &CheckError{Violations: vs}
	}
	if p.Model == "" {
		add("required", "model", "model is required")
	}
	if p.MaxTokens <= 0 {
		add("required", "max_tokens", "max_tokens must be a positive integer, got %d", p.MaxTokens)
	}
	msgs := make([]apirules.Message, len(p.Messages))
	for i, m := range p.Messages {
		msgs[i] = apirules.Message{Role: m.Role, Content: ruleBlocks(m.Content)}
	}
	for _, v := range apirules.Check(msgs) {
		add(v.Rule, path(p.Messages, v), "%s", v.Msg)
	}
	if len(vs) == 0 {
		return nil
	}
	return &CheckError{Violations: vs}
}

// ruleBlocks converts blocks to the rules' view of them.
func ruleBlocks(bs []Block) []apirules.Block {
	out := make([]apirules.Block, len(bs))
	for i, b := range bs {
		out[i] = apirules.Block{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input,
			ToolUseID: b.ToolUseID, Signature: b.Signature, Data: b.Data}
		if !b.has.input {
			out[i].Input = nil
		}
		if b.Type == "tool_result" && !b.StringContent {
			out[i].Content = ruleBlocks(b.Content)
		}
	}
	return out
}

// path writes v's location in the API's notation.
func path(msgs []Message, v apirules.Violation) string {
	if v.Message < 0 {
		return "messages"
	}
	p := fmt.Sprintf("messages.%d", v.Message)
	switch {
	case v.Block < 0 && v.Field != "":
		return p + "." + v.Field
	case v.Block < 0:
		return p
	case msgs[v.Message].StringContent:
		return p + ".content"
	}
	p += fmt.Sprintf(".content.%d", v.Block)
	if v.Item >= 0 {
		p += fmt.Sprintf(".content.%d", v.Item)
	}
	if v.Field != "" && v.Field != "type" {
		p += "." + v.Field
	}
	return p
}
