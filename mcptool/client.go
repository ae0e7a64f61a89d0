package mcptool

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrDeclined is returned by an Approve or Elicit function for a request
// the user declined.
var ErrDeclined = errors.New("declined by the user")

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
	schema := formSchema(p.RequestedSchema)
	content := map[string]any{}
	for name, prop := range schema.Properties {
		if prop.Default != nil {
			content[name] = prop.Default
		}
	}
	for _, name := range schema.Required {
		if _, ok := content[name]; !ok {
			return &mcp.ElicitResult{Action: "decline"}
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

// A FormSchema is the flat object schema of an elicitation form.
type FormSchema struct {
	Properties map[string]FormField `json:"properties"`
	Required   []string             `json:"required"`
}

// A FormField is one field of an elicitation form: a string, number,
// integer or boolean, or one of Enum.
type FormField struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Default     any    `json:"default"`
	Enum        []any  `json:"enum"`
}

// formSchema reads a requested schema, which arrives as decoded JSON.
func formSchema(v any) FormSchema {
	var fs FormSchema
	m, _ := v.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	fs.Properties = map[string]FormField{}
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		f := FormField{Default: p["default"]}
		f.Type, _ = p["type"].(string)
		f.Title, _ = p["title"].(string)
		f.Description, _ = p["description"].(string)
		f.Enum, _ = p["enum"].([]any)
		fs.Properties[name] = f
	}
	req, _ := m["required"].([]any)
	for _, r := range req {
		if name, ok := r.(string); ok {
			fs.Required = append(fs.Required, name)
		}
	}
	return fs
}

// Form returns the form an elicitation request asks for, for a program
// that asks its user.
func Form(p *mcp.ElicitParams) FormSchema { return formSchema(p.RequestedSchema) }

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
