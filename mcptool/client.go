package mcptool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientOptions returns the MCP client's options for the connection to
// server s: the capabilities Options asks for, and their handlers.
func (s *Server) clientOptions(opts *Options) *mcp.ClientOptions {
	co := &mcp.ClientOptions{
		// No roots unless asked for: the default advertises them.
		Capabilities: &mcp.ClientCapabilities{},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if opts != nil && opts.Elicit != nil {
				return opts.Elicit(ctx, s.name, req.Params)
			}
			return elicitDefaults(req.Params), nil
		},
		ToolListChangedHandler: func(ctx context.Context, _ *mcp.ToolListChangedRequest) {
			s.toolsChanged()
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.progress(req.Params)
		},
	}
	co.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	if opts == nil {
		return co
	}
	s.deprecatedCapabilities(co, opts)
	return co
}

// elicitDefaults answers an elicitation request without a user, as
// SEP-1034 allows: a form whose every required field has a default is
// accepted with the defaults of all its fields; anything else is declined.
func elicitDefaults(p *mcp.ElicitParams) *mcp.ElicitResult {
	if p == nil || (p.Mode != "" && p.Mode != "form") {
		return &mcp.ElicitResult{Action: "decline"}
	}
	form, err := Form(p)
	if err != nil {
		return &mcp.ElicitResult{Action: "decline"}
	}
	content := map[string]any{}
	for name, prop := range form.Properties {
		var v any
		if prop != nil && prop.Default != nil && json.Unmarshal(prop.Default, &v) == nil {
			content[name] = v
		}
	}
	for _, name := range form.Required {
		if _, ok := content[name]; !ok {
			return &mcp.ElicitResult{Action: "decline"}
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

// Form returns the form an elicitation request asks for, a flat object
// schema whose properties are its fields, for a program that asks its user.
// The schema arrives as decoded JSON; an error says it is not a JSON Schema.
func Form(p *mcp.ElicitParams) (*jsonschema.Schema, error) {
	if s, ok := p.RequestedSchema.(*jsonschema.Schema); ok {
		return s, nil
	}
	form := new(jsonschema.Schema)
	if p.RequestedSchema == nil {
		return form, nil
	}
	data, err := json.Marshal(p.RequestedSchema)
	if err == nil {
		err = json.Unmarshal(data, form)
	}
	if err != nil {
		return nil, fmt.Errorf("mcptool: the requested schema is not a JSON Schema: %w", err)
	}
	return form, nil
}

// progress reports a progress notification of one of this server's
// calls. One that arrives after its call returned (notifications race the
// result) or names no call of ours is dropped: there is no call left to
// report it for.
func (s *Server) progress(p *mcp.ProgressNotificationParams) {
	if p == nil {
		return
	}
	tool, ok := s.calls.Load(p.ProgressToken)
	if !ok {
		return
	}
	name, _ := tool.(string)
	if s.onProgress != nil {
		s.onProgress(s.name, name, p.Progress, p.Total, p.Message)
		return
	}
	s.logger.Info("mcp progress", "tool", name, "progress", p.Progress, "total", p.Total, "message", p.Message)
}
