package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A Rule names one structural rule of the Messages API that CheckRequest
// enforces.
type Rule string

// The rules CheckRequest enforces. Each is a rule the real API answers with
// 400 invalid_request_error.
const (
	RuleJSON              Rule = "json"                // the body is a JSON object with well-typed messages
	RuleRequired          Rule = "required"            // model is set and max_tokens is positive
	RuleNoMessages        Rule = "no-messages"         // messages is not empty
	RuleRole              Rule = "role"                // every role is "user" or "assistant"
	RuleFirstUser         Rule = "first-user"          // the first message is from the user
	RuleEmptyContent      Rule = "empty-content"       // only a final assistant message may have empty content
	RuleEmptyText         Rule = "empty-text"          // text blocks hold non-whitespace text, in tool results too
	RuleTrailingSpace     Rule = "trailing-whitespace" // a final assistant message does not end in whitespace
	RuleToolUseID         Rule = "tool-use-id"         // tool_use ids are set, match ^[a-zA-Z0-9_-]+$ and are unique
	RuleToolInput         Rule = "tool-input"          // tool_use input is a JSON object
	RuleToolUnanswered    Rule = "tool-unanswered"     // every tool_use has a tool_result in the next user message
	RuleToolResultFirst   Rule = "tool-result-first"   // tool_results come before any other block of that message
	RuleToolResultOnce    Rule = "tool-result-once"    // no tool_use is answered twice
	RuleToolResultOrphan  Rule = "tool-result-orphan"  // every tool_result answers a tool_use of the previous assistant message
	RuleThinkingSignature Rule = "thinking-signature"  // thinking blocks keep their signature, redacted_thinking its data
)

