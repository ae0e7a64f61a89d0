// Package apirules is the one statement of the Messages API's rules for a
// request's messages: the rules the real API answers with 400
// invalid_request_error. memory keeps its history within them (Validate,
// Repair) and anthropictest rejects requests that break them
// (CheckRequest), so the two cannot disagree.
//
// It imports no other package of the module, and works on its own small
// view of a message, because anthropictest must not import llm: llm's own
// tests use anthropictest.
package apirules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// A Message is what the rules need of a message.
type Message struct {
	Role    string
	Content []Block
}

// A Block is what the rules need of a content block. Fields a block's type
// does not have are zero.
type Block struct {
	Type      string
	Text      string          // text
	ID, Name  string          // tool_use
	Input     json.RawMessage // tool_use; nil when absent
	ToolUseID string          // tool_result
	Signature string          // thinking; redacted_thinking keeps Data
	Data      string          // redacted_thinking
	Content   []Block         // tool_result
}

// The rules, named as violations report them.
const (
	ruleNoMessages        = "no-messages"         // there is at least one message
	ruleRole              = "role"                // every role is user or assistant
	ruleFirstUser         = "first-user"          // the first message is the user's
	ruleEmptyContent      = "empty-content"       // only a final assistant message may be empty
	ruleEmptyText         = "empty-text"          // text blocks hold visible text, in tool results too
	ruleTrailingSpace     = "trailing-whitespace" // a final assistant message does not end in whitespace
	ruleBlockType         = "block-type"          // every block has a type
	ruleBlockRole         = "block-role"          // a block sits in a message of a role that may hold it
	ruleToolUseID         = "tool-use-id"         // tool_use ids match ^[a-zA-Z0-9_-]+$, are unique, and name a tool
	ruleToolInput         = "tool-input"          // tool_use input is a JSON object
	ruleToolUnanswered    = "tool-unanswered"     // every tool_use is answered in the next user turn
	ruleToolResultFirst   = "tool-result-first"   // tool_results open their user turn
	ruleToolResultOnce    = "tool-result-once"    // no tool_use is answered twice
	ruleToolResultOrphan  = "tool-result-orphan"  // every tool_result answers the assistant turn before it
	ruleThinkingSignature = "thinking-signature"  // thinking keeps its signature, redacted_thinking its data
)

// A Violation is one way messages break a rule. Message, Block and Item
// locate it: the message, its content block, and the block inside a
// tool_result; -1 where it is not that precise. Field names the offending
// field, if any.
type Violation struct {
	Rule                 string
	Message, Block, Item int
	Field                string
	Msg                  string
}

// Check returns every violation of the rules in msgs, in message order.
//
// Consecutive messages of one role are allowed, because the API merges them
// into one turn, and the tool rules apply to the merged turns: a tool_use
// is answered at the start of the user turn after its assistant turn. A
// final assistant message is a prefill: it may be empty, but may not end in
// whitespace.
func Check(msgs []Message) []Violation {
	var c checker
	if len(msgs) == 0 {
		c.add(ruleNoMessages, -1, -1, "", "at least one message is required")
		return c.vs
	}
	if msgs[0].Role != "user" {
		c.add(ruleFirstUser, 0, -1, "role", "the first message must be a user message, not %q", msgs[0].Role)
	}
	ids := map[string]int{} // tool_use id → message of its first use
	for i, m := range msgs {
		last := i == len(msgs)-1
		if m.Role != "user" && m.Role != "assistant" {
			c.add(ruleRole, i, -1, "role", "unknown role %q: use user or assistant (system goes in the system field)", m.Role)
		}
		if len(m.Content) == 0 && !(last && m.Role == "assistant") {
			c.add(ruleEmptyContent, i, -1, "content", "empty content: only a final assistant message may be empty")
		}
		for j, b := range m.Content {
			c.block(i, j, m.Role, b, ids)
		}
		if n := len(m.Content); last && m.Role == "assistant" && n > 0 && m.Content[n-1].Type == "text" {
			if t := m.Content[n-1].Text; t != strings.TrimRightFunc(t, unicode.IsSpace) {
				c.add(ruleTrailingSpace, i, n-1, "", "a final assistant message cannot end with whitespace")
			}
		}
	}
	c.pairs(msgs)
	return c.vs
}

type checker struct{ vs []Violation }

func (c *checker) add(rule string, msg, block int, field, format string, args ...any) {
	c.addItem(rule, msg, block, -1, field, format, args...)
}

