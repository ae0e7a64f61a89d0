//lint:file-ignore SA1019 Sampling and roots are deprecated from MCP 2026-07-28 (SEP-2577), but servers of the earlier versions still use them, and the SDK serves them through the deprecation window.

package mcptool

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/llm"
)

// Sampling lets a server ask this client's model for a completion
// (sampling/createMessage), so that a server can use the agent's model
// without keys of its own.
type Sampling struct {
	// Model answers the requests: the agent's own model. Required.
	Model llm.Model
	// ModelName is the model the requests go to. Required.
	ModelName string
	// MaxTokens caps a request's maxTokens. Zero means
	// llm.DefaultMaxTokens.
	MaxTokens int
	// Approve decides each request before it goes to the model; an error
	// declines it, with the error's text as the reason the server gets.
	// Nil approves every request.
	Approve func(ctx context.Context, server string, req *mcp.CreateMessageParams) error
}

// deprecatedCapabilities adds sampling and roots to co, as opts asks.
func (s *Server) deprecatedCapabilities(co *mcp.ClientOptions, opts *Options) {
	if opts.Sampling != nil && opts.Sampling.Model != nil {
		co.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return s.sample(ctx, opts.Sampling, req.Params)
		}
	}
	if len(opts.Roots) > 0 {
		co.Capabilities.RootsV2 = &mcp.RootCapabilities{}
	}
}

// addRoots offers dirs to the server as roots.
func addRoots(c *mcp.Client, dirs []string) error {
	rs, err := roots(dirs)
	if err != nil {
		return err
	}
	c.AddRoots(rs...)
	return nil
}

// roots returns dirs as MCP roots: absolute file URLs.
func roots(dirs []string) ([]*mcp.Root, error) {
	var rs []*mcp.Root
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("root %q: %w", d, err)
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
		rs = append(rs, &mcp.Root{URI: u.String(), Name: filepath.Base(abs)})
	}
	return rs, nil
}

// sample serves a sampling request with the model, once approved.
func (s *Server) sample(ctx context.Context, sm *Sampling, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if sm.Approve != nil {
		if err := sm.Approve(ctx, s.name, p); err != nil {
			return nil, fmt.Errorf("sampling request declined: %w", err)
		}
	}
	req := llm.Request{Model: sm.ModelName, System: p.SystemPrompt}
	if len(p.StopSequences) > 0 {
		req.Extra = map[string]any{"stop_sequences": p.StopSequences}
	}
	req.MaxTokens = int(p.MaxTokens)
	limit := sm.MaxTokens
	if limit == 0 {
		limit = llm.DefaultMaxTokens
	}
	if req.MaxTokens <= 0 || req.MaxTokens > limit {
		req.MaxTokens = limit
	}
	// p.Temperature is not sent: API version 2026-10-21 takes no sampling
	// parameters on any model, and MCP leaves the client free to ignore it.
	for _, m := range p.Messages {
		role := llm.User
		if m.Role == "assistant" {
			role = llm.Assistant
		}
		b := blocks([]mcp.Content{m.Content})
		// Consecutive messages of one role are one API message.
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == role {
			req.Messages[n-1].Content = append(req.Messages[n-1].Content, b...)
			continue
		}
		req.Messages = append(req.Messages, llm.Message{Role: role, Content: b})
	}
	var text strings.Builder
	var stop llm.StopReason
	for ev, err := range sm.Model.Stream(ctx, req) {
		if err != nil {
			return nil, fmt.Errorf("sampling: %w", err)
		}
		switch ev := ev.(type) {
		case llm.TextDelta:
			text.WriteString(ev.Text)
		case llm.MessageDelta:
			stop = ev.StopReason
		}
	}
	reason := string(stop)
	switch stop {
	case "end_turn":
		reason = "endTurn"
	case "max_tokens":
		reason = "maxTokens"
	case "stop_sequence":
		reason = "stopSequence"
	}
	return &mcp.CreateMessageResult{
		Role:       "assistant",
		Model:      sm.ModelName,
		Content:    &mcp.TextContent{Text: text.String()},
		StopReason: reason,
	}, nil
}