// A Violation is one way a request breaks a Rule.
type Violation struct {
	Rule Rule
	// Path locates the offending part in the API's notation, such as
	// "messages.2.content.0".
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error returns "path: message [rule]".
func (v *Violation) Error() string { return v.Path + ": " + v.Msg + " [" + string(v.Rule) + "]" }

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

// Rules returns the rule of each violation, in order.
func (e *CheckError) Rules() []Rule {
	rules := make([]Rule, len(e.Violations))
	for i, v := range e.Violations {
		rules[i] = v.Rule
	}
	return rules
}

// CheckRequest reports whether body, a Messages API request, obeys the
// API's structural rules (see Rule). It returns nil if it does and a
// *CheckError listing every violation if not, so a test can assert that
// what its client sent would not come back as a 400.
//
// Consecutive messages with the same role are allowed, because the API
// merges them into one turn; the tool rules apply to the merged turns. So a
// tool_use must be answered at the start of the user turn that follows its
// assistant turn, and a tool_result must answer a tool_use of the assistant
// turn just before.
func CheckRequest(body []byte) error {
	var c checker
	c.check(body)
	if len(c.vs) == 0 {
		return nil
	}
	return &CheckError{Violations: c.vs}
}

type checker struct{ vs []*Violation }

func (c *checker) add(rule Rule, path, format string, args ...any) {
	c.vs = append(c.vs, &Violation{Rule: rule, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// A located block is a block with its path, so merged turns can still point
// at the message the block came from.
type located struct {
	b    *Block
	path string
}

type turn struct {
	role   string
	blocks []located
}

func (c *checker) check(body []byte) {
	var p Params
	if err := json.Unmarshal(body, &p); err != nil {
		c.add(RuleJSON, "body", "does not decode: %v", err)
		return
	}
	if p.Model == "" {
		c.add(RuleRequired, "model", "model is required")
	}
	if p.MaxTokens <= 0 {
		c.add(RuleRequired, "max_tokens", "max_tokens must be a positive integer, got %d", p.MaxTokens)
	}
	msgs := p.Messages
	if len(msgs) == 0 {
		c.add(RuleNoMessages, "messages", "at least one message is required")
		return
	}
	if msgs[0].Role != "user" {
		c.add(RuleFirstUser, "messages.0.role", "the first message must use the \"user\" role, got %q", msgs[0].Role)
	}

	var turns []turn
	toolIDs := map[string]string{} // tool_use id → path of its first use
	for i := range msgs {
		m := &msgs[i]
		mp := fmt.Sprintf("messages.%d", i)
		last := i == len(msgs)-1
		if m.Role != "user" && m.Role != "assistant" {
			c.add(RuleRole, mp+".role", "unexpected role %q: use \"user\" or \"assistant\" (system goes in the top-level system field)", m.Role)
		}
		if len(m.Content) == 0 && !(last && m.Role == "assistant") {
			c.add(RuleEmptyContent, mp+".content", "all messages must have non-empty content except for the optional final assistant message")
		}
		if len(turns) == 0 || turns[len(turns)-1].role != m.Role {
			turns = append(turns, turn{role: m.Role})
		}
		t := &turns[len(turns)-1]
		for j := range m.Content {
			b := &m.Content[j]
			bp := fmt.Sprintf("%s.content.%d", mp, j)
			if m.StringContent {
				bp = mp + ".content"
			}
			t.blocks = append(t.blocks, located{b, bp})
			c.checkBlock(b, bp, m.Role, toolIDs)
		}
		if last && m.Role == "assistant" && len(m.Content) > 0 {
			if b := m.Content[len(m.Content)-1]; b.Type == "text" && b.Text != strings.TrimRight(b.Text, " \t\n\r") {
				c.add(RuleTrailingSpace, mp+".content", "final assistant content cannot end with trailing whitespace")
			}
		}
	}
	c.checkTools(turns)
}

func (c *checker) checkBlock(b *Block, path, role string, toolIDs map[string]string) {
	switch b.Type {
	case "text":
		c.checkText(b.Text, path)
	case "tool_use":
		switch {
		case b.ID == "":
			c.add(RuleToolUseID, path+".id", "tool_use id is required")
		case !validID(b.ID):
			c.add(RuleToolUseID, path+".id", "tool_use id %q must match ^[a-zA-Z0-9_-]+$", b.ID)
		case toolIDs[b.ID] != "":
			c.add(RuleToolUseID, path+".id", "tool_use ids must be unique: %q is also used at %s", b.ID, toolIDs[b.ID])
		default:
			toolIDs[b.ID] = path
		}
		if in := bytes.TrimSpace(b.Input); len(in) == 0 || in[0] != '{' {
			got := string(in)
			if !b.has.input {
				got = "nothing"
			}
			c.add(RuleToolInput, path+".input", "tool_use input must be a JSON object, got %s", got)
		}
	case "tool_result":
		for k := range b.Content {
			if b.Content[k].Type == "text" && !b.StringContent {
				c.checkText(b.Content[k].Text, fmt.Sprintf("%s.content.%d", path, k))
			}
		}
	case "thinking":
		if b.Signature == "" {
			c.add(RuleThinkingSignature, path+".signature", "thinking blocks must keep their signature")
		}
	case "redacted_thinking":
		if b.Data == "" {
			c.add(RuleThinkingSignature, path+".data", "redacted_thinking blocks must keep their data")
		}
	}
}

func (c *checker) checkText(text, path string) {
	switch {
	case text == "":
		c.add(RuleEmptyText, path, "text content blocks must be non-empty")
	case strings.TrimSpace(text) == "":
		c.add(RuleEmptyText, path, "text content blocks must contain non-whitespace text")
	}
}

// checkTools pairs each assistant turn's tool_use blocks with the
// tool_result blocks that open the next user turn.
func (c *checker) checkTools(turns []turn) {
	for t, tn := range turns {
		switch tn.role {
		case "assistant":
			var uses []located
			for _, l := range tn.blocks {
				if l.b.Type == "tool_use" && l.b.ID != "" {
					uses = append(uses, l)
				}
				if l.b.Type == "tool_result" {
					c.add(RuleToolResultOrphan, l.path, "tool_result blocks belong in user messages, not assistant ones")
				}
			}
			if len(uses) == 0 {
				continue
			}
			var next *turn
			if t+1 < len(turns) && turns[t+1].role == "user" {
				next = &turns[t+1]
			}
			count := map[string]int{}
			if next != nil {
				for _, l := range next.blocks {
					if l.b.Type == "tool_result" {
						count[l.b.ToolUseID]++
					}
				}
			}
			for _, u := range uses {
				switch n := count[u.b.ID]; {
				case next == nil:
					c.add(RuleToolUnanswered, u.path, "tool_use %q has no tool_result: no user message follows", u.b.ID)
				case n == 0:
					c.add(RuleToolUnanswered, u.path, "tool_use %q has no tool_result in the next user message", u.b.ID)
				case n > 1:
					c.add(RuleToolResultOnce, u.path, "tool_use %q is answered by %d tool_results; it needs exactly one", u.b.ID, n)
				}
			}
		case "user":
			prev := map[string]bool{}
			if t > 0 && turns[t-1].role == "assistant" {
				for _, l := range turns[t-1].blocks {
					if l.b.Type == "tool_use" {
						prev[l.b.ID] = true
					}
				}
			}
			leading := true
			for _, l := range tn.blocks {
				if l.b.Type != "tool_result" {
					leading = false
					continue
				}
				if !prev[l.b.ToolUseID] {
					c.add(RuleToolResultOrphan, l.path, "tool_result for %q has no matching tool_use in the previous assistant message", l.b.ToolUseID)
				} else if !leading {
					c.add(RuleToolResultFirst, l.path, "tool_result for %q must come before any other block of the user message", l.b.ToolUseID)
				}
			}
		}
	}
}

func validID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