func (c *checker) addItem(rule string, msg, block, item int, field, format string, args ...any) {
	c.vs = append(c.vs, Violation{Rule: rule, Message: msg, Block: block, Item: item, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// assistantOnly and userOnly are the blocks only one role may hold.
var (
	assistantOnly = map[string]bool{"tool_use": true, "thinking": true, "redacted_thinking": true}
	userOnly      = map[string]bool{"tool_result": true, "image": true, "document": true}
)

func (c *checker) block(i, j int, role string, b Block, ids map[string]int) {
	switch {
	case b.Type == "":
		c.add(ruleBlockType, i, j, "type", "a content block needs a type")
	case !AllowedIn(role, b.Type):
		c.add(ruleBlockRole, i, j, "type", "a %s block cannot be in a %s message", b.Type, role)
	}
	switch b.Type {
	case "text":
		c.text(i, j, -1, b.Text)
	case "tool_use":
		switch first, seen := ids[b.ID]; {
		case !ValidID(b.ID):
			c.add(ruleToolUseID, i, j, "id", "tool_use id %q must match ^[a-zA-Z0-9_-]+$", b.ID)
		case seen:
			c.add(ruleToolUseID, i, j, "id", "tool_use id %q is already used in message %d", b.ID, first)
		case b.Name == "":
			c.add(ruleToolUseID, i, j, "name", "tool_use %q names no tool", b.ID)
		default:
			ids[b.ID] = i
		}
		if !IsObject(b.Input) {
			got := "nothing"
			if b.Input != nil {
				got = fmt.Sprintf("%.40s", bytes.TrimSpace(b.Input))
			}
			c.add(ruleToolInput, i, j, "input", "tool_use input must be a JSON object, got %s", got)
		}
	case "tool_result":
		for k, x := range b.Content {
			if x.Type == "text" {
				c.text(i, j, k, x.Text)
			}
		}
	case "thinking":
		if b.Signature == "" {
			c.add(ruleThinkingSignature, i, j, "signature", "thinking blocks must keep their signature")
		}
	case "redacted_thinking":
		if b.Data == "" {
			c.add(ruleThinkingSignature, i, j, "data", "redacted_thinking blocks must keep their data")
		}
	}
}

// AllowedIn reports whether a message of role may hold a block of type
// typ: tool_use and thinking only the assistant's, tool_result, image and
// document only the user's.
func AllowedIn(role, typ string) bool {
	return !(assistantOnly[typ] && role == "user" || userOnly[typ] && role == "assistant")
}

func (c *checker) text(i, j, k int, text string) {
	if IsBlank(text) {
		c.addItem(ruleEmptyText, i, j, k, "", "text content blocks must contain non-whitespace text")
	}
}

// A turn is a run of consecutive messages of one role, as the API merges
// them.
type turn struct {
	role   string
	blocks []located
}

type located struct {
	b        *Block
	msg, blk int
}

// pairs checks that each assistant turn's tool_use blocks are answered,
// once each, by the tool_result blocks that open the next user turn.
func (c *checker) pairs(msgs []Message) {
	var turns []turn
	for i := range msgs {
		if len(turns) == 0 || turns[len(turns)-1].role != msgs[i].Role {
			turns = append(turns, turn{role: msgs[i].Role})
		}
		t := &turns[len(turns)-1]
		for j := range msgs[i].Content {
			t.blocks = append(t.blocks, located{&msgs[i].Content[j], i, j})
		}
	}
	for t, tn := range turns {
		switch tn.role {
		case "assistant":
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
			for _, u := range tn.blocks {
				if u.b.Type != "tool_use" || u.b.ID == "" {
					continue
				}
				switch n := count[u.b.ID]; {
				case next == nil:
					c.add(ruleToolUnanswered, u.msg, u.blk, "", "tool_use %q has no tool_result: no user message follows", u.b.ID)
				case n == 0:
					c.add(ruleToolUnanswered, u.msg, u.blk, "", "tool_use %q has no tool_result in the next user message", u.b.ID)
				case n > 1:
					c.add(ruleToolResultOnce, u.msg, u.blk, "", "tool_use %q is answered by %d tool_results; it needs exactly one", u.b.ID, n)
				}
			}
		case "user":
			asked := map[string]bool{}
			if t > 0 && turns[t-1].role == "assistant" {
				for _, l := range turns[t-1].blocks {
					if l.b.Type == "tool_use" {
						asked[l.b.ID] = true
					}
				}
			}
			leading := true
			for _, l := range tn.blocks {
				if l.b.Type != "tool_result" {
					leading = false
					continue
				}
				if !asked[l.b.ToolUseID] {
					c.add(ruleToolResultOrphan, l.msg, l.blk, "", "tool_result for %q answers no tool_use of the assistant message before it", l.b.ToolUseID)
				} else if !leading {
					c.add(ruleToolResultFirst, l.msg, l.blk, "", "tool_result for %q must come before any other block of the user message", l.b.ToolUseID)
				}
			}
		}
	}
}

// ValidID reports whether id matches ^[a-zA-Z0-9_-]+$, the API's pattern
// for tool_use ids.
func ValidID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return id != ""
}

// IsObject reports whether in is a JSON object.
func IsObject(in json.RawMessage) bool {
	in = bytes.TrimSpace(in)
	return len(in) > 0 && in[0] == '{' && json.Valid(in)
}

// IsBlank reports whether s has no visible text; the API rejects such text
// blocks.
func IsBlank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) < 0
}
